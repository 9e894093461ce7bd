package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
)

// movableStore is a store behind a proxy whose server can be swapped: for
// a store restored from a backup (the backup served in its place) and a
// store replaced (deleted and made again under its name).
type movableStore struct {
	storeControl
	t      *testing.T
	dir    string
	grant  teamserver.TokenGrant
	token  string
	target atomic.Pointer[url.URL]
	db     string
	name   string
	id     string
	n      atomic.Int64
}

// serve starts the real handler over the SQLite database at db.
func (m *movableStore) serve(db string) *url.URL {
	store, err := sqlite.Open(db)
	require.NoError(m.t, err)
	m.t.Cleanup(func() { store.Close() })
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{m.grant}, RatePerToken: -1})
	require.NoError(m.t, err)
	srv := httptest.NewServer(h)
	m.t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(m.t, err)
	return u
}

func (m *movableStore) Backup(t testing.TB) func() {
	backup := filepath.Join(m.dir, fmt.Sprintf("backup%d.db", m.n.Add(1)))
	out, err := exec.Command("sqlite3", m.db, ".backup "+backup).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return func() { m.target.Store(m.serve(backup)) }
}

func (m *movableStore) Replace(t testing.TB, files map[string][]byte) {
	base := m.target.Load().String()
	code, _, body := storeHTTP(t, "DELETE", base+"/v1/memory_stores/"+m.id, m.token, true, nil)
	require.Equal(t, 200, code, string(body))
	m.id = createStore(t, base, m.token, m.name)
	for p, c := range files {
		m.Write(t, p, c)
	}
}

func createStore(t testing.TB, base, token, name string) string {
	code, _, out := storeHTTP(t, "POST", base+"/v1/memory_stores", token, true, map[string]any{"name": name})
	require.Equal(t, 200, code, string(out))
	var st struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(out, &st))
	return st.ID
}

// TestStoresDriverRestoredAndReplaced runs the engine's tests through the
// Memory Stores driver with a store that can be restored from a backup
// and replaced (Claude Code's route, which names the store by its name).
func TestStoresDriverRestoredAndReplaced(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
			t.Fatal("sqlite3 is not installed")
		}
		t.Skip("sqlite3 is not installed: a backup of the store cannot be taken")
	}
	var n atomic.Int64
	factory := func(t *testing.T) (foldersync.Remote, remotetest.Control) {
		tok, g, err := teamserver.NewToken("acme", []string{"acme/*"}, "*")
		require.NoError(t, err)
		m := &movableStore{t: t, dir: t.TempDir(), grant: g, token: tok, name: fmt.Sprintf("movable-%d", n.Add(1))}
		m.db = filepath.Join(m.dir, "team.db")
		m.target.Store(m.serve(m.db))
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			httputil.NewSingleHostReverseProxy(m.target.Load()).ServeHTTP(w, r)
		}))
		t.Cleanup(proxy.Close)
		m.id = createStore(t, proxy.URL, tok, m.name)
		mk := func() *storesync.Remote {
			r, err := storesync.NewRemote(storesync.Options{BaseURL: proxy.URL, Token: tok, Mount: storesync.Mount{Path: "/v1/code/memory/" + m.name}, Retries: -1})
			require.NoError(t, err)
			return r
		}
		m.storeControl = storeControl{mk()}
		return mk(), m
	}
	remotetest.RunEngine(t, factory)
}
