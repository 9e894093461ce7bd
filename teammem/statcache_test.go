package teammem_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readCounter counts the memory files opened through it.
type readCounter struct {
	afero.Fs
	reads atomic.Int64
}

func (c *readCounter) Open(name string) (afero.File, error) {
	if strings.HasSuffix(name, ".md") {
		c.reads.Add(1)
	}
	return c.Fs.Open(name)
}

func (c *readCounter) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if strings.HasSuffix(name, ".md") && flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		c.reads.Add(1)
	}
	return c.Fs.OpenFile(name, flag, perm)
}

// TestUnchangedSyncReadsNoFile: one Client keeps its engine, and so its
// stat cache, across calls: a second Sync of a folder nobody touched
// reads no file's content, a Pull or Push after it neither, and a file
// changed since is read again (and pushed).
func TestUnchangedSyncReadsNoFile(t *testing.T) {
	e := startServer(t, 0)
	dir := t.TempDir()
	files := map[string]string{"a.md": "alpha", "notes/b.md": "beta", "c.md": "gamma"}
	writeFiles(t, dir, files)
	past := time.Now().Add(-time.Hour) // past the stat cache's racy window
	for k := range files {
		require.NoError(t, os.Chtimes(filepath.Join(dir, filepath.FromSlash(k)), past, past))
	}
	fsys := &readCounter{Fs: afero.NewOsFs()}
	c, err := teammem.New(teamDirAt(fsys, dir), teammem.Options{BaseURL: e.url, Repo: "acme/shop", Token: e.token})
	require.NoError(t, err)
	ctx := context.Background()
	var st teammem.SyncState
	res, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	require.Len(t, res.Pushed, 3)
	require.NotZero(t, fsys.reads.Load(), "the first round reads every file")

	for _, round := range []struct {
		name string
		call func(context.Context, *teammem.SyncState) (foldersync.Result, error)
	}{{"sync", c.Sync}, {"pull", c.Pull}, {"push", c.Push}, {"sync again", c.Sync}} {
		fsys.reads.Store(0)
		r, err := round.call(ctx, &st)
		require.NoError(t, err, round.name)
		assert.True(t, r.Unchanged, round.name)
		assert.Zero(t, fsys.reads.Load(), "%s: an unchanged round reads no file", round.name)
	}

	writeFiles(t, dir, map[string]string{"c.md": "gamma, edited"})
	require.NoError(t, os.Chtimes(filepath.Join(dir, "c.md"), past.Add(time.Minute), past.Add(time.Minute)))
	fsys.reads.Store(0)
	res, err = c.Sync(ctx, &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"c.md"}, res.Pushed)
	assert.Equal(t, int64(2), fsys.reads.Load(), "the changed file alone: read at the walk, and again for its push")
	assert.Equal(t, "gamma, edited", serverEntries(t, e)["c.md"])

	// Another state (a caller that starts again) is honoured: the
	// engine's basis follows it, and the stat cache still spares the
	// reads.
	fsys.reads.Store(0)
	var fresh teammem.SyncState
	res, err = c.Sync(ctx, &fresh)
	require.NoError(t, err)
	assert.Empty(t, res.Pushed)
	assert.Empty(t, res.Pulled)
	assert.Empty(t, res.Conflicts)
	assert.Zero(t, fsys.reads.Load(), "a new state is no reason to read the files again")
	assert.Len(t, fresh.Base, 3, "the new state learns the base")
}
