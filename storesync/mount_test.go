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

func TestDecide(t *testing.T) {
	b := basisEntry{ID: "mem_1", SHA256: "s1"}
	same := &localFile{sha: "s1"}
	edited := &localFile{sha: "s2"}
	r1 := remoteMemory{ID: "mem_1", SHA256: "s1"}
	r3 := remoteMemory{ID: "mem_1", SHA256: "s3"}
	none := remoteMemory{}
	for name, c := range map[string]struct {
		inBasis bool
		l       *localFile
		r       remoteMemory
		want    action
	}{
		"equal":                    {true, same, r1, agree},
		"local edit":               {true, edited, r1, push},
		"store edit":               {true, same, r3, pull},
		"both edit":                {true, edited, r3, conflict},
		"local delete":             {true, nil, r1, deleteInStore},
		"store delete":             {true, same, none, deleteLocal},
		"local delete, store edit": {true, nil, r3, pull},
		"store delete, local edit": {true, edited, none, push},
		"gone both":                {true, nil, none, forget},
		"new here":                 {false, edited, none, push},
		"new there":                {false, nil, r3, pull},
		"new both, different":      {false, edited, r3, conflict},
		"new both, same":           {false, &localFile{sha: "s3"}, r3, agree},
	} {
		assert.Equal(t, c.want, decide(b, c.inBasis, c.l, c.r), name)
	}
}
