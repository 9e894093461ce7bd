package teammem_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/internal/racefs"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// driverEnv is a real team server (its handler over a memory store)
// whose requests are counted by status.
type driverEnv struct {
	url, token string
	store      teamserver.Store
	handler    *teamserver.Handler
	statuses   *statusLog
}

type statusLog struct {
	puts, notModified atomic.Int64
}

type countingWriter struct {
	http.ResponseWriter
	log *statusLog
}

func (w countingWriter) WriteHeader(code int) {
	if code == http.StatusNotModified {
		w.log.notModified.Add(1)
	}
	w.ResponseWriter.WriteHeader(code)
}

func startDriverServer(t *testing.T, opts teamserver.Options) driverEnv {
	t.Helper()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	grant.Name = "alice"
	store := teamserver.NewMemoryStore()
	opts.Tokens = append(opts.Tokens, grant)
	h, err := teamserver.NewHandler(store, opts)
	require.NoError(t, err)
	log := &statusLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			log.puts.Add(1)
		}
		h.ServeHTTP(countingWriter{w, log}, r)
	}))
	t.Cleanup(srv.Close)
	return driverEnv{url: srv.URL, token: token, store: store, handler: h, statuses: log}
}

func newDriver(t *testing.T, e driverEnv) *teammem.Remote {
	t.Helper()
	r, err := teammem.NewRemote(teammem.Options{BaseURL: e.url, Repo: "acme/shop", Token: e.token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return r
}

func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func write(path, content, expect string) foldersync.Change {
	return foldersync.Change{Path: path, Content: []byte(content), Expect: foldersync.Entry{Sum: expect}}
}

func statuses(out []foldersync.Outcome) map[string]foldersync.Status {
	m := map[string]foldersync.Status{}
	for _, o := range out {
		m[o.Path] = o.Status
	}
	return m
}

func TestRemoteListsGetsAndAnswersUnchanged(t *testing.T) {
	ctx := context.Background()
	e := startDriverServer(t, teamserver.Options{})
	r := newDriver(t, e)

	first, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	assert.Empty(t, first.Entries, "no repo yet")
	assert.NotEmpty(t, first.Store, "the server names its store")

	out, err := r.Apply(ctx, []foldersync.Change{write("a.md", "alpha", ""), write("ops/b.md", "bee", "")})
	require.NoError(t, err)
	assert.Equal(t, map[string]foldersync.Status{"a.md": foldersync.Applied, "ops/b.md": foldersync.Applied}, statuses(out))

	// A fresh driver (a new process) reads the repo in full.
	r2 := newDriver(t, e)
	l, err := r2.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	assert.Equal(t, hexSum("alpha"), l.Entries["a.md"].Sum)
	assert.Equal(t, hexSum("bee"), l.Entries["ops/b.md"].Sum)
	assert.Equal(t, "alice", l.Entries["a.md"].Author.Name)
	assert.False(t, l.Entries["a.md"].Author.Time.IsZero())
	assert.Equal(t, int64(1), l.Generation)
	assert.Equal(t, first.Store, l.Store)
	got, err := r2.Get(ctx, []string{"a.md", "gone.md"})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"a.md": []byte("alpha")}, got)

	// Given that listing back, a third driver's read is a 304: Unchanged,
	// no entry sent.
	for _, hashes := range []bool{false, true} {
		r3 := newDriver(t, e)
		r3.HashesOnly(hashes)
		before := e.statuses.notModified.Load()
		again, err := r3.List(ctx, l)
		require.NoError(t, err)
		assert.True(t, again.Unchanged, "hashes only: %v", hashes)
		assert.Equal(t, l.Entries, again.Entries)
		assert.Equal(t, before+1, e.statuses.notModified.Load())
	}
	// A teammate's write makes the next read a full one.
	_, err = newDriver(t, e).Apply(ctx, []foldersync.Change{write("c.md", "sea", "")})
	require.NoError(t, err)
	changed, err := r2.List(ctx, l)
	require.NoError(t, err)
	assert.False(t, changed.Unchanged)
	assert.Equal(t, hexSum("sea"), changed.Entries["c.md"].Sum)
	assert.Equal(t, int64(2), changed.Generation)
}

func TestRemoteDeletionsCarryTheirEvidence(t *testing.T) {
	ctx := context.Background()
	e := startDriverServer(t, teamserver.Options{})
	r := newDriver(t, e)
	_, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	_, err = r.Apply(ctx, []foldersync.Change{write("a.md", "alpha", ""), write("b.md", "bee", "")})
	require.NoError(t, err)
	out, err := r.Apply(ctx, []foldersync.Change{{Path: "a.md", Delete: true, Expect: foldersync.Entry{Sum: hexSum("alpha")}}})
	require.NoError(t, err)
	assert.Equal(t, foldersync.Applied, statuses(out)["a.md"])

	fresh := newDriver(t, e)
	l, err := fresh.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	assert.NotContains(t, l.Entries, "a.md")
	assert.Contains(t, l.Deleted, "a.md", "the tombstone is in the listing")
	del, err := fresh.Deleted(ctx, []string{"a.md", "never.md"})
	require.NoError(t, err)
	assert.Contains(t, del, "a.md")
	assert.NotContains(t, del, "never.md", "a key without a tombstone has no evidence")
	assert.WithinDuration(t, time.Now(), del["a.md"], time.Minute)
}

