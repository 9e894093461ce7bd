package prommetrics_test

import (
	"context"
	"github.com/agentmem-sdk/agentmem/memdir"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/prommetrics"
)

func TestMetricsPage(t *testing.T) {
	store := teamserver.NewMemoryStore()
	m := prommetrics.New(store)
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, Metrics: m})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("one"), 0o644))
	c, err := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: token})
	require.NoError(t, err)
	_, err = c.Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)

	page := httptest.NewServer(m.Handler())
	defer page.Close()
	r, err := http.Get(page.URL)
	require.NoError(t, err)
	defer r.Body.Close()
	text, _ := io.ReadAll(r.Body)
	for _, name := range []string{"agentmem_team_repos 1", "agentmem_team_entries 1", "agentmem_team_request_seconds",
		`agentmem_team_store_seconds_count{op="put"} 1`, "go_goroutines"} {
		assert.Contains(t, string(text), name)
	}
}

// teamDirAt is a team directory on its own at dir, for a sync client.
func teamDirAt(fsys afero.Fs, dir string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{Team: true})
	if err != nil {
		panic(err)
	}
	return d
}
