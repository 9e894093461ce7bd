package sqlite_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
)

// sqliteStores is a Memory Stores server on a SQLite database, run as an
// operator would: its database can be copied while the server is
// stopped and put back (a backup restored), and its store deleted and
// made again under its name (replaced). A driver of its own acts on the
// store as a teammate's client would.
type sqliteStores struct {
	mu    sync.Mutex
	grant teamserver.TokenGrant
	path  string
	store teamserver.Store
	h     *teamserver.Handler
	name  string
	ctl   *storesync.Remote
	// now, when set, is the server's clock.
	now func() time.Time
}

func (s *sqliteStores) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// open serves the database at path.
func (s *sqliteStores) open(t testing.TB, path string) {
	t.Helper()
	store, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{s.grant}, RatePerToken: -1, Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.path, s.store, s.h = path, store, h
	s.mu.Unlock()
	t.Cleanup(func() { _ = store.Close() })
}

// create makes the store under its name.
func (s *sqliteStores) create(t testing.TB) {
	t.Helper()
	if _, err := s.store.CreateMemStore(context.Background(), "acme", teamserver.MemStore{Name: s.name}, teamserver.StoreLimits{}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func (s *sqliteStores) current(t testing.TB, p string) (foldersync.Entry, bool) {
	t.Helper()
	l, err := s.ctl.List(context.Background(), foldersync.Listing{})
	if err != nil {
		t.Fatalf("control: list: %v", err)
	}
	e, ok := l.Entries[p]
	return e, ok
}

func (s *sqliteStores) apply(t testing.TB, ch foldersync.Change) {
	t.Helper()
	outs, err := s.ctl.Apply(context.Background(), []foldersync.Change{ch})
	if err != nil || len(outs) != 1 || outs[0].Status != foldersync.Applied {
		t.Fatalf("control: %s: %v %+v", ch.Path, err, outs)
	}
}

func (s *sqliteStores) Write(t testing.TB, p string, content []byte) {
	e, _ := s.current(t, p)
	s.apply(t, foldersync.Change{Path: p, Content: content, Expect: e})
}

func (s *sqliteStores) Remove(t testing.TB, p string) {
	if e, ok := s.current(t, p); ok {
		s.apply(t, foldersync.Change{Path: p, Delete: true, Expect: e})
	}
}

func (s *sqliteStores) Read(t testing.TB, p string) ([]byte, bool) {
	if _, ok := s.current(t, p); !ok {
		return nil, false
	}
	got, err := s.ctl.Get(context.Background(), []string{p})
	if err != nil {
		t.Fatalf("control: get %s: %v", p, err)
	}
	b, ok := got[p]
	return b, ok
}

// Backup stops the server, copies its database and starts it again; the
// restore puts the copy back in the database's place.
func (s *sqliteStores) Backup(t testing.TB) func() {
	path := s.path
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	backup := fmt.Sprintf("%s.backup%d", path, time.Now().UnixNano())
	copyFile(t, path, backup)
	s.open(t, path)
	return func() {
		if err := s.store.Close(); err != nil {
			t.Fatal(err)
		}
		for _, side := range []string{"-wal", "-shm"} {
			_ = os.Remove(path + side)
		}
		copyFile(t, backup, path)
		s.open(t, path)
	}
}

// Replace deletes the store and makes a new one under its name, holding
// files.
func (s *sqliteStores) Replace(t testing.TB, files map[string][]byte) {
	st, err := s.store.FindMemStore(context.Background(), "acme", s.name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.store.DeleteMemStore(context.Background(), "acme", st.ID); err != nil {
		t.Fatal(err)
	}
	s.create(t)
	for p, c := range files {
		s.Write(t, p, c)
	}
}

// TestStoresDriverRestoredAndReplaced runs the engine's tests through the
// Memory Stores driver with a store that is restored from a backup and
// replaced (Claude Code's route, which names the store by its name), on
// SQLite (backups restored by copying the database file back).
func TestStoresDriverRestoredAndReplaced(t *testing.T) {
	var n atomic.Int64
	factory := func(t *testing.T) (foldersync.Remote, remotetest.Control) {
		token, grant, err := teamserver.NewToken("acme", nil, "*")
		if err != nil {
			t.Fatal(err)
		}
		s := &sqliteStores{grant: grant, name: fmt.Sprintf("movable-%d", n.Add(1))}
		s.open(t, filepath.Join(t.TempDir(), "team.db"))
		s.create(t)
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		mk := func() *storesync.Remote {
			r, err := storesync.NewRemote(storesync.Options{BaseURL: srv.URL, Token: token, Mount: storesync.Mount{Path: storewire.CodeStorePrefix + s.name}, Retries: -1})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		s.ctl = mk()
		return mk(), s
	}
	remotetest.RunEngine(t, factory)
}

// teamStoreServer serves a SQLite database holding the store
// "team-store" over HTTP, on the clock now (nil: the real one); folders
// joins teammates to it.
func teamStoreServer(t *testing.T, now func() time.Time) (*sqliteStores, *storeFolders) {
	token, grant, err := teamserver.NewToken("acme", nil, "*")
	require.NoError(t, err)
	s := &sqliteStores{grant: grant, name: "team-store", now: now}
	s.open(t, filepath.Join(t.TempDir(), "team.db"))
	s.create(t)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	mounts, err := storesync.ParseMounts(`[{"path": "/v1/code/memory/team-store", "mount": "proj"}]`)
	require.NoError(t, err)
	return s, &storeFolders{t: t, url: srv.URL, token: token, mount: mounts[0]}
}

type storeFolders struct {
	t          *testing.T
	url, token string
	mount      storesync.Mount
}

// storeFolder is one teammate's mount folder and its sync client.
type storeFolder struct {
	t   *testing.T
	dir string
	c   *storesync.Client
}

func (f *storeFolders) join() storeFolder {
	t := f.t
	dir := f.mount.Dir(t.TempDir())
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	c, err := storesync.New(d, storesync.Options{BaseURL: f.url, Token: f.token, Mount: f.mount, DeleteMode: foldersync.DeleteImmediate})
	require.NoError(t, err)
	return storeFolder{t, dir, c}
}

func (m storeFolder) write(rel, content string) {
	require.NoError(m.t, os.WriteFile(filepath.Join(m.dir, rel), []byte(content), 0o644))
}

func (m storeFolder) read(rel string) string {
	raw, err := os.ReadFile(filepath.Join(m.dir, rel))
	require.NoError(m.t, err)
	return string(raw)
}

func (m storeFolder) round() foldersync.Result {
	res, err := m.c.Sync(context.Background())
	require.NoError(m.t, err)
	return res
}

// TestStoreSyncSurvivesARestoredStore: a store database restored from a
// backup deletes nothing on a client; what the store lacks is pushed
// back, and a newer local version stays (the store's copy kept aside).
func TestStoreSyncSurvivesARestoredStore(t *testing.T) {
	s, folders := teamStoreServer(t, nil)
	me := folders.join()
	me.round()

	// A backup taken now, a memory written and one edited after it, then
	// the backup put back in the database's place.
	me.write("early.md", "early")
	me.round()
	restore := s.Backup(t)
	me.write("late.md", "late")
	me.write("early.md", "early, edited")
	me.round()
	restore()

	res := me.round()
	assert.True(t, res.BasisReset, "the restored store's generation went back")
	assert.Empty(t, res.DeletedLocal)
	assert.Equal(t, "late", me.read("late.md"))
	assert.Contains(t, res.Pushed, "/late.md")
	assert.Equal(t, "early, edited", me.read("early.md"), "the newer local version stays")
	require.Len(t, res.Conflicts, 1)
	assert.True(t, res.Conflicts[0].LocalKept)
}

// TestStoreSyncNoticesARestoreOthersWrotePast: a store restored from a
// backup, then written past the generation a teammate last saw by
// another teammate, still reads as restored to the first: the store gives
// back a version of a memory written long before the one agreed on.
// Nothing of the first teammate's is lost: the memory written after the
// backup is pushed back, not deleted, and the edit made after it stays
// (the store's older copy kept aside).
func TestStoreSyncNoticesARestoreOthersWrotePast(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixMilli())
	s, folders := teamStoreServer(t, func() time.Time { return time.UnixMilli(clock.Add(1)) })
	ben, ana := folders.join(), folders.join()
	ben.round()
	ana.round()
	ben.write("shared.md", "v1")
	ben.round()
	ana.round()

	restore := s.Backup(t)
	clock.Add(time.Hour.Milliseconds())
	ben.write("shared.md", "v2, after the backup")
	ben.write("new.md", "written after the backup")
	ben.round()
	restore()
	clock.Add(time.Hour.Milliseconds())
	for i := range 3 { // Ana's pushes take the store past Ben's generation
		ana.write(fmt.Sprintf("ana%d.md", i), "from Ana")
		ana.round()
	}

	res := ben.round()
	assert.True(t, res.BasisReset, "the store gave back a version older than the one agreed on")
	assert.Empty(t, res.DeletedLocal)
	assert.Equal(t, "written after the backup", ben.read("new.md"))
	assert.Contains(t, res.Pushed, "/new.md")
	assert.Equal(t, "v2, after the backup", ben.read("shared.md"))
	ben.round()
	ana.round()
	assert.Equal(t, "v2, after the backup", ana.read("shared.md"))
	assert.Equal(t, "written after the backup", ana.read("new.md"))
	assert.Equal(t, "from Ana", ben.read("ana2.md"))
}
