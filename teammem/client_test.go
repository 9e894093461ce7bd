package teammem_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/teammem"
	"github.com/agentmem/agentmem/teammem/server"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type syncEnv struct {
	url   string
	token string
	store *server.MemoryStore
}

func startServer(t *testing.T, maxEntries int) syncEnv {
	t.Helper()
	token, grant, err := server.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	store := server.NewMemoryStore()
	h, err := server.NewHandler(server.Config{Store: store, Tokens: []server.TokenGrant{grant}, MaxEntries: maxEntries})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return syncEnv{url: srv.URL, token: token, store: store}
}

func newClient(t *testing.T, e syncEnv, dir string, mutate func(*teammem.ClientConfig)) *teammem.Client {
	t.Helper()
	cfg := teammem.ClientConfig{BaseURL: e.url, Repo: "acme/shop", Token: e.token, Fs: afero.NewOsFs(), TeamDir: dir,
		Sleep: func(context.Context, time.Duration) error { return nil }}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := teammem.NewClient(cfg)
	require.NoError(t, err)
	return c
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for k, v := range files {
		p := filepath.Join(dir, filepath.FromSlash(k))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(v), 0o644))
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestPushPullDelta(t *testing.T) {
	e := startServer(t, 100)
	a := t.TempDir()
	writeFiles(t, a, map[string]string{"ci.md": "CI stays green", "notes/db.md": "real DB", ".hidden.md": "no", "image.png": "no", ".git/x.md": "no"})
	ca := newClient(t, e, a, nil)
	var sa teammem.SyncState
	res, err := ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, []string{"ci.md", "notes/db.md"}, res.Uploaded)
	assert.Equal(t, 1, res.Requests)

	// Pull into an empty directory.
	b := t.TempDir()
	cb := newClient(t, e, b, nil)
	var sb teammem.SyncState
	res, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, []string{"ci.md", "notes/db.md"}, res.Written)
	assert.Equal(t, "real DB", readFile(t, filepath.Join(b, "notes", "db.md")))
	assert.Equal(t, sa.ETag, sb.ETag)

	// A second pull: 304, nothing written, mtimes stable.
	info1, _ := os.Stat(filepath.Join(b, "ci.md"))
	res, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	assert.True(t, res.NotModified)
	info2, _ := os.Stat(filepath.Join(b, "ci.md"))
	assert.Equal(t, info1.ModTime(), info2.ModTime())

	// Delta push: only the changed file travels.
	writeFiles(t, a, map[string]string{"ci.md": "CI stays green, always"})
	res, err = ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, []string{"ci.md"}, res.Uploaded)

	// No-change sync: one request (the pull), no body sent.
	res, err = ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Requests)
	assert.Zero(t, res.BytesSent)
	assert.Empty(t, res.Uploaded)

	// Local-only files survive a pull; the server wins for shared keys.
	writeFiles(t, b, map[string]string{"local-only.md": "mine", "ci.md": "stale edit"})
	res, err = cb.Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, "CI stays green, always", readFile(t, filepath.Join(b, "ci.md")))
	assert.Equal(t, []string{"local-only.md"}, res.Uploaded)
}

func TestConflictResolved(t *testing.T) {
	e := startServer(t, 100)
	a, b := t.TempDir(), t.TempDir()
	ca, cb := newClient(t, e, a, nil), newClient(t, e, b, nil)
	var sa, sb teammem.SyncState
	writeFiles(t, a, map[string]string{"x.md": "from a"})
	_, err := ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	_, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	// A writes again; B's known ETag is now stale.
	writeFiles(t, a, map[string]string{"x.md": "from a, v2"})
	_, err = ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	writeFiles(t, b, map[string]string{"y.md": "from b"})
	res, err := cb.Push(context.Background(), &sb)
	require.NoError(t, err, "412 → hashes → retry")
	assert.Equal(t, 3, res.Requests, "PUT (412), GET hashes, PUT")
	// Local content wins for the same key: B still holds the old x.md, so
	// a bare Push after a conflict sends it too (the protocol's rule).
	assert.Equal(t, []string{"x.md", "y.md"}, res.Uploaded)
	got, err := e.store.Get(context.Background(), server.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x.md": "from a", "y.md": "from b"}, got.Entries)

	// Sync pulls first, so a teammate's newer version is not overwritten.
	writeFiles(t, a, map[string]string{"x.md": "from a, v3"})
	_, err = ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	writeFiles(t, b, map[string]string{"z.md": "from b again"})
	res, err = cb.Sync(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, []string{"z.md"}, res.Uploaded)
	got, err = e.store.Get(context.Background(), server.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, "from a, v3", got.Entries["x.md"])
}

func TestSkipsAndLimits(t *testing.T) {
	e := startServer(t, 3)
	a := t.TempDir()
	token := "gh" + "p_" + strings.Repeat("aB3dE5fG7h", 3) + "aB3dE5"
	writeFiles(t, a, map[string]string{
		"a.md": "1", "b.md": "2", "c.md": "3", "d.md": "4",
		"secret.md": "deploy key " + token,
		"huge.md":   strings.Repeat("x", teammem.MaxEntryBytes+1),
	})
	c := newClient(t, e, a, nil)
	var st teammem.SyncState
	res, err := c.Push(context.Background(), &st)
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassTooManyEntries, se.Class)
	assert.True(t, se.Permanent())
	assert.Equal(t, 3, st.MaxEntries, "the limit is learned")
	assert.Equal(t, 1, res.Requests, "no retry on 413")
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Key] = s.Reason
		if s.Reason == "secret" {
			assert.Equal(t, "GitHub PAT", s.Label)
		}
	}
	assert.Equal(t, map[string]string{"secret.md": "secret", "huge.md": "too_large"}, reasons)

	res, err = c.Push(context.Background(), &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md", "b.md", "c.md"}, res.Uploaded, "only the first N keys, sorted")
}

