package teammem_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultProxy serves the real handler behind a script of faults, one per
// request: "500", "429" (Retry-After: 1), "reset" (the connection drops
// before the server sees the request), "reset-after" (the server applies
// the request, then the connection drops before the reply), "slow" (the
// reply comes after the client's timeout), "" (pass).
type faultProxy struct {
	mu     sync.Mutex
	script []string
	seen   []string
	h      http.Handler
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	mode := ""
	if len(p.script) > 0 {
		mode, p.script = p.script[0], p.script[1:]
	}
	p.seen = append(p.seen, r.Method+" "+mode)
	p.mu.Unlock()
	drop := func() {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	switch mode {
	case "500":
		w.WriteHeader(500)
	case "429":
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(429)
	case "reset":
		drop()
	case "reset-after":
		p.h.ServeHTTP(httptest.NewRecorder(), r)
		drop()
	case "slow":
		time.Sleep(300 * time.Millisecond)
		p.h.ServeHTTP(w, r)
	default:
		p.h.ServeHTTP(w, r)
	}
}

func faultEnv(t *testing.T) (*faultProxy, syncEnv) {
	t.Helper()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	store := teamserver.NewMemoryStore()
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	require.NoError(t, err)
	p := &faultProxy{h: h}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, syncEnv{url: srv.URL, token: token, store: store}
}

func consistent(t *testing.T, e syncEnv) map[string]string {
	t.Helper()
	got, err := e.store.Get(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	if err != nil {
		return nil
	}
	sums := map[string]string{}
	for k, v := range got.Entries {
		sums[k] = teamwire.EntryChecksum(v)
	}
	assert.Equal(t, teamwire.RepoChecksum(sums), got.Checksum, "the server's checksum is the function of its entries")
	return got.Entries
}

func TestFaultsRetriedWithinBounds(t *testing.T) {
	p, e := faultEnv(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "alpha"})
	var delays []time.Duration
	c := newClient(t, e, dir, func(cfg *teammem.Options) {
		cfg.HTTP = &http.Client{Timeout: 100 * time.Millisecond}
		cfg.Jitter = func() float64 { return 0 }
		cfg.Sleep = func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }
	})
	p.script = []string{"", "500", "429", "reset"} // the hashes view passes; the PUT meets the faults
	_, err := c.Push(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	n, _ := requests(c)
	assert.Equal(t, 5, n)
	assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}, delays, "backoff, then Retry-After, then backoff")
	assert.Equal(t, map[string]string{"a.md": "alpha"}, consistent(t, e))

	// A slow reply times out and is retried; the timeout class shows when
	// it never stops.
	writeFiles(t, dir, map[string]string{"b.md": "beta"})
	p.script = []string{"slow"}
	st := teammem.SyncState{}
	_, err = c.Pull(context.Background(), &st)
	require.NoError(t, err)
	res, err := c.Push(context.Background(), &st)
	require.NoError(t, err)
	assert.Equal(t, []string{"b.md"}, res.Pushed)
	p.script = []string{"slow", "slow", "slow", "slow"}
	_, err = c.Pull(context.Background(), &st)
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teammem.ClassTimeout, se.Class)
	assert.Equal(t, 4, se.Attempts)
	time.Sleep(400 * time.Millisecond) // let the slow handlers finish
	assert.Equal(t, map[string]string{"a.md": "alpha", "b.md": "beta"}, consistent(t, e))
}

func TestFaultsGiveUpHonestly(t *testing.T) {
	p, e := faultEnv(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "alpha"})
	c := newClient(t, e, dir, nil)
	p.script = []string{"", "500", "500", "500", "500", "500"}
	res, err := c.Push(context.Background(), &teammem.SyncState{})
	var se *teammem.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 500, se.Status)
	n, _ := requests(c)
	assert.Equal(t, 5, n, "the hashes view, then a PUT with 3 retries, no more")
	assert.Empty(t, res.Pushed, "nothing reported as uploaded")
	assert.False(t, se.Permanent())
	assert.Nil(t, consistent(t, e))
}

func TestResetAfterApplyIsResolved(t *testing.T) {
	// The server applied the PUT but the reply was lost.
	p, e := faultEnv(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "alpha"})
	c := newClient(t, e, dir, nil)
	var st teammem.SyncState
	_, err := c.Push(context.Background(), &st) // the repo exists: the ETag is known
	require.NoError(t, err)

	// With If-Match, the retry meets a 412 (the checksum moved), the client
	// probes, finds its content there and stops: applied once, and no
	// upload claimed that was never acknowledged.
	writeFiles(t, dir, map[string]string{"b.md": "beta"})
	p.script = []string{"", "reset-after"}
	res, err := c.Push(context.Background(), &st)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a.md": "alpha", "b.md": "beta"}, consistent(t, e))
	got, err := e.store.Get(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, false)
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Version, "applied once")
	assert.Empty(t, res.Pushed)
	assert.Equal(t, []string{"PUT reset-after", "PUT ", "GET "}, p.seen[len(p.seen)-3:], "retry, 412, read again")

	// Without an ETag (a first push) the retried upsert applies the same
	// content again: harmless, and this time acknowledged.
	p2, e2 := faultEnv(t)
	dir2 := t.TempDir()
	writeFiles(t, dir2, map[string]string{"a.md": "alpha"})
	p2.script = []string{"", "reset-after"}
	res, err = newClient(t, e2, dir2, nil).Push(context.Background(), &teammem.SyncState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.md"}, res.Pushed)
	assert.Equal(t, map[string]string{"a.md": "alpha"}, consistent(t, e2))
}
