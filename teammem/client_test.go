package teammem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentmem-sdk/agentmem/memdir"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

type syncEnv struct {
	url   string
	token string
	store teamserver.Store
}

func startServer(t *testing.T, maxEntries int) syncEnv {
	t.Helper()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	store := teamserver.NewMemoryStore()
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, MaxEntries: maxEntries})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return syncEnv{url: srv.URL, token: token, store: store}
}

func newClient(t *testing.T, e syncEnv, dir string, mutate func(*teammem.Options)) *teammem.Client {
	t.Helper()
	cfg := teammem.Options{BaseURL: e.url, Repo: "acme/shop", Token: e.token,
		Sleep: func(context.Context, time.Duration) error { return nil }}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := teammem.New(teamDirAt(afero.NewOsFs(), dir), cfg)
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

// requests is how many requests c's rounds have sent, and their body
// bytes (Remote.Traffic).
func requests(c *teammem.Client) (int, int64) { return c.Remote().Traffic() }

// replies records the status of every reply a client gets.
type replies struct {
	mu  sync.Mutex
	got []int
}

func (s *replies) Do(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(r)
	if err == nil {
		s.mu.Lock()
		s.got = append(s.got, resp.StatusCode)
		s.mu.Unlock()
	}
	return resp, err
}

// last is the status of the last reply.
func (s *replies) last() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		return 0
	}
	return s.got[len(s.got)-1]
}

// skipsOf maps each skipped path to its reason's code (what comes
// before the first colon).
func skipsOf(res foldersync.Result) map[string]string {
	out := map[string]string{}
	for _, s := range res.Skipped {
		code, _, _ := strings.Cut(s.Reason, ":")
		out[s.Path] = code
	}
	return out
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
	codes := &replies{}
	ca := newClient(t, e, a, func(c *teammem.Options) { c.HTTP = codes })
	var sa teammem.SyncState
	res, err := ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, []string{"ci.md", "notes/db.md"}, res.Pushed)
	n, _ := requests(ca)
	assert.Equal(t, 2, n, "the hashes view, then one PUT")

	// Pull into an empty directory.
	b := t.TempDir()
	codesB := &replies{}
	cb := newClient(t, e, b, func(c *teammem.Options) { c.HTTP = codesB })
	var sb teammem.SyncState
	res, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, []string{"ci.md", "notes/db.md"}, res.Pulled)
	assert.Equal(t, "real DB", readFile(t, filepath.Join(b, "notes", "db.md")))
	assert.Equal(t, sa.ETag, sb.ETag)

	// A second pull: 304, nothing written, mtimes stable.
	info1, _ := os.Stat(filepath.Join(b, "ci.md"))
	res, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotModified, codesB.last())
	assert.Empty(t, res.Pulled)
	info2, _ := os.Stat(filepath.Join(b, "ci.md"))
	assert.Equal(t, info1.ModTime(), info2.ModTime())

	// Delta push: only the changed file travels.
	writeFiles(t, a, map[string]string{"ci.md": "CI stays green, always"})
	res, err = ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, []string{"ci.md"}, res.Pushed)

	// No-change sync: a conditional GET answered 304, no body sent.
	_, err = ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	n0, b0 := requests(ca)
	res, err = ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	n1, b1 := requests(ca)
	assert.Equal(t, 1, n1-n0)
	assert.Equal(t, http.StatusNotModified, codes.last())
	assert.Zero(t, b1-b0)
	assert.Empty(t, res.Pushed)
	assert.True(t, res.Unchanged)

	// Without a base (a fresh state), a local-only file is pushed, and of
	// two different versions of one key the local file stays where it is
	// and the server's copy is kept aside: with nothing to say the local
	// one is the newer (written within a minute of the server's), it is
	// not pushed until it is edited again.
	writeFiles(t, b, map[string]string{"local-only.md": "mine", "ci.md": "a later edit"})
	fresh := &teammem.SyncState{}
	res, err = cb.Sync(context.Background(), fresh)
	require.NoError(t, err)
	assert.Equal(t, "a later edit", readFile(t, filepath.Join(b, "ci.md")))
	assert.Equal(t, []string{"local-only.md"}, res.Pushed)
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "ci.md", res.Conflicts[0].Path)
	assert.True(t, res.Conflicts[0].LocalKept)
	assert.Equal(t, "CI stays green, always", readFile(t, res.Conflicts[0].SavedAs))
	assert.Equal(t, filepath.Join(filepath.Dir(b), teammem.ConflictsDirName), filepath.Dir(res.Conflicts[0].SavedAs), "kept outside the synced directory")
	res, err = cb.Sync(context.Background(), fresh)
	require.NoError(t, err)
	assert.Empty(t, res.Conflicts, "kept aside once")
	assert.Equal(t, []foldersync.Skip{{Path: "ci.md", Reason: foldersync.SkipDiverged}}, res.Skipped)
	writeFiles(t, b, map[string]string{"ci.md": "edited again"})
	res, err = cb.Sync(context.Background(), fresh)
	require.NoError(t, err)
	assert.Equal(t, []string{"ci.md"}, res.Pushed, "an edit after the server's copy was put beside it is sent")
	assert.Empty(t, res.Conflicts)
}

