package filehistory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// lateWriter is a filesystem on which another writer gets in just before
// the first lock the gate takes: it writes race into target then, once.
type lateWriter struct {
	afero.Fs
	once   sync.Once
	target string
	race   []byte
}

func (l *lateWriter) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if strings.HasSuffix(name, ".lock") {
		l.once.Do(func() { _ = afero.WriteFile(l.Fs, l.target, l.race, 0o644) })
	}
	return l.Fs.OpenFile(name, flag, perm)
}

// TestRewindThroughTheDir: a rewind given the memory directory writes
// through its gate: a change that lands after the rewind's check and
// before its write is not overwritten (the check is made again under the
// write's lock), and the rest is put back; a tracked file outside the
// directory is not touched.
func TestRewindThroughTheDir(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	mem, other := filepath.Join(root, "memory"), filepath.Join(root, "elsewhere")
	require.NoError(t, os.MkdirAll(mem, 0o755))
	require.NoError(t, os.MkdirAll(other, 0o755))
	a, b, out := filepath.Join(mem, "a.md"), filepath.Join(mem, "b.md"), filepath.Join(other, "out.md")
	for _, p := range []string{a, b, out} {
		require.NoError(t, os.WriteFile(p, []byte("v1\n"), 0o644))
	}
	tr, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(root, "home"), session, filehistory.Options{})
	require.NoError(t, err)
	require.NoError(t, tr.MakeSnapshot(ctx, "before"))
	for _, p := range []string{a, b, out} {
		require.NoError(t, tr.TrackEdit(ctx, p))
		require.NoError(t, os.WriteFile(p, []byte("v2, the change to undo\n"), 0o644))
	}
	require.NoError(t, tr.MakeSnapshot(ctx, "after"))

	fsys := &lateWriter{Fs: afero.NewOsFs(), target: a, race: []byte("v3, written during the rewind\n")}
	d, err := memdir.NewDir(fsys, mem, memdir.DirOptions{})
	require.NoError(t, err)
	_, err = tr.Rewind(ctx, "before", filehistory.RewindOptions{IfUnchangedSince: "after", Dir: d})
	var changed *filehistory.ChangedSinceError
	require.True(t, errors.As(err, &changed), "%v", err)
	assert.Equal(t, []string{a}, changed.Paths)
	got, _ := os.ReadFile(a)
	assert.Equal(t, "v3, written during the rewind\n", string(got), "the late change stands")
	got, _ = os.ReadFile(b)
	assert.Equal(t, "v1\n", string(got), "the rest is put back")
	got, _ = os.ReadFile(out)
	assert.Equal(t, "v2, the change to undo\n", string(got), "a file outside the directory is not touched")
	var pte *memdir.PathTraversalError
	assert.True(t, errors.As(err, &pte), "the file outside is refused: %v", err)
}
