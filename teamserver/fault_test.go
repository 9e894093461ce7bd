package teamserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultyStore fails every write with the error fail holds (nil: none),
// as SQLite and PostgreSQL report a full disk or a read-only database.
type faultyStore struct {
	teamserver.Store
	fail *atomic.Value
}

func (s faultyStore) CreateMemStore(ctx context.Context, tenant string, st teamserver.MemStore, l teamserver.StoreLimits, now time.Time) (teamserver.MemStore, error) {
	if err, _ := s.fail.Load().(error); err != nil {
		return teamserver.MemStore{}, err
	}
	return s.Store.CreateMemStore(ctx, tenant, st, l, now)
}

func (s faultyStore) Put(ctx context.Context, r teamserver.Repo, p teamserver.PutRequest) (teamserver.Snapshot, error) {
	if err, _ := s.fail.Load().(error); err != nil {
		return teamserver.Snapshot{}, err
	}
	return s.Store.Put(ctx, r, p)
}

// TestStorageFaultsNameTheirCause: a full disk answers 507 and a
// read-only database 503, each with Retry-After, its own code and words
// that name the cause (never the bare "could not complete the request"),
// and /readyz says not ready, naming it, until the fault is past.
func TestStorageFaultsNameTheirCause(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		status int
		code   string
		words  string
	}{
		{"sqlite full", fmt.Errorf("%w: database or disk is full (13)", teamserver.ErrStorageFull), http.StatusInsufficientStorage, "storage_full", "disk is full"},
		{"read-only", fmt.Errorf("%w: attempt to write a readonly database (8)", teamserver.ErrStoreReadOnly), http.StatusServiceUnavailable, "store_read_only", "read-only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fail := &atomic.Value{}
			fail.Store(c.err)
			f := newServerOn(t, faultyStore{teamserver.NewMemoryStore(), fail}, nil)
			resp, body := f.do(t, http.MethodPut, f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"a.md": "1"}}, nil)
			assert.Equal(t, c.status, resp.StatusCode, string(body))
			assert.Equal(t, "30", resp.Header.Get("Retry-After"))
			assert.Contains(t, string(body), c.code)
			assert.Contains(t, string(body), c.words)
			assert.NotContains(t, string(body), "could not complete")
			assert.Contains(t, f.logs.String(), strings.SplitN(c.err.Error(), ": ", 2)[1], "the log names the driver's words")

			r, err := http.Get(f.srv.URL + teamserver.ReadyPath)
			require.NoError(t, err)
			raw, _ := io.ReadAll(r.Body)
			r.Body.Close()
			assert.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "not ready while writes cannot land")
			var ready map[string]string
			require.NoError(t, json.Unmarshal(raw, &ready))
			assert.Contains(t, ready["cause"], c.words)
			// The Memory Stores API answers the same.
			tok, grant, err := teamserver.NewToken("acme", nil, "*")
			require.NoError(t, err)
			h, err := teamserver.NewHandler(faultyStore{teamserver.NewMemoryStore(), fail}, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
			require.NoError(t, err)
			ms := httptest.NewServer(h)
			defer ms.Close()
			req, err := http.NewRequest(http.MethodPost, ms.URL+"/v1/memory_stores", strings.NewReader(`{"name":"s"}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			r2, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			raw2, _ := io.ReadAll(r2.Body)
			r2.Body.Close()
			assert.Equal(t, c.status, r2.StatusCode, string(raw2))
			assert.Equal(t, "30", r2.Header.Get("Retry-After"))
			assert.Contains(t, string(raw2), c.words)
			// Reads still work.
			resp, _ = f.do(t, http.MethodGet, f.acme, "acme/shop", "", nil, nil)
			assert.NotEqual(t, http.StatusInternalServerError, resp.StatusCode)
		})
	}
}
