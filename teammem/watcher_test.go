package teammem_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serverEntries(t *testing.T, e syncEnv) map[string]string {
	t.Helper()
	got, err := e.store.Get(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	if err != nil {
		return nil
	}
	return got.Entries
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	for i := 0; i < 300 && runtime.NumGoroutine() > want; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), want, "no goroutine outlives Close")
}

func TestWatcherFsnotify(t *testing.T) {
	e := startServer(t, 100)
	noKeepAlive := func(c *teammem.Options) {
		c.HTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	before := runtime.NumGoroutine()
	// Another client has already pushed: the watcher starts with a pull.
	seed := t.TempDir()
	writeFiles(t, seed, map[string]string{"seed.md": "from the team"})
	_, err := newClient(t, e, seed, noKeepAlive).Push(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)

	dir := filepath.Join(t.TempDir(), "memory", "team") // created by the watcher
	w, err := newClient(t, e, dir, noKeepAlive).StartWatcher(context.Background(), foldersync.WatchOptions{Debounce: 50 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, "from the team", readFile(t, filepath.Join(dir, "seed.md")))

	writeFiles(t, dir, map[string]string{"notes/new.md": "written by the agent"})
	assert.Eventually(t, func() bool { return serverEntries(t, e)["notes/new.md"] == "written by the agent" }, 5*time.Second, 20*time.Millisecond)

	// A change right before Close is flushed by Close.
	writeFiles(t, dir, map[string]string{"last.md": "just in time"})
	w.Notify()
	require.NoError(t, w.Close())
	require.NoError(t, w.Close())
	assert.Equal(t, "just in time", serverEntries(t, e)["last.md"])
	waitGoroutines(t, before)
}

func TestWatcherPollingAndSuppression(t *testing.T) {
	e := startServer(t, 2)
	fsys := afero.NewMemMapFs()
	c, err := teammem.New(teamDirAt(fsys, "/m/team"), teammem.Options{BaseURL: e.url, Repo: "acme/shop", Token: e.token, Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	var syncErrs []error
	w, err := c.StartWatcher(context.Background(), foldersync.WatchOptions{Debounce: 30 * time.Millisecond, Poll: 10 * time.Millisecond, Wake: noWake, Observer: func(ev foldersync.Event) { syncErrs = append(syncErrs, ev.Err) }})
	require.NoError(t, err)
	defer w.Close()

	for _, k := range []string{"a.md", "b.md", "c.md"} {
		require.NoError(t, afero.WriteFile(fsys, "/m/team/"+k, []byte(k), 0o644))
	}
	assert.Eventually(t, func() bool { return w.Paused() == teamwire.CodeTooManyEntries }, 5*time.Second, 10*time.Millisecond)
	// While suppressed, changes are not pushed.
	require.NoError(t, afero.WriteFile(fsys, "/m/team/d.md", []byte("d"), 0o644))
	time.Sleep(150 * time.Millisecond)
	assert.Nil(t, serverEntries(t, e))

	// Deleting a file lifts the entry-limit suppression; the next push
	// sends the first two keys (the learned limit).
	require.NoError(t, fsys.Remove("/m/team/d.md"))
	require.NoError(t, fsys.Remove("/m/team/c.md"))
	assert.Eventually(t, func() bool { return len(serverEntries(t, e)) == 2 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "", w.Paused())
}

func TestWatcherPermanentFailureAtStart(t *testing.T) {
	e := startServer(t, 10)
	c, err := teammem.New(teamDirAt(afero.NewMemMapFs(), "/t"), teammem.Options{BaseURL: e.url, Repo: "acme/shop", Token: "wrong"})
	require.NoError(t, err)
	w, err := c.StartWatcher(context.Background(), foldersync.WatchOptions{Poll: time.Millisecond})
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassAuth, se.Class)
	assert.Nil(t, w, "a permanent failure of the first round starts no watcher")
}

// noWake is a Wake that never wakes the watcher: only its interval
// brings the server's changes in.
func noWake(context.Context, func()) error { return nil }

// TestWatcherBringsInTeammatesChanges: with no local change at all, a
// teammate's write (another client, through the real HTTP server)
// reaches the watched directory, through the interval and through the
// server's long-poll, and the watcher's Observer gets the engine's
// Event for the round that pulled it.
func TestWatcherBringsInTeammatesChanges(t *testing.T) {
	for name, cfg := range map[string]foldersync.WatchOptions{
		"interval":  {Interval: 100 * time.Millisecond, Wake: noWake},
		"long-poll": {Interval: time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			e := startServer(t, 100)
			mate := t.TempDir()
			cm := newClient(t, e, mate, nil)
			var sm teammem.SyncState
			writeFiles(t, mate, map[string]string{"first.md": "1"})
			_, err := cm.Sync(context.Background(), &sm)
			require.NoError(t, err)

			dir := filepath.Join(t.TempDir(), "memory", "team")
			cfg.Debounce = 50 * time.Millisecond
			events := make(chan foldersync.Event, 100)
			cfg.Observer = func(ev foldersync.Event) { events <- ev }
			w, err := newClient(t, e, dir, nil).StartWatcher(context.Background(), cfg)
			require.NoError(t, err)
			defer w.Close()
			time.Sleep(300 * time.Millisecond) // the long-poll is waiting now

			writeFiles(t, mate, map[string]string{"second.md": "2", "first.md": "1, edited"})
			_, err = cm.Sync(context.Background(), &sm)
			require.NoError(t, err)
			assert.Eventually(t, func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "second.md"))
				return err == nil && string(b) == "2"
			}, 5*time.Second, 20*time.Millisecond)
			assert.Eventually(t, func() bool { return readFile(t, filepath.Join(dir, "first.md")) == "1, edited" }, 5*time.Second, 20*time.Millisecond)
			wantCause := map[string]string{"interval": "interval", "long-poll": "notify"}[name]
			var pulled []string
			for len(pulled) < 2 {
				select {
				case ev := <-events:
					require.NoError(t, ev.Err)
					if ev.Cause != "start" && len(ev.Result.Pulled) > 0 {
						assert.Equal(t, wantCause, ev.Cause, "what started the round")
					}
					pulled = append(pulled, ev.Result.Pulled...)
				case <-time.After(5 * time.Second):
					t.Fatalf("no Event for the pull; got %v", pulled)
				}
			}
			assert.ElementsMatch(t, []string{"first.md", "second.md"}, pulled[len(pulled)-2:])

			// A teammate's deletion arrives too.
			require.NoError(t, os.Remove(filepath.Join(mate, "second.md")))
			_, err = cm.Sync(context.Background(), &sm)
			require.NoError(t, err)
			assert.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join(dir, "second.md"))
				return os.IsNotExist(err)
			}, 5*time.Second, 20*time.Millisecond)
		})
	}
}

