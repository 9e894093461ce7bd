package httpretry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWhatIsRetried pins the one retry rule of both sync protocols: a
// 429 and a 5xx are sent again (honouring Retry-After, capped), a full
// disk (507) and every 4xx are answered at once.
func TestWhatIsRetried(t *testing.T) {
	for status, want := range map[int]int{429: 4, 500: 4, 503: 4, 507: 1, 400: 1, 401: 1, 409: 1, 412: 1, 200: 1} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			assert.Equal(t, "yes", r.Header.Get("X-Every"))
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(status)
		}))
		var waits []time.Duration
		p := httpretry.Policy{HTTP: srv.Client(), MaxDelay: 7 * time.Second,
			Header: func(h http.Header) { h.Set("X-Every", "yes") },
			Sleep:  func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
		reply, err := p.Send(context.Background(), http.MethodPost, srv.URL, []byte("{}"), nil)
		require.NoError(t, err)
		assert.Equal(t, status, reply.Status)
		assert.Equal(t, want, int(calls.Load()), "%d", status)
		assert.Equal(t, want, reply.Attempts)
		for _, d := range waits {
			assert.Equal(t, 7*time.Second, d, "Retry-After is capped at MaxDelay")
		}
		assert.Equal(t, want > 1, httpretry.Retried(status), "Retried(%d) says what Send does", status)
		srv.Close()
	}
}

// TestNoAnswerIsRetriedThenNamed: a refused connection is tried again
// with a doubling wait and then reported as a NetError.
func TestNoAnswerIsRetriedThenNamed(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	var waits []time.Duration
	p := httpretry.Policy{Retries: 2, BaseDelay: time.Second, Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	_, err := p.Send(context.Background(), http.MethodGet, url, nil, nil)
	var ne *httpretry.NetError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, 3, ne.Attempts)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, waits)
	assert.Contains(t, ne.Error(), "could not be reached")
}

// TestAnEndedContextStops: a context that ends during the wait stops the
// retries with its error.
func TestAnEndedContextStops(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := httpretry.Policy{}.Send(ctx, http.MethodGet, srv.URL, nil, nil)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestAnUntrustedCertificateIsNotRetried: a TLS failure says what to fix
// and is sent once.
func TestAnUntrustedCertificateIsNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	_, err := httpretry.Policy{Sleep: func(context.Context, time.Duration) error { t.Fatal("retried"); return nil }}.Send(context.Background(), http.MethodGet, srv.URL, nil, nil)
	var ne *httpretry.NetError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, 1, ne.Attempts)
	assert.Contains(t, ne.TLS, "authority this machine does not trust")
}

// A Retry-After beyond MaxDelay, however large, waits MaxDelay.
func TestRetryAfterIsCapped(t *testing.T) {
	p := httpretry.Policy{MaxDelay: 5 * time.Second}
	for _, v := range []string{"6", "3600", "99999999999999999", "9223372036854775807"} {
		assert.Equal(t, 5*time.Second, p.Delay(1, v), v)
	}
	assert.Equal(t, 2*time.Second, p.Delay(1, "2"))
}
