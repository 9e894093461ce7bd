package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// LoadOptions shape a Memory Stores load run.
type LoadOptions struct {
	// Clients is the number of concurrent clients (default 128).
	Clients int
	// Duration is how long the clients run at least (default 2 s); past
	// it they go on until as many writes as clients were acknowledged
	// (a slow machine, the race detector), for at most MaxDuration
	// (default 2 min).
	Duration    time.Duration
	MaxDuration time.Duration
	// Handler adjusts each server's options (nil: the defaults).
	Handler func(*teamserver.Options)
}

// LoadResult is what a load run saw.
type LoadResult struct {
	Requests int
	// Writes counts the acknowledged writes (2xx creates, updates and
	// deletes).
	Writes int
	// Status counts the answers by status.
	Status  map[int]int
	Elapsed time.Duration
}

// write is one write a client sent: on what (Pre, the content_sha256 it
// expected, "" for a create) and what it left (Post, "" for a delete).
type write struct {
	path      string
	pre, post string
	// acked: answered 2xx; unknown: no answer (it may have been applied).
	acked, unknown bool
}

type loadRun struct {
	acked  atomic.Int64
	mu     sync.Mutex
	status map[int]int
	writes []write
	odd    []string
}

func (l *loadRun) record(status int) {
	l.mu.Lock()
	l.status[status]++
	l.mu.Unlock()
}

func (l *loadRun) wrong(format string, args ...any) {
	l.mu.Lock()
	if len(l.odd) < 20 {
		l.odd = append(l.odd, fmt.Sprintf(format, args...))
	}
	l.mu.Unlock()
}

