package teammem_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// Each pushed file goes with the door, session and origin of the write
// that left it; a file written by anything else, and a deletion, go with
// the client's own.
func TestPushSendsEachFilesProvenance(t *testing.T) {
	ctx := context.Background()
	store := teamserver.NewMemoryStore()
	tok, g, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	g.Name = "bot"
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{g}, RatePerToken: -1})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "team")
	c := newClient(t, syncEnv{url: srv.URL, token: tok}, dir, func(o *teammem.Options) { o.Session = "watcher" })
	var st teammem.SyncState
	writeFiles(t, dir, map[string]string{"old.md": "to be deleted"})
	_, err = c.Sync(ctx, &st)
	require.NoError(t, err)

	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{Team: true})
	require.NoError(t, err)
	dream := d.WithProvenance(memdir.Provenance{Door: teamwire.DoorConsolidation, Session: "s-1", Origin: teamwire.OriginFetched})
	_, err = dream.Gate().WriteFile(ctx, filepath.Join(dir, "a.md"), []byte("from a consolidation"), 0o644)
	require.NoError(t, err)
	_, err = d.WithDoor(teamwire.DoorMCP).Gate().WriteFile(ctx, filepath.Join(dir, "b.md"), []byte("from mcp"), 0o644)
	require.NoError(t, err)
	_, err = d.WithDoor(teamwire.DoorMCP).Gate().WriteFile(ctx, filepath.Join(dir, "edited.md"), []byte("from mcp"), 0o644)
	require.NoError(t, err)
	writeFiles(t, dir, map[string]string{"c.md": "by hand", "edited.md": "edited by hand since"})
	require.NoError(t, os.Remove(filepath.Join(dir, "old.md")))
	res, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a.md", "b.md", "c.md", "edited.md"}, res.Pushed)
	assert.Equal(t, []string{"old.md"}, res.DeletedRemote)

	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	for key, want := range map[string]teamwire.Provenance{
		"a.md":      {Door: teamwire.DoorConsolidation, Session: "s-1", Origin: teamwire.OriginFetched},
		"b.md":      {Door: teamwire.DoorMCP, Session: "watcher"},
		"c.md":      {Door: teamwire.DoorSync, Session: "watcher"},
		"edited.md": {Door: teamwire.DoorSync, Session: "watcher"},
		"old.md":    {Door: teamwire.DoorSync, Session: "watcher"},
	} {
		hist, err := store.History(ctx, repo, key, 1)
		require.NoError(t, err)
		require.NotEmpty(t, hist, key)
		assert.Equal(t, want, hist[0].Provenance, key)
	}
}