func TestPushNeverOverwritesATeammatesEdit(t *testing.T) {
	e := startServer(t, 100)
	a, b := t.TempDir(), t.TempDir()
	ca, cb := newClient(t, e, a, nil), newClient(t, e, b, nil)
	var sa, sb teammem.SyncState
	writeFiles(t, a, map[string]string{"x.md": "from a"})
	_, err := ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	_, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	// A writes again; B still holds the old x.md and adds y.md.
	writeFiles(t, a, map[string]string{"x.md": "from a, v2"})
	_, err = ca.Push(context.Background(), &sa)
	require.NoError(t, err)
	writeFiles(t, b, map[string]string{"y.md": "from b"})
	res, err := cb.Push(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, []string{"y.md"}, res.Pushed, "B's unchanged old copy is not an edit")
	got, err := e.store.Get(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x.md": "from a, v2", "y.md": "from b"}, got.Entries)
	res, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, []string{"x.md"}, res.Pulled)
	assert.Equal(t, "from a, v2", readFile(t, filepath.Join(b, "x.md")))

	// Both edit x.md: each sync keeps every edit somewhere.
	writeFiles(t, a, map[string]string{"x.md": "a's edit"})
	writeFiles(t, b, map[string]string{"x.md": "b's edit"})
	_, err = ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	res, err = cb.Push(context.Background(), &sb)
	require.NoError(t, err)
	assert.Empty(t, res.Pushed, "a push does not overwrite a teammate's edit")
	assert.Equal(t, []foldersync.Skip{{Path: "x.md", Reason: foldersync.SkipConflict}}, res.Skipped)
	res, err = cb.Sync(context.Background(), &sb)
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "a's edit", readFile(t, filepath.Join(b, "x.md")))
	assert.Equal(t, "b's edit", readFile(t, res.Conflicts[0].SavedAs))
}

// TestConflictRetry: a teammate writes between this client's read and its
// PUT; the 412 starts the round again and nothing is lost.
func TestConflictRetry(t *testing.T) {
	e := startServer(t, 100)
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	proxy := teammateWritesOnFirstPut(t, e, map[string]string{"teammate.md": "theirs"})
	_, err := e.store.Put(context.Background(), repo, teamserver.PutRequest{Entries: map[string]string{"seed.md": "seed"}, Now: time.Now()})
	require.NoError(t, err)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"mine.md": "ours"})
	c := newClient(t, syncEnv{url: proxy.URL, token: e.token, store: e.store}, dir, nil)
	res, err := c.Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err, "412 → read again → PUT")
	assert.Equal(t, []string{"mine.md"}, res.Pushed)
	assert.Equal(t, []string{"seed.md", "teammate.md"}, res.Pulled)
	got, err := e.store.Get(context.Background(), repo, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"mine.md": "ours", "seed.md": "seed", "teammate.md": "theirs"}, got.Entries)
}

