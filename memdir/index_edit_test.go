package memdir_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/memdir"
)

func savedDir(t *testing.T) (*memdir.Dir, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "mem")
	d, err := memdir.NewDir(afero.NewOsFs(), root, memdir.DirOptions{})
	require.NoError(t, err)
	for _, m := range []memdir.Memory{
		{Name: "Deploys", Description: "when we deploy", Body: "Tuesdays."},
		{Name: "Ports", Description: "which port", Body: "8080."},
		{File: "team/ci.md", Name: "CI", Description: "the pipeline", Body: "GitHub Actions."},
	} {
		_, err := d.Save(context.Background(), m)
		require.NoError(t, err)
	}
	return d, root
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestDeleteRemovesTheFileAndItsPointers(t *testing.T) {
	d, root := savedDir(t)
	require.NoError(t, d.Delete(context.Background(), "deploys.md"))
	assert.NoFileExists(t, filepath.Join(root, "deploys.md"))
	assert.Equal(t, "- [Ports](ports.md) — which port\n", readFile(t, filepath.Join(root, "MEMORY.md")))

	require.NoError(t, d.Delete(context.Background(), "team/ci.md"))
	assert.Equal(t, "", readFile(t, filepath.Join(root, "team", "MEMORY.md")))

	err := d.Delete(context.Background(), "deploys.md")
	assert.ErrorIs(t, err, memdir.ErrMemoryNotFound)
	for _, bad := range []string{"../x.md", "/etc/passwd.md", ".hidden/x.md", "MEMORY.md", "notes.txt", "a/../b.md"} {
		assert.ErrorIs(t, d.Delete(context.Background(), bad), memdir.ErrInvalidMemory, bad)
	}
}

func TestDeleteRefusesALinkOut(t *testing.T) {
	d, root := savedDir(t)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "victim.md"), []byte("keep"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	err := d.Delete(context.Background(), "out/victim.md")
	var pte *memdir.PathTraversalError
	require.True(t, errors.As(err, &pte), "%v", err)
	assert.Equal(t, "keep", readFile(t, filepath.Join(outside, "victim.md")))
}

func TestMoveAndEnsurePointers(t *testing.T) {
	d, root := savedDir(t)
	require.NoError(t, d.MovePointers(context.Background(), "ports.md", "infra/ports.md"))
	assert.Equal(t, "- [Deploys](deploys.md) — when we deploy\n- [Ports](infra/ports.md) — which port\n", readFile(t, filepath.Join(root, "MEMORY.md")))
	// Into team/: the pointer leaves the private index for the team index.
	require.NoError(t, d.MovePointers(context.Background(), "deploys.md", "team/deploys.md"))
	assert.Equal(t, "- [Ports](infra/ports.md) — which port\n", readFile(t, filepath.Join(root, "MEMORY.md")))
	assert.Equal(t, "- [CI](ci.md) — the pipeline\n- [Deploys](deploys.md) — when we deploy\n", readFile(t, filepath.Join(root, "team", "MEMORY.md")))

	require.NoError(t, os.WriteFile(filepath.Join(root, "new.md"), []byte("---\nname: New one\ndescription: a hook\n---\nbody\n"), 0o644))
	added, err := d.EnsurePointer(context.Background(), "new.md")
	require.NoError(t, err)
	assert.True(t, added)
	added, err = d.EnsurePointer(context.Background(), "new.md")
	require.NoError(t, err)
	assert.False(t, added, "once only")
	assert.Contains(t, readFile(t, filepath.Join(root, "MEMORY.md")), "- [New one](new.md) — a hook\n")
	require.NoError(t, os.WriteFile(filepath.Join(root, "bare.md"), []byte("no header\n"), 0o644))
	_, err = d.EnsurePointer(context.Background(), "bare.md")
	require.NoError(t, err)
	assert.Contains(t, readFile(t, filepath.Join(root, "MEMORY.md")), "- [bare](bare.md)\n")
}

func TestIndexEditsWriteOnlyChanges(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mem")
	d, err := memdir.NewDir(afero.NewOsFs(), root, memdir.DirOptions{})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, d.RemovePointers(context.Background(), "nothing.md"))
	assert.NoFileExists(t, filepath.Join(root, "MEMORY.md"), "an edit that leaves no line creates no index")

	_, err = d.Save(context.Background(), memdir.Memory{Name: "Ports", Description: "which port", Body: "8080."})
	require.NoError(t, err)
	index := filepath.Join(root, "MEMORY.md")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(index, old, old))
	require.NoError(t, d.RemovePointers(context.Background(), "other.md"))
	require.NoError(t, d.MovePointers(context.Background(), "other.md", "elsewhere.md"))
	added, err := d.EnsurePointer(context.Background(), "ports.md")
	require.NoError(t, err)
	assert.False(t, added)
	info, err := os.Stat(index)
	require.NoError(t, err)
	assert.True(t, info.ModTime().Equal(old), "an unchanged index is not rewritten")
}