// RunMemoryStoresLoad serves one handler per store (stores that share a
// database make servers that share it) and drives o.Clients concurrent
// clients on one memory store through them, round robin: each lists the
// store, exports it, reads a memory, and creates, updates (with a content_sha256
// precondition) or deletes (with expected_content_sha256) memories of its
// own and memories every client contends for. It fails on any 5xx, on a
// 429 without Retry-After (a client waits as told and retries), on a read
// or an export line whose content does not match its hash (or an export
// without its complete line), and on an acknowledged write
// lost: every acknowledged write must be what the store holds at the end,
// or the base of a later write of the same memory, and no two
// acknowledged writes may have had the same base.
func RunMemoryStoresLoad(t *testing.T, stores []teamserver.TeamStore, o LoadOptions) LoadResult {
	t.Helper()
	if o.Clients <= 0 {
		o.Clients = 128
	}
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	if o.MaxDuration < o.Duration {
		o.MaxDuration = max(o.Duration, 2*time.Minute)
	}
	tokens := make([]string, o.Clients)
	grants := make([]teamserver.TokenGrant, o.Clients)
	for i := range tokens {
		tok, g, err := teamserver.NewToken("acme", nil, "*")
		require.NoError(t, err)
		g.Name = fmt.Sprintf("client%d", i)
		tokens[i], grants[i] = tok, g
	}
	var urls []string
	for _, s := range stores {
		opts := teamserver.Options{Tokens: grants}
		if o.Handler != nil {
			o.Handler(&opts)
		}
		h, err := teamserver.NewHandler(s, opts)
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.Clients}}
	t.Cleanup(client.CloseIdleConnections)

	var st storewire.Store
	code, body, _ := loadCall(context.Background(), client, urls[0], tokens[0], http.MethodPost, storewire.StoresPath, storewire.CreateStore{Name: "load"})
	require.Equal(t, http.StatusOK, code, string(body))
	require.NoError(t, json.Unmarshal(body, &st))
	base := storewire.StoresPath + "/" + st.ID

	run := &loadRun{status: map[int]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), o.MaxDuration)
	defer cancel()
	start := time.Now()
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if time.Since(start) >= o.Duration && run.acked.Load() >= int64(o.Clients) {
					cancel()
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for c := range o.Clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			loadClient(ctx, client, urls, tokens[c], base, c, rng, run)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	// The store as it is at the end, through the last server.
	final := map[string]string{} // path → content_sha256
	code, body, _ = loadCall(context.Background(), client, urls[len(urls)-1], tokens[0], http.MethodGet, base+"/memories/export?view=basic", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	complete := false
	for _, raw := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		var line storewire.Line
		require.NoError(t, json.Unmarshal(raw, &line))
		switch line.Type {
		case storewire.LineMemory:
			final[line.Path] = line.ContentSHA
		case storewire.LineComplete:
			complete = line.MemoryCount == len(final)
		}
	}
	require.True(t, complete, "the final export is whole")

	res := LoadResult{Status: run.status, Elapsed: elapsed}
	for _, n := range run.status {
		res.Requests += n
	}
	based := map[string]int{}       // path+base → acknowledged writes on it
	superseded := map[string]bool{} // path+sha a later write started from
	for _, w := range run.writes {
		if w.pre != "" && (w.acked || w.unknown) {
			superseded[w.path+" "+w.pre] = true
		}
		if w.acked {
			res.Writes++
			if w.pre != "" {
				based[w.path+" "+w.pre]++
			}
		}
	}
	lost := 0
	for _, w := range run.writes {
		switch {
		case !w.acked:
		case w.pre != "" && based[w.path+" "+w.pre] > 1:
			lost++
			run.wrong("%s: %d writes were acknowledged on the same base %s", w.path, based[w.path+" "+w.pre], w.pre[:8])
			based[w.path+" "+w.pre] = 1 // reported once
		case w.post != "" && final[w.path] != w.post && !superseded[w.path+" "+w.post]:
			lost++
			run.wrong("%s: the acknowledged write %s is neither in the store nor the base of a later write", w.path, w.post[:8])
		}
	}
	fives := 0
	for s, n := range run.status {
		if s >= 500 {
			fives += n
		}
	}
	t.Logf("%d clients on %d server(s): %d requests in %v (%.0f/s), %d acknowledged writes; by status %v; %d lost",
		o.Clients, len(stores), res.Requests, elapsed.Round(time.Millisecond), float64(res.Requests)/elapsed.Seconds(), res.Writes, run.status, lost)
	assert.Zero(t, lost, "acknowledged writes lost")
	assert.Zero(t, fives, "5xx answers")
	assert.Empty(t, run.odd, "unexpected answers")
	assert.Positive(t, res.Writes, "some writes were acknowledged")
	return res
}

// loadCall sends one request and returns the status (0: no answer) and
// the body; a 429 or 503 is waited out as its Retry-After says (waited:
// it said).
func loadCall(ctx context.Context, client *http.Client, base, token, method, path string, body any) (code int, out []byte, waited bool) {
	var r io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return 0, nil, false
	}
	req.Header.Set(storewire.APIKeyHeader, token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, false
	}
	defer resp.Body.Close()
	out, err = io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, false
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if s, err := strconv.Atoi(resp.Header.Get(storewire.RetryAfterHeader)); err == nil && s >= 0 {
			waited = true
			select {
			case <-time.After(min(time.Duration(s)*time.Second, 2*time.Second)):
			case <-ctx.Done():
			}
		}
	}
	return resp.StatusCode, out, waited
}