func TestSkipsAndLimits(t *testing.T) {
	e := startServer(t, 3)
	a := t.TempDir()
	token := "gh" + "p_" + strings.Repeat("aB3dE5fG7h", 3) + "aB3dE5"
	writeFiles(t, a, map[string]string{
		"a.md": "1", "b.md": "2", "c.md": "3", "d.md": "4",
		"secret.md": "deploy key " + token,
		"huge.md":   strings.Repeat("x", teamwire.MaxEntryBytes+1),
	})
	c := newClient(t, e, a, nil)
	var st teammem.SyncState
	res, err := c.Push(context.Background(), &st)
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassTooManyEntries, se.Class)
	assert.True(t, se.Permanent())
	assert.Equal(t, 3, st.MaxEntries, "the limit is learned")
	n, _ := requests(c)
	assert.Equal(t, 2, n, "the hashes view and one PUT: no retry on 413")
	for _, s := range res.Skipped {
		if s.Path == "secret.md" {
			assert.Equal(t, foldersync.SkipSecret, s.Reason, "the engine's scan, once for every driver")
		}
	}
	assert.Equal(t, map[string]string{"secret.md": "secret", "huge.md": "too_large"}, skipsOf(res))

	res, err = c.Push(context.Background(), &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md", "b.md", "c.md"}, res.Pushed, "only the first N keys, sorted")
	assert.Equal(t, "refused", skipsOf(res)["d.md"])
	assert.Contains(t, res.Skipped, foldersync.Skip{Path: "d.md", Reason: "refused: over_limit: the repo holds as many entries as the server allows"})
}

func TestHostileKeyFromServerRefused(t *testing.T) {
	e := startServer(t, 100)
	// Written straight into the store, past the handler's own checks.
	_, err := e.store.Put(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{
		Entries: map[string]string{"../../escape.md": "pwned", "ok.md": "fine", "．．／x.md": "pwned"}, Now: time.Now()})
	require.NoError(t, err)
	root := t.TempDir()
	team := filepath.Join(root, "memory", "team")
	c := newClient(t, e, team, nil)
	res, err := c.Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"ok.md"}, res.Pulled)
	assert.Len(t, res.Skipped, 2)
	_, err = os.Stat(filepath.Join(root, "escape.md"))
	assert.True(t, os.IsNotExist(err))
}

func TestDeletionPropagation(t *testing.T) {
	e := startServer(t, 100)
	a, b := t.TempDir(), t.TempDir()
	writeFiles(t, a, map[string]string{"keep.md": "k", "gone.md": "g", "edited.md": "e"})
	ca := newClient(t, e, a, nil)
	var sa teammem.SyncState
	_, err := ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	cb := newClient(t, e, b, nil)
	var sb teammem.SyncState
	_, err = cb.Pull(context.Background(), &sb)
	require.NoError(t, err)

	// A deletes gone.md (and edited.md); B edits edited.md meanwhile.
	require.NoError(t, os.Remove(filepath.Join(a, "gone.md")))
	require.NoError(t, os.Remove(filepath.Join(a, "edited.md")))
	writeFiles(t, b, map[string]string{"edited.md": "b's edit"})
	res, err := ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, []string{"edited.md", "gone.md"}, res.DeletedRemote, "deletions propagate by default")

	res, err = cb.Sync(context.Background(), &sb)
	require.NoError(t, err)
	assert.Equal(t, []string{"gone.md"}, res.DeletedLocal, "an unchanged copy follows the deletion")
	assert.Equal(t, []string{"edited.md"}, res.Pushed, "an edit beats a deletion")
	_, err = os.Stat(filepath.Join(b, "gone.md"))
	assert.True(t, os.IsNotExist(err))

	// A's next sync brings the edit back; gone.md stays gone everywhere.
	res, err = ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	assert.Equal(t, []string{"edited.md"}, res.Pulled)
	_, err = os.Stat(filepath.Join(a, "gone.md"))
	assert.True(t, os.IsNotExist(err), "a deleted memory does not come back")

	// KeepDeleted: a local delete does not propagate; the file is restored.
	c := t.TempDir()
	cc := newClient(t, e, c, func(cfg *teammem.Options) { cfg.KeepDeleted = true })
	var sc teammem.SyncState
	_, err = cc.Sync(context.Background(), &sc)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(c, "keep.md")))
	res, err = cc.Sync(context.Background(), &sc)
	require.NoError(t, err)
	assert.Empty(t, res.DeletedRemote)
	assert.Equal(t, []string{"keep.md"}, res.Pulled)
}