// TestWatcherRetriesUntilTheChangeLands: a change made while the server
// is down is pushed when it comes back, with no further local change.
func TestWatcherRetriesUntilTheChangeLands(t *testing.T) {
	e := startServer(t, 100)
	var down atomic.Bool
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		u, _ := url.Parse(e.url)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	defer gate.Close()
	dir := filepath.Join(t.TempDir(), "memory", "team")
	c := newClient(t, syncEnv{url: gate.URL, token: e.token, store: e.store}, dir, func(cfg *teammem.Options) {
		cfg.Sleep = func(context.Context, time.Duration) error { return nil }
		cfg.BaseDelay, cfg.MaxDelay = 10*time.Millisecond, 50*time.Millisecond
	})
	var failures atomic.Int32
	w, err := c.StartWatcher(context.Background(), foldersync.WatchOptions{Debounce: 20 * time.Millisecond, Interval: time.Hour, Wake: noWake, Observer: func(ev foldersync.Event) {
		if ev.Err != nil {
			failures.Add(1)
		}
	}})
	require.NoError(t, err)
	defer w.Close()
	down.Store(true)
	writeFiles(t, dir, map[string]string{"outage.md": "written during the outage"})
	assert.Eventually(t, func() bool { return failures.Load() >= 2 }, 5*time.Second, 10*time.Millisecond, "the watcher keeps trying")
	down.Store(false)
	assert.Eventually(t, func() bool { return serverEntries(t, e)["outage.md"] == "written during the outage" }, 5*time.Second, 20*time.Millisecond)
}

func TestWatcherStopsWithItsContext(t *testing.T) {
	e := startServer(t, 0)
	dir := filepath.Join(t.TempDir(), "memory", "team")
	c := newClient(t, e, dir, nil)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.StartWatcher(ctx, foldersync.WatchOptions{Debounce: time.Hour, Interval: time.Hour, Wake: noWake})
	require.NoError(t, err)
	writeFiles(t, dir, map[string]string{"pending.md": "written just before the host stopped"})
	w.Notify() // pending, but the debounce is an hour away
	cancel()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not stop with its context")
	}
	assert.Equal(t, "written just before the host stopped", serverEntries(t, e)["pending.md"], "it flushed pending changes on the way out")
	require.NoError(t, w.Close(), "Close after the context ended is fine")
}