// loadClient runs one client until ctx ends.
func loadClient(ctx context.Context, client *http.Client, urls []string, token, base string, c int, rng *rand.Rand, run *loadRun) {
	n := 0
	call := func(method, path string, body any) (int, []byte) {
		n++
		code, out, waited := loadCall(ctx, client, urls[n%len(urls)], token, method, path, body)
		if ctx.Err() != nil && code == 0 {
			return 0, nil // the run ended: not an answer
		}
		run.record(code)
		if code == http.StatusTooManyRequests && !waited {
			run.wrong("%s %s: 429 without Retry-After", method, path)
		}
		if code >= 500 {
			run.wrong("%s %s: %d %s", method, path, code, clip(out))
		}
		return code, out
	}
	own := func(k int) string { return fmt.Sprintf("/c%03d/m%d.md", c, k) }
	shared := func(k int) string { return fmt.Sprintf("/shared/s%d.md", k) }
	for i := 0; ctx.Err() == nil; i++ {
		if rng.IntN(8) == 0 {
			// The whole store in one export: whole, every content
			// matching its hash.
			code, body := call(http.MethodGet, base+"/memories/export", nil)
			if code == http.StatusOK && !wholeExport(body) {
				run.wrong("export: torn (a content that does not match its hash, or a count that does not)")
			}
			continue
		}
		// What the store holds, as one server lists it.
		prefix := "/shared/"
		if rng.IntN(2) == 0 {
			prefix = fmt.Sprintf("/c%03d/", c)
		}
		code, body := call(http.MethodGet, base+"/memories?limit=100&path_prefix="+url.QueryEscape(prefix), nil)
		if code != http.StatusOK {
			if code != 0 && code != http.StatusTooManyRequests {
				run.wrong("list: %d %s", code, clip(body))
			}
			continue
		}
		var page struct {
			Data []storewire.Memory `json:"data"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			run.wrong("list: not JSON: %v", err)
			continue
		}
		held := map[string]storewire.Memory{}
		for _, m := range page.Data {
			held[m.Path] = m
		}
		path := shared(rng.IntN(8))
		if prefix != "/shared/" {
			path = own(rng.IntN(4))
		}
		m, ok := held[path]
		content := fmt.Sprintf("client %d write %d at %s\n", c, i, path)
		w := write{path: path}
		switch {
		case !ok:
			code, body = call(http.MethodPost, base+"/memories", storewire.CreateMemory{Path: path, Content: &content,
				Precondition: &storewire.Precondition{Type: storewire.PreconditionNotExists}})
			w.post = hashOf(content)
		case rng.IntN(6) == 0:
			code, body = call(http.MethodDelete, base+"/memories/"+m.ID+"?expected_content_sha256="+m.ContentSHA256, nil)
			w.pre = m.ContentSHA256
		case rng.IntN(4) == 0:
			// Read it first: the content must match its hash.
			code, body = call(http.MethodGet, base+"/memories/"+m.ID, nil)
			if code == http.StatusOK {
				var got storewire.Memory
				if json.Unmarshal(body, &got) != nil || got.Content == nil || hashOf(*got.Content) != got.ContentSHA256 {
					run.wrong("get %s: a content that does not match its hash", path)
				}
			}
			continue
		default:
			code, body = call(http.MethodPost, base+"/memories/"+m.ID, storewire.UpdateMemory{Content: &content,
				Precondition: &storewire.Precondition{Type: storewire.PreconditionSHA256, ContentSHA256: m.ContentSHA256}})
			w.pre, w.post = m.ContentSHA256, hashOf(content)
		}
		switch {
		case code == 0:
			w.unknown = true
		case code >= 200 && code < 300:
			w.acked = true
			run.acked.Add(1)
		case code == http.StatusConflict, code == http.StatusNotFound, code == http.StatusTooManyRequests:
			// another client got there first, or the limit: read again
		default:
			run.wrong("write %s: %d %s", path, code, clip(body))
		}
		run.mu.Lock()
		run.writes = append(run.writes, w)
		run.mu.Unlock()
	}
}

// wholeExport reports whether a full export is whole: a complete line
// whose count matches, and every content matching its sha256.
func wholeExport(body []byte) bool {
	n := 0
	for _, raw := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		var line storewire.Line
		if json.Unmarshal(raw, &line) != nil {
			return false
		}
		switch line.Type {
		case storewire.LineMemory:
			if line.Content == nil || hashOf(*line.Content) != line.ContentSHA {
				return false
			}
			n++
		case storewire.LineComplete:
			return line.MemoryCount == n && line.ErrorCount == 0
		}
	}
	return false
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200])
	}
	return string(b)
}