func TestRemoteApplyIsConditional(t *testing.T) {
	ctx := context.Background()
	e := startDriverServer(t, teamserver.Options{})
	r := newDriver(t, e)
	_, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	_, err = r.Apply(ctx, []foldersync.Change{write("a.md", "alpha", "")})
	require.NoError(t, err)

	// An Expect that is not what the driver last saw: nothing is sent.
	puts := e.statuses.puts.Load()
	out, err := r.Apply(ctx, []foldersync.Change{write("a.md", "mine", hexSum("older")), write("new.md", "x", hexSum("x"))})
	require.NoError(t, err)
	assert.Equal(t, map[string]foldersync.Status{"a.md": foldersync.Mismatch, "new.md": foldersync.Mismatch}, statuses(out))
	assert.Equal(t, puts, e.statuses.puts.Load())

	// A teammate writes after this driver's read: its push gets 412, and
	// every change of it is a Mismatch; nothing of it is on the server.
	_, err = newDriver(t, e).Apply(ctx, []foldersync.Change{write("a.md", "theirs", hexSum("alpha"))})
	require.NoError(t, err)
	out, err = r.Apply(ctx, []foldersync.Change{write("a.md", "mine", hexSum("alpha")), write("b.md", "bee", "")})
	require.NoError(t, err)
	assert.Equal(t, map[string]foldersync.Status{"a.md": foldersync.Mismatch, "b.md": foldersync.Mismatch}, statuses(out))
	l, err := newDriver(t, e).List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	assert.Equal(t, hexSum("theirs"), l.Entries["a.md"].Sum)
	assert.NotContains(t, l.Entries, "b.md")

	// Listed again, the same push goes through.
	l, err = r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	out, err = r.Apply(ctx, []foldersync.Change{write("a.md", "mine", l.Entries["a.md"].Sum), write("b.md", "bee", "")})
	require.NoError(t, err)
	assert.Equal(t, map[string]foldersync.Status{"a.md": foldersync.Applied, "b.md": foldersync.Applied}, statuses(out))
}

// One key the protocol or the server cannot take is refused on its own;
// every other change of the push goes through.
func TestRemoteRefusesKeysOneByOne(t *testing.T) {
	ctx := context.Background()
	e := startDriverServer(t, teamserver.Options{MaxEntryBytes: 1000})
	r := newDriver(t, e)
	_, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	_, err = r.Apply(ctx, []foldersync.Change{write("x.md", "a file", "")})
	require.NoError(t, err)

	nfd := "cafe\u0301.md"
	out, err := r.Apply(ctx, []foldersync.Change{
		write("ok1.md", "fine", ""),
		write(nfd, "decomposed name", ""),
		write("a\u001b]0;TITLE\u0007.md", "escape in the name", ""),
		write("latin1.md", "caf\xe9", ""),
		write("nul.md", "a\x00b", ""),
		write("x.md/inner.md", "below a file", ""),     // the server refuses it, naming the key
		write("big.md", strings.Repeat("b", 2000), ""), // over this server's entry limit: refused without a key
		write("ok2.md", "fine too", ""),
	})
	require.NoError(t, err)
	got := map[string]foldersync.Outcome{}
	for _, o := range out {
		got[o.Path] = o
	}
	assert.Equal(t, foldersync.Applied, got["ok1.md"].Status)
	assert.Equal(t, foldersync.Applied, got["ok2.md"].Status)
	for _, k := range []string{nfd, "a\u001b]0;TITLE\u0007.md", "latin1.md", "nul.md", "x.md/inner.md", "big.md"} {
		assert.Equal(t, foldersync.Refused, got[k].Status, k)
		assert.NotEmpty(t, got[k].Reason, k)
	}
	assert.True(t, strings.HasPrefix(got[nfd].Reason, "not_nfc:"), got[nfd].Reason)
	assert.True(t, strings.HasPrefix(got["latin1.md"].Reason, "not_utf8:"), got["latin1.md"].Reason)
	assert.True(t, strings.HasPrefix(got["nul.md"].Reason, "nul_byte:"), got["nul.md"].Reason)
	assert.Contains(t, got["x.md/inner.md"].Reason, "team_memory_key_conflict")
	assert.Contains(t, got["big.md"].Reason, "team_memory_entry_too_large")
	assert.Len(t, out, 8)

	l, err := newDriver(t, e).List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"x.md", "ok1.md", "ok2.md"}, keysOf(l.Entries))
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRemoteCheck(t *testing.T) {
	r, err := teammem.NewRemote(teammem.Options{BaseURL: "http://127.0.0.1:1", Repo: "acme/shop", Token: "t"})
	require.NoError(t, err)
	for _, c := range []struct{ path, content, reason string }{
		{"fine.md", "text", ""},
		{"fine/ünï.md", "text", ""},
		{"cafe\u0301.md", "text", "not_nfc"},
		{"a\u001b]0;TITLE\u0007.md", "text", "invalid_key"},
		{"tab\t.md", "text", "invalid_key"},
		{"bin.md", "\xed\xa0\x80", "not_utf8"},
		{"nul.md", "a\x00", "nul_byte"},
		{"big.md", strings.Repeat("x", 250_001), "too_large"},
		{"hidden.md", "text\u200bmore", ""}, // the screens are the engine's: once for every driver
	} {
		why := r.Check(c.path, []byte(c.content))
		if c.reason == "" {
			assert.Empty(t, why, c.path)
			continue
		}
		code, _, _ := strings.Cut(why, ":")
		assert.Equal(t, c.reason, code, c.path)
	}
}