func TestHostileKeyFromServerRefused(t *testing.T) {
	e := startServer(t, 100)
	// Written straight into the store, past the handler's own checks.
	_, err := e.store.Put(context.Background(), server.Repo{Tenant: "acme", Name: "acme/shop"}, server.PutRequest{
		Entries: map[string]string{"../../escape.md": "pwned", "ok.md": "fine", "．．／x.md": "pwned"}, Now: time.Now()})
	require.NoError(t, err)
	root := t.TempDir()
	team := filepath.Join(root, "memory", "team")
	c := newClient(t, e, team, nil)
	res, err := c.Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"ok.md"}, res.Written)
	assert.Len(t, res.Skipped, 2)
	_, err = os.Stat(filepath.Join(root, "escape.md"))
	assert.True(t, os.IsNotExist(err))
}

func TestDeletionPropagation(t *testing.T) {
	e := startServer(t, 100)
	a, b := t.TempDir(), t.TempDir()
	writeFiles(t, a, map[string]string{"keep.md": "k", "gone.md": "g"})
	ca := newClient(t, e, a, func(c *teammem.ClientConfig) { c.PropagateDeletes = true })
	var sa teammem.SyncState
	_, err := ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	cb := newClient(t, e, b, func(c *teammem.ClientConfig) { c.PropagateDeletes = true })
	var sb teammem.SyncState
	_, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)

	require.NoError(t, os.Remove(filepath.Join(a, "gone.md")))
	res, err := ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, []string{"gone.md"}, res.SoftDeleted)

	res, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, []string{"gone.md"}, res.Deleted)
	_, err = os.Stat(filepath.Join(b, "gone.md"))
	assert.True(t, os.IsNotExist(err))

	// Off (the default): a local delete does not propagate, and the next
	// pull brings the file back.
	c := t.TempDir()
	writeFiles(t, c, map[string]string{"keep.md": "k"})
	cc := newClient(t, e, c, nil)
	var sc teammem.SyncState
	_, err = cc.Sync(context.Background(), &sc)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(c, "keep.md")))
	res, err = cc.Sync(context.Background(), &sc)
	require.NoError(t, err)
	assert.Empty(t, res.SoftDeleted)
	assert.Equal(t, []string{"keep.md"}, res.Written)
}

