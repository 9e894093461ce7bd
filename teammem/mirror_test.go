package teammem_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem"
)

// A team directory the client synced continues under the engine from
// the client's base: nothing is pulled back, pushed again or kept aside,
// a deletion made since propagates, and the client's next run continues
// from what the engine agreed on.
func TestStateMirrorHandsTheBaseOver(t *testing.T) {
	ctx := context.Background()
	e := startServer(t, 0)
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	writeFiles(t, dir, map[string]string{"a.md": "alpha", "b.md": "bee", "c.md": "sea"})
	c := newClient(t, e, dir, func(o *teammem.Options) { o.StateFile = state })
	_, err := c.Sync(ctx, &teammem.SyncState{})
	require.NoError(t, err)

	// Since the client's last run: a.md deleted here, c.md edited here.
	require.NoError(t, os.Remove(filepath.Join(dir, "a.md")))
	writeFiles(t, dir, map[string]string{"c.md": "sea, edited"})

	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	eng, err := foldersync.New(d, dir, c.Remote(), foldersync.Options{Mirror: c.StateMirror(), BasisPath: filepath.Join(dir, ".basis")})
	require.NoError(t, err)
	res, err := eng.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md"}, res.DeletedRemote, "the base says a.md was agreed: its removal here is a deletion")
	assert.Equal(t, []string{"c.md"}, res.Pushed)
	assert.Empty(t, res.Pulled)
	assert.Empty(t, res.Conflicts)
	assert.False(t, res.BasisReset)
	assert.Equal(t, map[string]string{"b.md": "bee", "c.md": "sea, edited"}, serverEntries(t, e))

	// The client takes over again from the engine's base.
	writeFiles(t, dir, map[string]string{"d.md": "dee"})
	require.NoError(t, os.Remove(filepath.Join(dir, "b.md")))
	var st teammem.SyncState
	out, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"d.md"}, out.Pushed)
	assert.Equal(t, []string{"b.md"}, out.DeletedRemote)
	assert.Empty(t, out.Pulled)
	assert.Empty(t, out.Conflicts)
	assert.Empty(t, st.Reset)
	assert.Equal(t, map[string]string{"c.md": "sea, edited", "d.md": "dee"}, serverEntries(t, e))
}
