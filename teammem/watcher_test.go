package teammem_test

import (
	"context"
	"net/http"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentmem/agentmem/teammem"
	"github.com/agentmem/agentmem/teammem/server"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serverEntries(t *testing.T, e syncEnv) map[string]string {
	t.Helper()
	got, err := e.store.Get(context.Background(), server.Repo{Tenant: "acme", Name: "acme/shop"}, true)
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
	noKeepAlive := func(c *teammem.ClientConfig) {
		c.HTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	before := runtime.NumGoroutine()
	// Another client has already pushed: the watcher starts with a pull.
	seed := t.TempDir()
	writeFiles(t, seed, map[string]string{"seed.md": "from the team"})
	_, err := newClient(t, e, seed, noKeepAlive).Push(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)

	dir := filepath.Join(t.TempDir(), "memory", "team") // created by the watcher
	w, err := teammem.StartWatcher(context.Background(), teammem.WatcherConfig{Client: newClient(t, e, dir, noKeepAlive), Debounce: 50 * time.Millisecond})
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
	c, err := teammem.NewClient(teammem.ClientConfig{BaseURL: e.url, Repo: "acme/shop", Token: e.token, Fs: fsys, TeamDir: "/m/team",
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	var syncErrs []error
	w, err := teammem.StartWatcher(context.Background(), teammem.WatcherConfig{Client: c, Debounce: 30 * time.Millisecond, Poll: 10 * time.Millisecond,
		OnSync: func(_ teammem.Result, err error) { syncErrs = append(syncErrs, err) }})
	require.NoError(t, err)
	defer w.Close()

	for _, k := range []string{"a.md", "b.md", "c.md"} {
		require.NoError(t, afero.WriteFile(fsys, "/m/team/"+k, []byte(k), 0o644))
	}
	assert.Eventually(t, func() bool { return w.Suppressed() == teammem.CodeTooManyEntries }, 5*time.Second, 10*time.Millisecond)
	// While suppressed, changes are not pushed.
	require.NoError(t, afero.WriteFile(fsys, "/m/team/d.md", []byte("d"), 0o644))
	time.Sleep(150 * time.Millisecond)
	assert.Nil(t, serverEntries(t, e))

	// Deleting a file lifts the entry-limit suppression; the next push
	// sends the first two keys (the learned limit).
	require.NoError(t, fsys.Remove("/m/team/d.md"))
	require.NoError(t, fsys.Remove("/m/team/c.md"))
	assert.Eventually(t, func() bool { return len(serverEntries(t, e)) == 2 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "", w.Suppressed())
}

func TestWatcherPermanentFailureAtStart(t *testing.T) {
	e := startServer(t, 10)
	c, err := teammem.NewClient(teammem.ClientConfig{BaseURL: e.url, Repo: "acme/shop", Token: "wrong", Fs: afero.NewMemMapFs(), TeamDir: "/t"})
	require.NoError(t, err)
	_, err = teammem.StartWatcher(context.Background(), teammem.WatcherConfig{Client: c, Poll: time.Millisecond})
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassAuth, se.Class)
	_, err = teammem.StartWatcher(context.Background(), teammem.WatcherConfig{})
	assert.Error(t, err)
}
