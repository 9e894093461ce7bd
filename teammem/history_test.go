package teammem_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/teammem"
)

// TestPullCheckpointUndoesAPull: with Options.History a pull that
// changes files takes a checkpoint; rewinding it restores the edited file
// and removes the new one. A pull that changes nothing takes none.
func TestPullCheckpointUndoesAPull(t *testing.T) {
	ctx := context.Background()
	e := startServer(t, 100)
	a, b := t.TempDir(), t.TempDir()
	history, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(t.TempDir(), "config"), "team-pull", filehistory.Options{})
	require.NoError(t, err)
	ca := newClient(t, e, a, nil)
	cb := newClient(t, e, b, func(c *teammem.Options) { c.History = history })
	var sa, sb teammem.SyncState

	writeFiles(t, a, map[string]string{"ci.md": "CI stays green\n"})
	_, err = ca.Push(ctx, &sa)
	require.NoError(t, err)
	res, err := cb.Pull(ctx, &sb)
	require.NoError(t, err)
	require.NotEmpty(t, res.Checkpoint)

	writeFiles(t, a, map[string]string{"ci.md": "CI may be red on Fridays\n", "deploy.md": "deploy any time\n"})
	_, err = ca.Push(ctx, &sa)
	require.NoError(t, err)
	res, err = cb.Pull(ctx, &sb)
	require.NoError(t, err)
	require.NotEmpty(t, res.Checkpoint)
	assert.ElementsMatch(t, []string{"ci.md", "deploy.md"}, res.Pulled)

	_, err = history.Rewind(ctx, res.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, "CI stays green\n", readFile(t, filepath.Join(b, "ci.md")))
	_, err = os.Stat(filepath.Join(b, "deploy.md"))
	assert.True(t, os.IsNotExist(err))

	before := len(history.Snapshots())
	res, err = cb.Pull(ctx, &sb)
	require.NoError(t, err)
	assert.Empty(t, res.Checkpoint)
	assert.Len(t, history.Snapshots(), before, "a pull that writes nothing takes no checkpoint")
}
