package teammem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// putLog records every successful PUT: its entries and the version the
// server gave it.
type putLog struct {
	mu   sync.Mutex
	puts []loggedPut
}

type loggedPut struct {
	version int64
	entries map[string]string
}

type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(s int)           { r.status = s; r.ResponseWriter.WriteHeader(s) }
func (r *recorder) Write(b []byte) (int, error) { r.body.Write(b); return r.ResponseWriter.Write(b) }

func (l *putLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{ResponseWriter: w, status: 200}
		h.ServeHTTP(rec, r)
		if rec.status != 200 {
			return
		}
		var in teamwire.PutBody
		var out teamwire.PutResult
		if json.Unmarshal(body, &in) == nil && json.Unmarshal(rec.body.Bytes(), &out) == nil {
			l.mu.Lock()
			l.puts = append(l.puts, loggedPut{version: out.Version, entries: in.Entries})
			l.mu.Unlock()
		}
	})
}

func TestEightClientsNoLostUpdate(t *testing.T) {
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	store := teamserver.NewMemoryStore()
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	require.NoError(t, err)
	log := &putLog{}
	srv := httptest.NewServer(log.wrap(h))
	defer srv.Close()
	e := syncEnv{url: srv.URL, token: token}

	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Go(func() {
			dir := t.TempDir()
			client := newClient(t, e, dir, nil)
			var st teammem.SyncState
			for i := 0; i < 12; i++ {
				writeFiles(t, dir, map[string]string{fmt.Sprintf("k%d.md", (c+i)%4): fmt.Sprintf("client %d iteration %d", c, i)})
				if _, err := client.Push(context.Background(), &st); err != nil {
					var se *teammem.SyncError
					// Conflicts past the retry budget are allowed; nothing else.
					if !assert.ErrorAs(t, err, &se) || !assert.Equal(t, teammem.ClassConflict, se.Class) {
						return
					}
				}
			}
		})
	}
	wg.Wait()

	final, err := store.Get(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, true)
	require.NoError(t, err)
	// Every key's final value is the one its latest successful PUT sent.
	latest := map[string]loggedPut{}
	for _, p := range log.puts {
		for k := range p.entries {
			if p.version > latest[k].version {
				latest[k] = p
			}
		}
	}
	require.NotEmpty(t, latest)
	for k, p := range latest {
		assert.Equal(t, p.entries[k], final.Entries[k], "key %s", k)
	}
	assert.Equal(t, int64(len(log.puts)), final.Version, "one version per successful PUT")
	sums := map[string]string{}
	for k, v := range final.Entries {
		sums[k] = teamwire.EntryChecksum(v)
	}
	assert.Equal(t, teamwire.RepoChecksum(sums), final.Checksum)
}