// TestStaleCopyOfADeletedMemory: a teammate with no sync state (a new
// clone, a lost state file) and an old copy of a deleted memory does not
// bring it back; the copy is kept aside.
func TestStaleCopyOfADeletedMemory(t *testing.T) {
	e := startServer(t, 100)
	a := t.TempDir()
	writeFiles(t, a, map[string]string{"old.md": "old"})
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(a, "old.md"), old, old))
	stale := t.TempDir()
	writeFiles(t, stale, map[string]string{"old.md": "old"})
	require.NoError(t, os.Chtimes(filepath.Join(stale, "old.md"), old, old))
	ca := newClient(t, e, a, nil)
	var sa teammem.SyncState
	_, err := ca.Sync(context.Background(), &sa)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(a, "old.md")))
	_, err = ca.Sync(context.Background(), &sa)
	require.NoError(t, err)

	res, err := newClient(t, e, stale, nil).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Empty(t, res.Pushed, "the stale copy is not pushed back")
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "old", readFile(t, res.Conflicts[0].SavedAs))
	got, err := e.store.Get(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Empty(t, got.Entries)
}

// TestStateFile: the state survives the process (a deletion made between
// two runs propagates), and a torn state file deletes nothing.
func TestStateFile(t *testing.T) {
	e := startServer(t, 100)
	root := t.TempDir()
	team := filepath.Join(root, "team")
	writeFiles(t, team, map[string]string{"a.md": "a", "b.md": "b"})
	statePath := teammem.StatePath(team, e.url, "acme/shop")
	assert.Equal(t, filepath.Join(root, teammem.StateDirName), filepath.Dir(statePath), "beside the team dir, not in it")
	withState := func(cfg *teammem.Options) { cfg.StateFile = statePath }
	_, err := newClient(t, e, team, withState).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	require.FileExists(t, statePath)

	require.NoError(t, os.Remove(filepath.Join(team, "a.md")))
	res, err := newClient(t, e, team, withState).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md"}, res.DeletedRemote, "a new process remembers the base")

	// A torn state file: the one saved before it stands in (b.md's
	// deletion is carried out).
	writeFiles(t, team, map[string]string{"c.md": "c"})
	_, err = newClient(t, e, team, withState).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(statePath, []byte(`{"format":1,"base":{"b.md`), 0o600))
	require.NoError(t, os.Remove(filepath.Join(team, "c.md")))
	var prev teammem.SyncState
	res, err = newClient(t, e, team, withState).Sync(context.Background(), &prev)
	require.NoError(t, err)
	assert.NoError(t, prev.FileError)
	assert.Equal(t, []string{"c.md"}, res.DeletedRemote, "the state saved before knows c.md: %+v", res)

	// Both torn: no base, so nothing is deleted, b.md is kept.
	require.NoError(t, os.WriteFile(statePath, []byte(`{"format":1,"base":{"b.md`), 0o600))
	require.NoError(t, os.WriteFile(statePath+".prev", []byte(`{"format":1,"ba`), 0o600))
	require.NoError(t, os.Remove(filepath.Join(team, "b.md")))
	var torn teammem.SyncState
	res, err = newClient(t, e, team, withState).Sync(context.Background(), &torn)
	require.NoError(t, err)
	assert.ErrorIs(t, torn.FileError, teammem.ErrCorruptState)
	assert.Empty(t, res.DeletedRemote)
	assert.Equal(t, []string{"b.md"}, res.Pulled, "the file comes back rather than being deleted everywhere")
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
	c, err := teammem.New(teamDirAt(afero.NewMemMapFs(), "/team"), teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: "t", Jitter: func() float64 { return 1 }, Sleep: func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }})
	require.NoError(t, err)
	_, err = c.Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	n, _ := requests(c)
	assert.Equal(t, 3, n)
	assert.Equal(t, []time.Duration{625 * time.Millisecond, 7 * time.Second}, delays, "500ms + 25% jitter, then Retry-After")

	// Retries give up after 3; 401 and 403 are never retried, nor a full disk (507).
	for _, tc := range []struct {
		status   int
		requests int
		class    teammem.ErrorClass
	}{{503, 4, teammem.ClassUnknown}, {401, 1, teammem.ClassAuth}, {403, 1, teammem.ClassForbidden}, {507, 1, teammem.ClassUnknown}} {
		mu.Lock()
		calls, statuses = 0, []int{tc.status}
		mu.Unlock()
		n0, _ := requests(c)
		_, err := c.Pull(context.Background(), &teammem.SyncState{})
		var se *teammem.SyncError
		require.ErrorAs(t, err, &se, "%d", tc.status)
		assert.Equal(t, tc.class, se.Class)
		n, _ := requests(c)
		assert.Equal(t, tc.requests, n-n0, "%d", tc.status)
	}
	_, err = teammem.New(teamDirAt(afero.NewMemMapFs(), "/t"), teammem.Options{BaseURL: srv.URL, Repo: "acme/shop"})
	assert.ErrorIs(t, err, teammem.ErrNoToken)
	_, err = teammem.New(teamDirAt(afero.NewMemMapFs(), "/t"), teammem.Options{BaseURL: srv.URL, Token: "t"})
	assert.ErrorIs(t, err, teammem.ErrNoRepo)
	assert.False(t, errors.Is(err, teammem.ErrNoToken))
	_, err = teammem.New(nil, teammem.Options{BaseURL: srv.URL, Token: "t", Repo: "acme/shop"})
	assert.ErrorContains(t, err, "filesystem")
}

