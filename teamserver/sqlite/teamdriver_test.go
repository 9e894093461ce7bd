package sqlite_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
)

// sqliteTeam is a team server on a SQLite database, run as an operator
// would: its database can be copied while the server is stopped, put
// back (a backup restored), or replaced by a new one.
type sqliteTeam struct {
	mu    sync.Mutex
	grant teamserver.TokenGrant
	path  string
	store teamserver.Store
	h     *teamserver.Handler
}

var shop = teamserver.Repo{Tenant: "acme", Name: "acme/shop"}

func (s *sqliteTeam) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// open serves the database at path.
func (s *sqliteTeam) open(t testing.TB, path string) {
	t.Helper()
	store, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{s.grant}})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	old := s.store
	s.path, s.store, s.h = path, store, h
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	t.Cleanup(func() { _ = store.Close() })
}

func (s *sqliteTeam) put(t testing.TB, req teamserver.PutRequest) {
	t.Helper()
	req.Author, req.Now = "teammate", time.Now()
	if _, err := s.store.Put(context.Background(), shop, req); err != nil {
		t.Fatalf("control: %v", err)
	}
}

func (s *sqliteTeam) Write(t testing.TB, path string, content []byte) {
	s.put(t, teamserver.PutRequest{Entries: map[string]string{path: string(content)}})
}

func (s *sqliteTeam) Remove(t testing.TB, path string) {
	s.put(t, teamserver.PutRequest{Deletes: []string{path}})
}

func (s *sqliteTeam) Read(t testing.TB, path string) ([]byte, bool) {
	snap, err := s.store.Get(context.Background(), shop, true)
	if err != nil {
		return nil, false
	}
	c, ok := snap.Entries[path]
	return []byte(c), ok
}

// Backup stops the server, copies its database and starts it again; the
// restore puts the copy back in the database's place.
func (s *sqliteTeam) Backup(t testing.TB) func() {
	path := s.path
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	backup := path + ".backup"
	copyFile(t, path, backup)
	s.store = nil
	s.open(t, path)
	return func() {
		if err := s.store.Close(); err != nil {
			t.Fatal(err)
		}
		s.store = nil
		for _, side := range []string{"-wal", "-shm"} {
			_ = os.Remove(path + side)
		}
		copyFile(t, backup, path)
		s.open(t, path)
	}
}

// Replace serves a new database holding files.
func (s *sqliteTeam) Replace(t testing.TB, files map[string][]byte) {
	s.open(t, filepath.Join(t.TempDir(), "new.db"))
	entries := map[string]string{}
	for p, b := range files {
		entries[p] = string(b)
	}
	s.put(t, teamserver.PutRequest{Entries: entries})
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func sqliteTeamRemote(t *testing.T) (foldersync.Remote, remotetest.Control) {
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	if err != nil {
		t.Fatal(err)
	}
	s := &sqliteTeam{grant: grant}
	s.open(t, filepath.Join(t.TempDir(), "team.db"))
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	r, err := teammem.NewRemote(teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return r, s
}

// The team driver keeps the Remote contract, and the engine's rules hold
// through it, on a team server whose store is SQLite (backups restored
// by copying the database file back).
func TestTeamDriverOnSQLite(t *testing.T) {
	t.Run("Remote", func(t *testing.T) { remotetest.Run(t, sqliteTeamRemote) })
	t.Run("Engine", func(t *testing.T) { remotetest.RunEngine(t, sqliteTeamRemote) })
}
