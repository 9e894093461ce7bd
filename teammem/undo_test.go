package teammem_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/racefs"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/agentmem-sdk/agentmem/teammem"
)

// TestPullUndoRestoresWhatThePullReplaced: a teammate's write that lands
// while a pull records its checkpoint is either replaced by the pull (and
// is what a rewind puts back) or comes after it; a rewind never puts back
// a version the pull did not replace.
func TestPullUndoRestoresWhatThePullReplaced(t *testing.T) {
	ctx := context.Background()
	e := startServer(t, 100)
	a, b := t.TempDir(), t.TempDir()
	target := filepath.Join(b, "ci.md")
	rfs := racefs.New(afero.NewOsFs(), target, func() error {
		_, err := teamDirAt(afero.NewOsFs(), b).Gate().WriteFile(context.Background(), target, []byte("a local edit\n"), 0o644)
		return err
	})
	history, err := filehistory.NewTracker(rfs, filepath.Join(t.TempDir(), "config"), "team-pull", filehistory.Options{})
	require.NoError(t, err)
	ca := newClient(t, e, a, nil)
	cb := newClient(t, e, b, nil)
	var sa, sb teammem.SyncState
	writeFiles(t, a, map[string]string{"ci.md": "CI stays green\n"})
	_, err = ca.Push(ctx, &sa)
	require.NoError(t, err)
	_, err = cb.Pull(ctx, &sb)
	require.NoError(t, err)

	writeFiles(t, a, map[string]string{"ci.md": "CI may be red on Fridays\n"})
	_, err = ca.Push(ctx, &sa)
	require.NoError(t, err)
	cb = newClient(t, e, b, func(c *teammem.Options) { c.History = history })
	res, err := cb.Pull(ctx, &sb)
	require.NoError(t, err)
	require.NotEmpty(t, res.Checkpoint)
	require.True(t, rfs.Ran(), "the concurrent write ran")
	require.NoError(t, rfs.Wait())

	replaced := "CI stays green\n"
	if readFile(t, target) != "a local edit\n" {
		replaced = "a local edit\n" // it landed first: the pull replaced it
	}
	_, err = history.Rewind(ctx, res.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, replaced, readFile(t, target), "the rewind puts back exactly what the pull replaced")
}

// TestClientUsesTheTeamDirsScanner: the client checks what it pushes with
// the team directory's own scanner: the default one holds back a file
// with a credential, one that knows no rule lets it go.
func TestClientUsesTheTeamDirsScanner(t *testing.T) {
	ctx := context.Background()
	e := startServer(t, 100)
	token := "ghp_" + strings.Repeat("a1B2", 9)
	for _, lax := range []bool{false, true} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"ci.md": "the deploy key is " + token + "\n"})
		opts := memdir.DirOptions{Team: true}
		if lax {
			opts.Scanner = &secrets.Scanner{}
		}
		team, err := memdir.NewDir(afero.NewOsFs(), dir, opts)
		require.NoError(t, err)
		c, err := teammem.New(team, teammem.Options{BaseURL: e.url, Repo: "acme/lax" + fmt.Sprint(lax), Token: e.token})
		require.NoError(t, err)
		res, err := c.Push(ctx, &teammem.SyncState{})
		if lax {
			if err == nil {
				assert.NotContains(t, fmt.Sprint(res.Skipped), "secret", "the team directory's scanner knows no rule")
			}
			continue
		}
		require.NoError(t, err)
		assert.Contains(t, fmt.Sprint(res.Skipped), "secret", "the default scanner holds the file back")
	}
}