func TestRetries(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	statuses := []int{500, 429, 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		s := statuses[min(calls, len(statuses)-1)]
		calls++
		if s == 429 {
			w.Header().Set("Retry-After", "7")
		}
		if s != 200 {
			w.WriteHeader(s)
			return
		}
		w.Write([]byte(`{"organizationId":"acme","repo":"acme/shop","version":1,"checksum":"sha256:x","content":{"entries":{},"entryChecksums":{}}}`))
	}))
	defer srv.Close()
	var delays []time.Duration
	c, err := teammem.NewClient(teammem.ClientConfig{BaseURL: srv.URL, Repo: "acme/shop", Token: "t", Fs: afero.NewMemMapFs(), TeamDir: "/team",
		Jitter: func() float64 { return 1 }, Sleep: func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }})
	require.NoError(t, err)
	res, err := c.Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, 3, res.Requests)
	assert.Equal(t, []time.Duration{625 * time.Millisecond, 7 * time.Second}, delays, "500ms + 25% jitter, then Retry-After")

	// Retries give up after 3, and 401 is never retried.
	for _, tc := range []struct {
		status   int
		requests int
		class    teammem.ErrorClass
	}{{503, 4, teammem.ClassUnknown}, {401, 1, teammem.ClassAuth}, {403, 1, teammem.ClassForbidden}} {
		mu.Lock()
		calls, statuses = 0, []int{tc.status}
		mu.Unlock()
		res, err := c.Pull(context.Background(), &teammem.SyncState{})
		var se *teammem.SyncError
		require.ErrorAs(t, err, &se, "%d", tc.status)
		assert.Equal(t, tc.class, se.Class)
		assert.Equal(t, tc.requests, res.Requests, "%d", tc.status)
	}
	_, err = teammem.NewClient(teammem.ClientConfig{BaseURL: srv.URL, Repo: "acme/shop", Fs: afero.NewMemMapFs(), TeamDir: "/t"})
	assert.ErrorIs(t, err, teammem.ErrNoToken)
	_, err = teammem.NewClient(teammem.ClientConfig{BaseURL: srv.URL, Token: "t", Fs: afero.NewMemMapFs(), TeamDir: "/t"})
	assert.ErrorIs(t, err, teammem.ErrNoRepo)
	assert.False(t, errors.Is(err, teammem.ErrNoToken))
}

func TestEntryLimitDoesNotLookLikeDeletion(t *testing.T) {
	// With deletion propagation, files held back by a learned entry limit
	// are still present: they must never be deleted on the server.
	e := startServer(t, 3)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "1", "b.md": "2", "c.md": "3"})
	c := newClient(t, e, dir, func(cfg *teammem.ClientConfig) { cfg.PropagateDeletes = true })
	var st teammem.SyncState
	_, err := c.Sync(context.Background(), &st)
	require.NoError(t, err)
	// A fourth file sorts first: with the limit learned, the upload keeps
	// a.md, b.md and 0.md... and c.md falls outside the first three.
	writeFiles(t, dir, map[string]string{"0.md": "zero"})
	_, err = c.Sync(context.Background(), &st)
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	require.Equal(t, teammem.ClassTooManyEntries, se.Class)
	// Now the first three keys are 0.md, a.md and b.md; c.md is held
	// back. Uploading 0.md still exceeds the limit, and c.md must not be
	// "deleted" to make room: it is on disk.
	res, err := c.Sync(context.Background(), &st)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassTooManyEntries, se.Class)
	assert.Empty(t, res.SoftDeleted, "c.md is on disk: it is not deleted")
	assert.Equal(t, "3", serverEntries(t, e)["c.md"])
}

func TestSkippedFileIsNotDeleted(t *testing.T) {
	e := startServer(t, 100)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"deploy.md": "deploys on Tuesdays"})
	c := newClient(t, e, dir, func(cfg *teammem.ClientConfig) { cfg.PropagateDeletes = true })
	var st teammem.SyncState
	_, err := c.Sync(context.Background(), &st)
	require.NoError(t, err)
	// A secret lands in the file: the push skips it, and must not treat the
	// skipped file as deleted.
	writeFiles(t, dir, map[string]string{"deploy.md": "deploys with " + "gh" + "p_" + strings.Repeat("aB3dE5fG7h", 3) + "aB3dE5"})
	res, err := c.Push(context.Background(), &st)
	require.NoError(t, err)
	assert.Empty(t, res.SoftDeleted)
	require.Len(t, res.Skipped, 1)
	assert.Equal(t, "deploys on Tuesdays", serverEntries(t, e)["deploy.md"])
}

// TestPullSkipsWhatItCannotWrite: a key the filesystem cannot hold beside
// another ("fd.md" and "fd.md/child.md") and an entry holding a secret are
// skipped and reported; every other key is still written.
func TestPullSkipsWhatItCannotWrite(t *testing.T) {
	e := startServer(t, 0)
	_, err := e.store.Put(context.Background(), server.Repo{Tenant: "acme", Name: "acme/shop"}, server.PutRequest{Entries: map[string]string{
		"a.md": "a", "fd.md": "file", "fd.md/child.md": "child", "leak.md": "token " + "gh" + "p_" + strings.Repeat("a1B2", 9), "z.md": "z",
	}, Now: time.Now()})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "team")
	res, err := newClient(t, e, dir, nil).Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md", "fd.md", "z.md"}, res.Written)
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Key] = s.Reason
	}
	assert.Equal(t, map[string]string{"fd.md/child.md": "write_failed", "leak.md": "secret"}, reasons)
	_, err = os.Stat(filepath.Join(dir, "leak.md"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