// The server's entry limit, once a 413 names it, refuses the new keys
// that do not fit; the rest of the push goes through.
func TestRemoteEntryLimit(t *testing.T) {
	ctx := context.Background()
	e := startDriverServer(t, teamserver.Options{MaxEntries: 3})
	r := newDriver(t, e)
	_, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	_, err = r.Apply(ctx, []foldersync.Change{write("a.md", "a", "")})
	require.NoError(t, err)
	out, err := r.Apply(ctx, []foldersync.Change{write("a.md", "a2", hexSum("a")), write("b.md", "b", ""), write("c.md", "c", ""), write("d.md", "d", "")})
	require.NoError(t, err)
	assert.Equal(t, map[string]foldersync.Status{"a.md": foldersync.Applied, "b.md": foldersync.Applied, "c.md": foldersync.Applied, "d.md": foldersync.Refused}, statuses(out))
}

// Many changes travel in several requests, each within the body limit;
// a change of one among many sends little more than that change.
func TestRemoteBatchesAndDeltas(t *testing.T) {
	ctx := context.Background()
	e := startDriverServer(t, teamserver.Options{})
	r := newDriver(t, e)
	_, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	var changes []foldersync.Change
	body := strings.Repeat("m", 1000)
	for i := range 500 {
		changes = append(changes, write(fmt.Sprintf("k%03d.md", i), body, ""))
	}
	puts := e.statuses.puts.Load()
	out, err := r.Apply(ctx, changes)
	require.NoError(t, err)
	require.Len(t, out, 500)
	for _, o := range out {
		require.Equal(t, foldersync.Applied, o.Status, o.Path)
	}
	assert.Greater(t, e.statuses.puts.Load()-puts, int64(2), "500 KB do not fit one request")
	_, full := r.Traffic()

	_, err = r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	_, before := r.Traffic()
	out, err = r.Apply(ctx, []foldersync.Change{write("k007.md", "edited", hexSum(body))})
	require.NoError(t, err)
	assert.Equal(t, foldersync.Applied, statuses(out)["k007.md"])
	_, after := r.Traffic()
	assert.Less(t, float64(after-before), 0.02*float64(full), "a delta push")
}

// The driver's long-poll returns when a teammate writes.
func TestRemoteWait(t *testing.T) {
	ctx := context.Background()
	e := startDriverServer(t, teamserver.Options{PollEvery: 20 * time.Millisecond})
	r := newDriver(t, e)
	_, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	_, err = r.Apply(ctx, []foldersync.Change{write("a.md", "a", "")})
	require.NoError(t, err)
	l, err := r.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	done := make(chan bool, 1)
	go func() {
		changed, err := r.Wait(ctx, l.Tag)
		assert.NoError(t, err)
		done <- changed
	}()
	time.Sleep(100 * time.Millisecond)
	_, err = newDriver(t, e).Apply(ctx, []foldersync.Change{write("b.md", "b", "")})
	require.NoError(t, err)
	select {
	case changed := <-done:
		assert.True(t, changed)
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end on a teammate's write")
	}
}

// The engine's watcher, woken by the driver's long-poll, brings a
// teammate's write in at once: it runs no interval rounds here.
func TestRemoteLongPollWakesTheWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := startDriverServer(t, teamserver.Options{})
	teammate := newDriver(t, e)
	_, err := teammate.Apply(ctx, []foldersync.Change{write("first.md", "one", "")})
	require.NoError(t, err)

	dir := t.TempDir()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	r := newDriver(t, e)
	eng, err := foldersync.New(d, dir, r, foldersync.Options{})
	require.NoError(t, err)
	rounds := make(chan foldersync.Event, 16)
	w, err := foldersync.StartWatcher(ctx, eng, foldersync.WatchOptions{Interval: -1, Debounce: 50 * time.Millisecond, Poll: time.Hour,
		Observer: func(ev foldersync.Event) { rounds <- ev }})
	require.NoError(t, err)
	defer w.Close()
	polled := make(chan error, 1)
	go func() { polled <- r.LongPoll(ctx, w.Notify) }()

	waitFor := func(name, want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && string(b) == want {
				return
			}
			select {
			case <-rounds:
			case <-time.After(20 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s never arrived", name)
			}
		}
	}
	waitFor("first.md", "one") // the watcher's first round
	time.Sleep(100 * time.Millisecond)
	_, err = teammate.List(ctx, foldersync.Listing{})
	require.NoError(t, err)
	_, err = teammate.Apply(ctx, []foldersync.Change{write("second.md", "two", "")})
	require.NoError(t, err)
	waitFor("second.md", "two")
	cancel()
	select {
	case err := <-polled:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll did not end with its context")
	}
}

