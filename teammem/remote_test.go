package teammem_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
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