func TestEntryLimitDoesNotLookLikeDeletion(t *testing.T) {
	// With deletion propagation, files held back by a learned entry limit
	// are still present: they must never be deleted on the server.
	e := startServer(t, 3)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "1", "b.md": "2", "c.md": "3"})
	c := newClient(t, e, dir, func(cfg *teammem.Options) { _ = cfg })
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
	// With the limit learned, 0.md is held back (it would be a fourth
	// entry), and c.md is never "deleted" to make room: it is on disk.
	res, err := c.Sync(context.Background(), &st)
	require.NoError(t, err)
	assert.Equal(t, "refused", skipsOf(res)["0.md"])
	assert.Empty(t, res.DeletedRemote, "c.md is on disk: it is not deleted")
	assert.Equal(t, "3", serverEntries(t, e)["c.md"])
}

func TestSkippedFileIsNotDeleted(t *testing.T) {
	e := startServer(t, 100)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"deploy.md": "deploys on Tuesdays"})
	c := newClient(t, e, dir, func(cfg *teammem.Options) { _ = cfg })
	var st teammem.SyncState
	_, err := c.Sync(context.Background(), &st)
	require.NoError(t, err)
	// A secret lands in the file: the push skips it, and must not treat the
	// skipped file as deleted.
	writeFiles(t, dir, map[string]string{"deploy.md": "deploys with " + "gh" + "p_" + strings.Repeat("aB3dE5fG7h", 3) + "aB3dE5"})
	res, err := c.Push(context.Background(), &st)
	require.NoError(t, err)
	assert.Empty(t, res.DeletedRemote)
	require.Len(t, res.Skipped, 1)
	assert.Equal(t, "deploys on Tuesdays", serverEntries(t, e)["deploy.md"])
}