// A server that cannot wait says so, and the long-poll stops.
func TestRemoteLongPollUnsupported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"unknown view","details":{"error_code":"team_memory_invalid_view"}}}`))
	}))
	defer srv.Close()
	r, err := teammem.NewRemote(teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: "t"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.ErrorIs(t, r.LongPoll(ctx, func() {}), teammem.ErrLongPollUnsupported)
}

// teamControl acts on a real team server's store from outside the
// driver: a teammate's writes, an operator's backup, restore and
// replacement, and a store that loses a key without a record.
type teamControl struct {
	srv   *swappable
	store teamserver.Store
}

var acmeShop = teamserver.Repo{Tenant: "acme", Name: "acme/shop"}

func (c *teamControl) put(t testing.TB, req teamserver.PutRequest) {
	t.Helper()
	req.Author, req.Now = "teammate", time.Now()
	if _, err := c.store.Put(context.Background(), acmeShop, req); err != nil {
		t.Fatalf("control: %v", err)
	}
}

func (c *teamControl) Write(t testing.TB, path string, content []byte) {
	c.put(t, teamserver.PutRequest{Entries: map[string]string{path: string(content)}})
}

func (c *teamControl) Remove(t testing.TB, path string) {
	c.put(t, teamserver.PutRequest{Deletes: []string{path}})
}

func (c *teamControl) entries(t testing.TB) (map[string]string, int64) {
	t.Helper()
	snap, err := c.store.Get(context.Background(), acmeShop, true)
	if err != nil {
		return map[string]string{}, 0 // no repo yet
	}
	return snap.Entries, snap.Version
}

func (c *teamControl) Read(t testing.TB, path string) ([]byte, bool) {
	e, _ := c.entries(t)
	v, ok := e[path]
	return []byte(v), ok
}

// rebuild puts a store in the server's place holding entries, under the
// identity id ("" for a new one), at a version of at least minVersion
// (moved on by writing and deleting a dot-file no folder syncs).
func (c *teamControl) rebuild(t testing.TB, id string, entries map[string]string, minVersion int64) {
	t.Helper()
	var store teamserver.Store = teamserver.NewMemoryStore()
	if id != "" {
		store = sameID{Store: store, id: id}
	}
	c.store = store
	if len(entries) > 0 {
		c.put(t, teamserver.PutRequest{Entries: entries})
	}
	for _, v := c.entries(t); v < minVersion; _, v = c.entries(t) {
		c.put(t, teamserver.PutRequest{Entries: map[string]string{".bump": "x"}})
		c.put(t, teamserver.PutRequest{Deletes: []string{".bump"}})
	}
	c.srv.swap(t, store)
}

// Backup keeps the repo's content; the restore puts a store of the same
// identity back holding it, at the version one write makes (no later
// than the backup's).
func (c *teamControl) Backup(t testing.TB) func() {
	saved, _ := c.entries(t)
	id := c.store.ID()
	return func() { c.rebuild(t, id, saved, 0) }
}

func (c *teamControl) Replace(t testing.TB, files map[string][]byte) {
	entries := map[string]string{}
	for p, b := range files {
		entries[p] = string(b)
	}
	c.rebuild(t, "", entries, 0)
}

func (c *teamControl) Lose(t testing.TB, path string) {
	entries, version := c.entries(t)
	delete(entries, path)
	c.rebuild(t, c.store.ID(), entries, version+1)
}

func teamRemote(t *testing.T) (foldersync.Remote, remotetest.Control) {
	s := startSwappable(t)
	store := teamserver.NewMemoryStore()
	s.swap(t, store)
	r, err := teammem.NewRemote(teammem.Options{BaseURL: s.url, Repo: "acme/shop", Token: s.token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return r, &teamControl{srv: s, store: store}
}

// The team driver keeps the Remote contract, on a real team server.
func TestTeamRemoteConformance(t *testing.T) {
	remotetest.Run(t, teamRemote)
}

// The engine's rules hold through the team driver, on a real team
// server.
func TestTeamRemoteEngine(t *testing.T) {
	remotetest.RunEngine(t, teamRemote)
}

// TestPullCheckpointUndoesAPull: with Options.History a pull that
// changes files takes a checkpoint; rewinding it restores the edited file
// and removes the new one. A pull that changes nothing takes none.
func TestPullCheckpointUndoesAPull(t *testing.T) {
	ctx := context.Background()
	e := startServer(t, 100)
	a, b := t.TempDir(), t.TempDir()
	history, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(t.TempDir(), "config"), "team-pull", filehistory.Options{})
	require.NoError(t, err)
	ca := newClient(t, e, a, nil)
	cb := newClient(t, e, b, func(c *teammem.Options) { c.History = history })
	var sa, sb teammem.SyncState

	writeFiles(t, a, map[string]string{"ci.md": "CI stays green\n"})
	_, err = ca.Push(ctx, &sa)
	require.NoError(t, err)
	res, err := cb.Pull(ctx, &sb)
	require.NoError(t, err)
	require.NotEmpty(t, res.Checkpoint)

	writeFiles(t, a, map[string]string{"ci.md": "CI may be red on Fridays\n", "deploy.md": "deploy any time\n"})
	_, err = ca.Push(ctx, &sa)
	require.NoError(t, err)
	res, err = cb.Pull(ctx, &sb)
	require.NoError(t, err)
	require.NotEmpty(t, res.Checkpoint)
	assert.ElementsMatch(t, []string{"ci.md", "deploy.md"}, res.Pulled)

	_, err = history.Rewind(ctx, res.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, "CI stays green\n", readFile(t, filepath.Join(b, "ci.md")))
	_, err = os.Stat(filepath.Join(b, "deploy.md"))
	assert.True(t, os.IsNotExist(err))

	before := len(history.Snapshots())
	res, err = cb.Pull(ctx, &sb)
	require.NoError(t, err)
	assert.Empty(t, res.Checkpoint)
	assert.Len(t, history.Snapshots(), before, "a pull that writes nothing takes no checkpoint")
}

// A team directory the client synced continues under the engine from
// the client's base: nothing is pulled back, pushed again or kept aside,
// a deletion made since propagates, and the client's next run continues
// from what the engine agreed on.
func TestStateMirrorHandsTheBaseOver(t *testing.T) {
	ctx := context.Background()
	e := startServer(t, 0)
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	writeFiles(t, dir, map[string]string{"a.md": "alpha", "b.md": "bee", "c.md": "sea"})
	c := newClient(t, e, dir, func(o *teammem.Options) { o.StateFile = state })
	_, err := c.Sync(ctx, &teammem.SyncState{})
	require.NoError(t, err)

	// Since the client's last run: a.md deleted here, c.md edited here.
	require.NoError(t, os.Remove(filepath.Join(dir, "a.md")))
	writeFiles(t, dir, map[string]string{"c.md": "sea, edited"})

	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	eng, err := foldersync.New(d, dir, c.Remote(), foldersync.Options{Mirror: c.StateMirror(), BasisPath: filepath.Join(dir, ".basis")})
	require.NoError(t, err)
	res, err := eng.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md"}, res.DeletedRemote, "the base says a.md was agreed: its removal here is a deletion")
	assert.Equal(t, []string{"c.md"}, res.Pushed)
	assert.Empty(t, res.Pulled)
	assert.Empty(t, res.Conflicts)
	assert.False(t, res.BasisReset)
	assert.Equal(t, map[string]string{"b.md": "bee", "c.md": "sea, edited"}, serverEntries(t, e))

	// The client takes over again from the engine's base.
	writeFiles(t, dir, map[string]string{"d.md": "dee"})
	require.NoError(t, os.Remove(filepath.Join(dir, "b.md")))
	var st teammem.SyncState
	out, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"d.md"}, out.Pushed)
	assert.Equal(t, []string{"b.md"}, out.DeletedRemote)
	assert.Empty(t, out.Pulled)
	assert.Empty(t, out.Conflicts)
	assert.Empty(t, st.Reset)
	assert.Equal(t, map[string]string{"c.md": "sea, edited", "d.md": "dee"}, serverEntries(t, e))
}

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
// with a credential, one that knows no rule lets it go (and the server
// refuses it, as every route refuses a credential).
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
			// The team directory's scanner knows no rule, so the client
			// sends it; the server refuses it as a credential.
			require.NoError(t, err)
			assert.Equal(t, []foldersync.Skip{{Path: "ci.md", Reason: "refused: secret: an entry holds a credential (GitHub PAT): remove it from the memory"}}, res.Skipped)
			continue
		}
		require.NoError(t, err)
		assert.Contains(t, fmt.Sprint(res.Skipped), "secret", "the default scanner holds the file back")
	}
}

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

// An agent's write to a repo under review stays in its folder, reported
// in review, until a person approves it; no other client's pull gets it
// before; no sync of its author deletes it; a rejected one never reaches
// anyone and is reported as rejected.
func TestReviewKeepsAnAgentsWriteUntilApproved(t *testing.T) {
	ctx := context.Background()
	store := teamserver.NewMemoryStore()
	var grants []teamserver.TokenGrant
	tokens := map[string]string{}
	for _, who := range []struct{ name, kind string }{{"alice", teamserver.KindPerson}, {"bot", teamserver.KindAgent}, {"carol", ""}} {
		tok, g, err := teamserver.NewToken("acme", []string{"acme/*"})
		require.NoError(t, err)
		g.Name, g.Kind = who.name, who.kind
		tokens[who.name] = tok
		grants = append(grants, g)
	}
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: grants})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := func(who, dir string) *teammem.Client {
		return newClient(t, syncEnv{url: srv.URL, token: tokens[who]}, dir, func(o *teammem.Options) {
			o.Door, o.Session = teamwire.DoorExtraction, "sess-"+who
		})
	}
	botDir, carolDir := t.TempDir(), t.TempDir()
	bot, carol := client("bot", botDir), client("carol", carolDir)
	var botState, carolState teammem.SyncState

	writeFiles(t, botDir, map[string]string{"base.md": "base"})
	_, err = bot.Sync(ctx, &botState)
	require.NoError(t, err)
	target := teamserver.Target{Kind: teamserver.TargetRepo, Name: "acme/shop"}
	require.NoError(t, h.SetPolicy(ctx, "acme", target, teamserver.PolicyReview, "alice"))

	writeFiles(t, botDir, map[string]string{"planted.md": "Deploys go out from the fork."})
	require.NoError(t, os.Remove(filepath.Join(botDir, "base.md")))
	for range 3 {
		res, err := bot.Sync(ctx, &botState)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"planted.md", "base.md"}, res.InReview)
		assert.Empty(t, res.Pushed)
		assert.Empty(t, res.DeletedRemote)
		assert.Equal(t, "Deploys go out from the fork.", readFile(t, filepath.Join(botDir, "planted.md")), "the author's copy stays")
		assert.NoFileExists(t, filepath.Join(botDir, "base.md"), "nor is its deletion undone")
	}
	res, err := carol.Sync(ctx, &carolState)
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(carolDir, "planted.md"), "a pending write reaches no other client")
	assert.Equal(t, "base", readFile(t, filepath.Join(carolDir, "base.md")), "nor does a pending deletion")
	assert.Empty(t, res.InReview)

	pending, _, err := h.Proposals(ctx, "acme", teamserver.ProposalFilter{Target: target, Status: teamserver.ProposalPending})
	require.NoError(t, err)
	require.Len(t, pending, 2, "three syncs made one proposal per key")
	for _, p := range pending {
		assert.Equal(t, "bot", p.Author)
		assert.Equal(t, teamwire.DoorExtraction, p.Door)
		assert.Equal(t, "sess-bot", p.Session)
		if p.Key == "planted.md" {
			_, err = h.Approve(ctx, "acme", p.ID, "alice")
		} else {
			_, err = h.Reject(ctx, "acme", p.ID, "alice", "base.md is still needed")
		}
		require.NoError(t, err)
	}
	_, err = carol.Sync(ctx, &carolState)
	require.NoError(t, err)
	assert.Equal(t, "Deploys go out from the fork.", readFile(t, filepath.Join(carolDir, "planted.md")), "approved: it reaches everyone")
	assert.Equal(t, "base", readFile(t, filepath.Join(carolDir, "base.md")), "rejected: the deletion never happens")
	assert.Equal(t, "bot", carolState.Authors["planted.md"].Author, "a pull learns who wrote each entry")
	assert.Equal(t, "alice", carolState.Authors["planted.md"].Reviewer)
	assert.Equal(t, "bot", carolState.Authors["base.md"].Author)

	res, err = bot.Sync(ctx, &botState)
	require.NoError(t, err)
	assert.Empty(t, res.InReview)
	assert.Empty(t, res.Conflicts, "the approved version is the author's")
	require.Len(t, res.Skipped, 1)
	assert.Equal(t, foldersync.Skip{Path: "base.md", Reason: foldersync.SkipRejected + ": base.md is still needed"}, res.Skipped[0])
	all, _, err := h.Proposals(ctx, "acme", teamserver.ProposalFilter{Target: target})
	require.NoError(t, err)
	assert.Len(t, all, 2, "a rejected change sent again adds no proposal")
	hist, err := store.History(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, "planted.md", 5)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	assert.Equal(t, teamwire.Provenance{Door: teamwire.DoorExtraction, Session: "sess-bot", Reviewer: "alice"}, hist[0].Provenance)

	// An agent's restore waits for review too, and says so.
	_, err = store.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"base.md": "base v2"}, Author: "alice", Now: time.Now()})
	require.NoError(t, err)
	_, err = bot.Restore(ctx, "base.md", 1)
	require.ErrorIs(t, err, teammem.ErrInReview)
	got, err := store.Get(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, "base v2", got.Entries["base.md"], "nothing written")
}

// A malformed door, session or origin is refused when the client is made.
func TestClientRefusesMalformedProvenance(t *testing.T) {
	e := startServer(t, 10)
	for _, o := range []teammem.Options{{Door: "Bad Door"}, {Session: "a b"}, {Origin: "web"}} {
		cfg := teammem.Options{BaseURL: e.url, Repo: "acme/shop", Token: e.token, Door: o.Door, Session: o.Session, Origin: o.Origin}
		_, err := teammem.New(teamDirAt(afero.NewOsFs(), t.TempDir()), cfg)
		assert.Error(t, err)
	}
}

// BenchmarkEngineRound runs the sync engine's round through the team
// driver on a folder of 2,000 memories against a team server: x-floor
// is an unchanged round's time over a stat walk of the folder (both
// measured here), bytes-ratio what a round with one changed memory sends
// over what the first, full upload sent.
func BenchmarkEngineRound(b *testing.B) {
	const n = 2000
	ctx := context.Background()
	url, token, dir := benchFolder(b, n, b.TempDir())
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r, err := teammem.NewRemote(teammem.Options{BaseURL: url, Repo: "acme/bench", Token: token})
	if err != nil {
		b.Fatal(err)
	}
	e, err := foldersync.New(d, dir, r, foldersync.Options{})
	if err != nil {
		b.Fatal(err)
	}
	round := func() foldersync.Result {
		res, err := e.Round(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	full := benchUnchangedRounds(b, n, dir, round, r.Traffic, func(res foldersync.Result) bool { return !res.Changed() })

	if err := os.WriteFile(filepath.Join(dir, "m0007.md"), []byte("one changed memory"), 0o644); err != nil {
		b.Fatal(err)
	}
	_, before := r.Traffic()
	if res := round(); len(res.Pushed) != 1 {
		b.Fatalf("one changed memory: pushed %v", res.Pushed)
	}
	_, after := r.Traffic()
	b.ReportMetric(float64(after-before)/float64(full), "bytes-ratio")
	b.ReportMetric(float64(full), "full-bytes")
}

// benchFolder starts a team server and fills dir with n memories of 600
// bytes; it returns the server's URL and a token for acme/*.
func benchFolder(b *testing.B, n int, dir string) (url, token, folder string) {
	body := make([]byte, 600)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	if err != nil {
		b.Fatal(err)
	}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, MaxEntries: 5000, RatePerToken: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return srv.URL, token, dir
}

// benchUnchangedRounds runs the first round (which must push all n
// files; it returns the bytes traffic says it sent), ages the files past
// the stat cache's racy window as in a folder in use, settles, then times
// unchanged rounds against a stat walk of the folder, in turns so both
// meet the same load, and reports the ratio as x-floor.
func benchUnchangedRounds(b *testing.B, n int, dir string, round func() foldersync.Result, traffic func() (int, int64), unchanged func(foldersync.Result) bool) (full int64) {
	if res := round(); len(res.Pushed) != n {
		b.Fatalf("the first round pushed %d of %d", len(res.Pushed), n)
	}
	_, full = traffic()
	past := time.Now().Add(-time.Hour)
	for i := range n {
		if err := os.Chtimes(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), past, past); err != nil {
			b.Fatal(err)
		}
	}
	round() // settles what the first round learned
	round()
	walk := func() {
		if err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			_, err = de.Info()
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	var roundT, walkT time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if res := round(); !unchanged(res) {
			b.Fatalf("an unchanged folder's round did something: %+v", res)
		}
		roundT += time.Since(start)
		b.StopTimer()
		start = time.Now()
		walk()
		walkT += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(roundT)/float64(walkT), "x-floor")
	return full
}

// BenchmarkClientRound is BenchmarkEngineRound through the team client
// (Client.Sync: the driver, the SyncState, the store-folder check): one
// Client keeps its engine across calls, so an unchanged round reads no
// file. x-floor is an unchanged Sync's time over a stat walk of the
// folder, both measured here, in turns.
func BenchmarkClientRound(b *testing.B) {
	const n = 2000
	ctx := context.Background()
	url, token, dir := benchFolder(b, n, filepath.Join(b.TempDir(), "team"))
	c, err := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: url, Repo: "acme/bench", Token: token})
	if err != nil {
		b.Fatal(err)
	}
	var st teammem.SyncState
	round := func() foldersync.Result {
		res, err := c.Sync(ctx, &st)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	benchUnchangedRounds(b, n, dir, round, func() (int, int64) { return 0, 0 }, func(res foldersync.Result) bool { return res.Unchanged })
}

// BenchmarkDeltaPush pushes 1,000 entries of which 1 % changed, and
// reports bytes and requests against a full upload of the same tree
// (bytes-ratio, requests-ratio).
func BenchmarkDeltaPush(b *testing.B) {
	token, grant, _ := teamserver.NewToken("acme", []string{"acme/*"})
	store := teamserver.NewMemoryStore()
	h, _ := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, MaxEntries: 5000})
	srv := httptest.NewServer(h)
	defer srv.Close()
	dir := b.TempDir()
	body := make([]byte, 600)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	for i := 0; i < 1000; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c, _ := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: token})
	var st teammem.SyncState
	if _, err := c.Push(context.Background(), &st); err != nil {
		b.Fatal(err)
	}
	fullRequests, fullBytes := c.Remote().Traffic()
	var deltaRequests int
	var deltaBytes int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for k := 0; k < 10; k++ { // 1 % of 1,000
			content := fmt.Sprintf("changed %d %d", i, k)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", (i*10+k)%1000)), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		n0, b0 := c.Remote().Traffic()
		if _, err := c.Push(context.Background(), &st); err != nil {
			b.Fatal(err)
		}
		n1, b1 := c.Remote().Traffic()
		deltaRequests, deltaBytes = n1-n0, b1-b0
	}
	b.ReportMetric(float64(deltaBytes), "delta-bytes")
	b.ReportMetric(float64(fullBytes), "full-bytes")
	b.ReportMetric(float64(deltaBytes)/float64(fullBytes), "bytes-ratio")
	b.ReportMetric(float64(deltaRequests)/float64(fullRequests), "requests-ratio")
}

// BenchmarkHashesView measures view=hashes requests per second against
// the in-memory store from 8 concurrent clients on loopback, in the same run
// as a floor handler that returns a constant body of the same size, and
// reports x-floor (time per request relative to the floor).
func BenchmarkHashesView(b *testing.B) {
	token, grant, _ := teamserver.NewToken("acme", []string{"acme/*"})
	store := teamserver.NewMemoryStore()
	entries := map[string]string{}
	for i := 0; i < 200; i++ {
		entries[fmt.Sprintf("notes/m%03d.md", i)] = fmt.Sprintf("memory %d", i)
	}
	if _, err := store.Put(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: entries, Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	h, _ := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, RatePerToken: -1})
	real := httptest.NewServer(h)
	defer real.Close()
	sample, err := get(real.URL+teamwire.DefaultSyncPath+"?repo=acme/shop&view=hashes", token)
	if err != nil {
		b.Fatal(err)
	}
	floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(sample)
	}))
	defer floor.Close()

	var failures sync.Map
	run := func(url string, n int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		per := (n + 7) / 8
		for w := 0; w < 8; w++ {
			wg.Go(func() {
				for i := 0; i < per; i++ {
					if _, err := get(url, token); err != nil {
						failures.Store(err.Error(), true)
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	path := teamwire.DefaultSyncPath + "?repo=acme/shop&view=hashes"
	b.ResetTimer()
	realT := run(real.URL+path, b.N)
	b.StopTimer()
	floorT := run(floor.URL+path, b.N)
	failures.Range(func(k, _ any) bool { b.Fatalf("request failed: %v", k); return false })
	b.ReportMetric(float64(b.N)/realT.Seconds(), "req/s")
	b.ReportMetric(float64(realT)/float64(floorT), "x-floor")
}

func get(url, token string) ([]byte, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return body, err
}

// A person's write to a new repo under review goes out in the same push
// as an agent's proposal: the batch held for review does not move the
// repo, so the next batch must not be sent as if it had (it was refused
// with 412 on every round, and the person's memory never reached anyone).
func TestAPersonsWriteIsNotHeldBehindAProposalInANewRepo(t *testing.T) {
	ctx := context.Background()
	store, c, _ := heldThenPersonsWrite(t, nil)
	var st teammem.SyncState
	res, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"deploy.md"}, res.Pushed)
	assert.Equal(t, []string{"MEMORY.md"}, res.InReview)
	got, err := store.Get(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	assert.Equal(t, "Deploys on Tuesdays.\n", got.Entries["deploy.md"], "the person's write is in the repo")
	assert.NotContains(t, got.Entries, "MEMORY.md")
}

// heldThenPersonsWrite starts a server whose repo acme/shop, not created
// yet, is under review, and a person's (lee's) client on a folder where
// a sub-agent wrote MEMORY.md (origin other-agent: held for review) and
// the person deploy.md; its requests go through doer when not nil.
func heldThenPersonsWrite(t *testing.T, doer teammem.HTTPDoer) (teamserver.Store, *teammem.Client, string) {
	t.Helper()
	ctx := context.Background()
	store := teamserver.NewMemoryStore()
	tok, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	grant.Name, grant.Kind = "lee", teamserver.KindPerson
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	require.NoError(t, h.SetPolicy(ctx, "acme", teamserver.Target{Kind: teamserver.TargetRepo, Name: "acme/shop"}, teamserver.PolicyReview, "lee"))

	dir := t.TempDir()
	d := teamDirAt(afero.NewOsFs(), dir)
	sub := d.WithProvenance(memdir.Provenance{Door: teamwire.DoorMCP, Origin: teamwire.OriginOtherAgent})
	_, err = sub.Gate().WriteFile(ctx, filepath.Join(dir, "MEMORY.md"), []byte("- [Deploys](deploy.md)\n"), 0o644)
	require.NoError(t, err)
	writeFiles(t, dir, map[string]string{"deploy.md": "Deploys on Tuesdays.\n"})
	c, err := teammem.New(d, teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: tok, HTTP: doer,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return store, c, dir
}

// beforeFirstPut runs hook once, just before the first PUT it sends.
type beforeFirstPut struct {
	once sync.Once
	hook func()
}

func (b *beforeFirstPut) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut {
		b.once.Do(b.hook)
	}
	return http.DefaultClient.Do(req)
}

// A teammate creates the repo between this client's read (no repo yet)
// and its push, whose first batch is held for review whole: the reply
// shows the repo moved, so the next batch is not sent without If-Match
// over the teammate's new entry; the round looks again and keeps both.
func TestAHeldBatchNoticesATeammatesNewRepo(t *testing.T) {
	ctx := context.Background()
	var store teamserver.Store
	teammate := func() {
		_, err := store.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: map[string]string{"deploy.md": "Deploys on Fridays, says Ana.\n"}, Author: "ana", Now: time.Now()})
		require.NoError(t, err)
	}
	store, c, dir := heldThenPersonsWrite(t, &beforeFirstPut{hook: teammate})
	var st teammem.SyncState
	res, err := c.Sync(ctx, &st)
	require.NoError(t, err)
	got, err := store.Get(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	theirs := got.Entries["deploy.md"]
	mine := readFile(t, filepath.Join(dir, "deploy.md"))
	kept := theirs == "Deploys on Fridays, says Ana.\n" || len(res.Conflicts) == 1
	assert.True(t, kept, "the teammate's deploy.md was replaced without a conflict: server %q, here %q, result %+v", theirs, mine, res)
	if theirs != "Deploys on Fridays, says Ana.\n" {
		require.Len(t, res.Conflicts, 1)
		saved, err := os.ReadFile(res.Conflicts[0].SavedAs)
		require.NoError(t, err)
		assert.Contains(t, string(saved)+mine, "Deploys on Fridays, says Ana.", "the teammate's version is kept here")
	}
}
