package storesync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMounts(t *testing.T) {
	got, err := ParseMounts(`["/v1/code/memory/team-store", {"path":"/v1/code/memory/grouping/abc","mode":"ro","mount":"org","promptIndex":"MEMORY.md"}, {"path":"/v1/code/memory/me","scope":"user"}]`)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, Mount{Path: "/v1/code/memory/team-store", Mode: "rw", Scope: "team", Name: "team-store"}, got[0])
	assert.True(t, got[1].ReadOnly())
	assert.Equal(t, "/auto/team/org", got[1].Dir("/auto"))
	assert.Equal(t, "/auto", got[2].Dir("/auto/"))
	for _, bad := range []string{
		`not json`,
		`["relative/path"]`,
		`["https://host/v1/x"]`,
		`[{"path":"/a","mode":"rx"}]`,
		`[{"path":"/a","scope":"org"}]`,
		`[{"path":"/a","mount":"has space"}]`,
		`[{"path":"/a","promptIndex":"../MEMORY.md"}]`,
		`["/x/a", "/y/a"]`,
		`[{"path":"/a","scope":"user"},{"path":"/b","scope":"user"}]`,
		`[{"path":"/a","unknown":1}]`,
	} {
		_, err := ParseMounts(bad)
		assert.Error(t, err, bad)
	}
}

func TestSyncableFiles(t *testing.T) {
	team := Mount{Scope: "team"}
	user := Mount{Scope: "user"}
	for rel, want := range map[string]bool{"a.md": true, "n/b.txt": true, "c.json": true, "d.jsonl": true, "e.png": false,
		".x.md": false, "n/.y.md": false, ".d/z.md": false} {
		assert.Equal(t, want, team.syncable(rel), rel)
	}
	for rel, want := range map[string]bool{"a.md": true, "team/x.md": false, "logs/2026/12/01.md": false, "sessions/s.md": false,
		"proposals/p.md": false, "notes/team.md": true, "team.md": true} {
		assert.Equal(t, want, user.syncable(rel), rel)
	}
}