// TestPullSkipsWhatItCannotWrite: two keys the filesystem cannot hold
// side by side ("fd.md" and "fd.md/child.md", which this server refuses
// but an older one may hold; neither is here, so neither is written) and
// an entry holding a secret are skipped and reported; every other key is
// still written.
func TestPullSkipsWhatItCannotWrite(t *testing.T) {
	entries := map[string]string{"a.md": "a", "fd.md": "file", "fd.md/child.md": "child", "leak.md": "token " + "gh" + "p_" + strings.Repeat("a1B2", 9), "z.md": "z"}
	sums := map[string]string{}
	for k, v := range entries {
		sums[k] = teamwire.EntryChecksum(v)
	}
	body, err := json.Marshal(teamwire.TeamMemoryData{Repo: "acme/shop", Version: 1, Checksum: teamwire.RepoChecksum(sums),
		Content: teamwire.Content{Entries: entries, EntryChecksums: sums}})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "team")
	res, err := newClient(t, syncEnv{url: srv.URL, token: "t"}, dir, nil).Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md", "z.md"}, res.Pulled)
	assert.Equal(t, map[string]string{"fd.md": foldersync.SkipPathClash, "fd.md/child.md": foldersync.SkipPathClash, "leak.md": "secret"}, skipsOf(res))
	for _, s := range res.Skipped {
		switch s.Path {
		case "fd.md/child.md":
			assert.Equal(t, foldersync.SkipPathClash+": fd.md is in the way", s.Reason)
		case "fd.md":
			assert.Equal(t, foldersync.SkipPathClash+": fd.md/child.md is in the way", s.Reason)
		}
	}
	_, err = os.Stat(filepath.Join(dir, "leak.md"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestReplyCapFollowsServerLimits: a repo larger than the client's initial
// reply cap is pulled after the client learns the server's limits.
func TestReplyCapFollowsServerLimits(t *testing.T) {
	e := startServer(t, 100)
	src := t.TempDir()
	big := map[string]string{}
	for i := range 20 {
		big[fmt.Sprintf("n%02d.md", i)] = strings.Repeat("memory text ", 500)
	}
	writeFiles(t, src, big)
	_, err := newClient(t, e, src, nil).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	dst := t.TempDir()
	res, err := newClient(t, e, dst, func(c *teammem.Options) { c.MaxReplyBytes = 4 << 10 }).Pull(context.Background(), &teammem.SyncState{})
	require.NoError(t, err, "a 120 KB repo through a 4 KiB initial cap")
	assert.Len(t, res.Pulled, 20)
}

// TestRestoreIsConditional: a restore writes an old version back as a new
// one, and refuses (412, nothing written) when the repo changed between
// its read and its write.
func TestRestoreIsConditional(t *testing.T) {
	e := startServer(t, 100)
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	for _, v := range []string{"one", "two"} {
		_, err := e.store.Put(context.Background(), repo, teamserver.PutRequest{Entries: map[string]string{"k.md": v}, Now: time.Now()})
		require.NoError(t, err)
	}
	c := newClient(t, e, t.TempDir(), nil)
	v, err := c.Restore(context.Background(), "k.md", 1)
	require.NoError(t, err)
	assert.Equal(t, int64(3), v)
	assert.Equal(t, "one", serverEntries(t, e)["k.md"])

	proxy := teammateWritesOnFirstPut(t, e, map[string]string{"k.md": "a teammate's edit"})
	c = newClient(t, syncEnv{url: proxy.URL, token: e.token, store: e.store}, t.TempDir(), nil)
	_, err = c.Restore(context.Background(), "k.md", 2)
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassConflict, se.Class)
	assert.Equal(t, "a teammate's edit", serverEntries(t, e)["k.md"], "nothing written over the concurrent change")
	_, err = c.Restore(context.Background(), "k.md", 99)
	assert.ErrorIs(t, err, teammem.ErrNotFoundOnServer)
}

// TestUnconditionalPushMeetsATeammate: the repo is empty when this client
// reads it, so its PUT carries no If-Match; a teammate writes in between.
// The tag of the PUT's answer then covers a file this client never saw:
// the next sync must fetch it, not take a 304 for "up to date".
func TestUnconditionalPushMeetsATeammate(t *testing.T) {
	e := startServer(t, 100)
	proxy := teammateWritesOnFirstPut(t, e, map[string]string{"theirs.md": "a teammate's"})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"mine.md": "ours"})
	codes := &replies{}
	c := newClient(t, syncEnv{url: proxy.URL, token: e.token, store: e.store}, dir, func(c *teammem.Options) { c.HTTP = codes })
	var st teammem.SyncState
	res, err := c.Sync(context.Background(), &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"mine.md"}, res.Pushed)
	res, err = c.Sync(context.Background(), &st)
	require.NoError(t, err)
	assert.NotEqual(t, http.StatusNotModified, codes.last(), "the state's tag covered a file it did not know")
	assert.Equal(t, []string{"theirs.md"}, res.Pulled)
	_, err = c.Sync(context.Background(), &st)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotModified, codes.last(), "now the tag and the state agree")
}

// teammateWritesOnFirstPut returns a proxy to the server that, on the first
// PUT through it, first writes entries straight into the store: a
// teammate's write landing between a client's read and its write.
func teammateWritesOnFirstPut(t *testing.T, e syncEnv, entries map[string]string) *httptest.Server {
	t.Helper()
	var once sync.Once
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			once.Do(func() {
				_, err := e.store.Put(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: entries, Now: time.Now()})
				require.NoError(t, err)
			})
		}
		u, _ := url.Parse(e.url)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy
}

// teamDirAt is a team directory on its own at dir, for a sync client.
func teamDirAt(fsys afero.Fs, dir string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{Team: true})
	if err != nil {
		panic(err)
	}
	return d
}

