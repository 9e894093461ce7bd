package teamserver_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/storewire"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labels records the metrics' route labels.
type labels struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *labels) Request(route string, _ int, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[route] = true
}

func (l *labels) StoreCall(string, time.Duration) {}

// A flood of unauthenticated requests with huge, distinct parameters
// leaves the metrics with a fixed set of labels and the log with a
// bounded record per request.
func TestUnauthenticatedFloodStaysBounded(t *testing.T) {
	m := &labels{seen: map[string]bool{}}
	f := newServer(t, func(o *teamserver.Options) { o.Metrics = m })
	const n = 120
	var last string
	for i := range n {
		raw := make([]byte, 100<<10)
		_, _ = rand.Read(raw)
		big := hex.EncodeToString(raw) // 200 KB, different every time
		last = big
		method := []string{"GET", "PUT", "PROPFIND"}[i%3]
		u := f.srv.URL + teamwire.DefaultSyncPath + "?repo=" + big[:300] + "&view=" + url.QueryEscape(big)
		req, err := http.NewRequest(method, u, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusMethodNotAllowed}, resp.StatusCode)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	assert.LessOrEqual(t, len(m.seen), 3, "labels: %v", m.seen)
	for l := range m.seen {
		assert.LessOrEqual(t, len(l), 20, "a label from a fixed set")
	}
	assert.Less(t, f.logs.Len(), n*300, "about one short record per request, whatever the parameters")
	assert.NotContains(t, f.logs.String(), last[:32], "no parameter is logged as sent")
}

// Failed authentications are limited per client address: past the burst
// every request from it is 429, a valid token too, until time refills it.
func TestFailedAuthenticationIsRateLimitedPerAddress(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newServer(t, func(o *teamserver.Options) { o.Now = clock; o.AuthFailBurst = 5; o.AuthFailRate = 1 })
	for range 5 {
		resp, _ := f.do(t, "GET", "amt_wrong", "acme/shop", "", nil, nil)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	resp, body := f.do(t, "GET", "amt_wrong", "acme/shop", "", nil, nil)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, teamwire.CodeAuthRateLimited, errCode(t, body))
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	resp, _ = f.do(t, "GET", f.acme, "acme/shop", "", nil, nil)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the address is refused before its token is looked at")

	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	resp, _ = f.do(t, "GET", f.acme, "acme/shop", "", nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "refilled: a valid token is served (the repo is empty)")
	resp, _ = f.do(t, "GET", f.acme, "acme/shop", "", nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a success takes nothing from the budget")
}

// Every response says nosniff.
func TestEveryResponseIsNosniff(t *testing.T) {
	f := newServer(t, nil)
	for _, c := range []struct{ method, path, token string }{
		{"GET", teamwire.DefaultSyncPath + "?repo=acme/shop", f.acme},
		{"GET", teamwire.DefaultSyncPath + "?repo=acme/shop", ""},
		{"GET", "/nowhere", ""},
		{"GET", teamserver.HealthPath, ""},
		{"GET", storewire.StoresPath, f.acme},
		{"DELETE", teamwire.DefaultSyncPath, f.acme},
	} {
		req, err := http.NewRequest(c.method, f.srv.URL+c.path, nil)
		require.NoError(t, err)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "%s %s (%d)", c.method, c.path, resp.StatusCode)
	}
}