// A key the server refuses alone (here: a file where a teammate has a
// folder) is skipped with the server's reason; every other file of the
// push goes through, and the author's file stays as it is.
func TestOneRefusedKeyNeverBlocksThePush(t *testing.T) {
	e := startServer(t, 0)
	ctx := context.Background()
	_, err := e.store.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"x.md/y.md": "below"}, Now: time.Now()})
	require.NoError(t, err)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"x.md": "a file", "good.md": "good"})
	c := newClient(t, e, dir, nil)
	res, err := c.Push(ctx, &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"good.md"}, res.Pushed)
	require.Len(t, res.Skipped, 1)
	assert.Equal(t, "x.md", res.Skipped[0].Path)
	assert.True(t, strings.HasPrefix(res.Skipped[0].Reason, foldersync.SkipRefused+": "+teamwire.CodeKeyConflict+": "), res.Skipped[0].Reason)
	assert.NotContains(t, res.Skipped[0].Reason, "nothing was written")
	assert.Equal(t, "good", serverEntries(t, e)["good.md"])
	assert.Equal(t, "a file", readFile(t, filepath.Join(dir, "x.md")))

	var st teammem.SyncState
	res, err = c.Sync(ctx, &st)
	require.NoError(t, err)
	refused := false
	for _, s := range res.Skipped {
		refused = refused || s.Path == "x.md" && strings.HasPrefix(s.Reason, foldersync.SkipRefused+":")
	}
	assert.True(t, refused, "a sync refuses it again: %+v", res.Skipped)
	assert.Equal(t, "a file", readFile(t, filepath.Join(dir, "x.md")))
}

// TestAStateGivenAnewIsSeen: the client keeps its engine's basis between
// calls while the state is the one the last call left; a state given a
// new Base (here an empty one: the agreement forgotten) is read again,
// so a file missing here is not taken for a deletion to send.
func TestAStateGivenAnewIsSeen(t *testing.T) {
	e := startServer(t, 0)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "a\n", "b.md": "b\n"})
	c := newClient(t, e, dir, nil)
	var st teammem.SyncState
	_, err := c.Sync(context.Background(), &st)
	require.NoError(t, err)
	_, err = c.Sync(context.Background(), &st) // kept basis: nothing to do
	require.NoError(t, err)

	st.Base = map[string]string{} // forgotten
	require.NoError(t, os.Remove(filepath.Join(dir, "a.md")))
	res, err := c.Sync(context.Background(), &st)
	require.NoError(t, err)
	assert.Empty(t, res.DeletedRemote, "with no agreement, a missing file is no evidence of a deletion")
	assert.Contains(t, res.Pulled, "a.md")
}

// TestStateFollowsTheServerNotItsURL: the same server reached under
// another spelling of its URL (localhost for 127.0.0.1) finds the state
// kept under the first: pending edits are pushed and a deletion is
// carried out, nothing is put aside. A state under another URL that is
// another server is a reset: nothing deleted, the local files kept.
func TestStateFollowsTheServerNotItsURL(t *testing.T) {
	e := startServer(t, 100)
	dir := t.TempDir()
	team := filepath.Join(dir, "team")
	state := func(url string) func(*teammem.Options) {
		return func(c *teammem.Options) {
			c.BaseURL = url
			c.StateFile = teammem.StatePath(team, url, "acme/shop")
		}
	}
	writeFiles(t, team, map[string]string{"a.md": "a1", "b.md": "b1", "c.md": "c1", "d.md": "d1"})
	_, err := newClient(t, e, team, state(e.url)).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)

	writeFiles(t, team, map[string]string{"a.md": "a2 mine", "b.md": "b2 mine", "c.md": "c2 mine"})
	require.NoError(t, os.Remove(filepath.Join(team, "d.md")))
	other := strings.Replace(e.url, "127.0.0.1", "localhost", 1)
	require.NotEqual(t, e.url, other)
	res, err := newClient(t, e, team, state(other)).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Empty(t, res.Conflicts)
	assert.ElementsMatch(t, []string{"a.md", "b.md", "c.md"}, res.Pushed)
	assert.Equal(t, []string{"d.md"}, res.DeletedRemote)
	for k, v := range map[string]string{"a.md": "a2 mine", "b.md": "b2 mine", "c.md": "c2 mine"} {
		assert.Equal(t, v, readFile(t, filepath.Join(team, k)))
	}
	assert.NoFileExists(t, teammem.StatePath(team, e.url, "acme/shop"), "moved, not copied")

	// Another server under a third URL: a reset, nothing deleted.
	e2 := startServer(t, 100)
	res, err = newClient(t, e2, team, state(e2.url)).Sync(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Empty(t, res.DeletedLocal)
	assert.Empty(t, res.DeletedRemote)
	assert.ElementsMatch(t, []string{"a.md", "b.md", "c.md"}, res.Pushed)
}
