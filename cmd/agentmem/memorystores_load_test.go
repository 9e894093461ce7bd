package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeLoad is what one Memory Stores load run saw.
type storeLoad struct {
	mu          sync.Mutex
	requests    int
	status      map[int]int
	torn        int
	writes      int
	acked       map[string]string // own path → last acknowledged content
	attempted   map[string]string // own path → last content sent
	sharedAcked []string          // lines acknowledged on /shared.md
	unexpected  []string
}

func (s *storeLoad) count(code int) {
	s.mu.Lock()
	s.requests++
	s.status[code]++
	s.mu.Unlock()
}

func (s *storeLoad) odd(what string) {
	s.mu.Lock()
	s.unexpected = append(s.unexpected, what)
	s.mu.Unlock()
}

// exportedMemory is one "memory" line of an export.
type exportedMemory struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	SHA     string `json:"content_sha256"`
	Content string `json:"content"`
}

// readExport reads a full export and checks it is whole: every content
// matches its sha256 and the count matches the "complete" line.
func readExport(body []byte) (map[string]exportedMemory, bool) {
	out := map[string]exportedMemory{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	complete := false
	for sc.Scan() {
		var line struct {
			Type  string `json:"type"`
			Count int    `json:"memory_count"`
			exportedMemory
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			return nil, false
		}
		switch line.Type {
		case "memory":
			if sha(line.Content) != line.SHA {
				return nil, false
			}
			out[line.Path] = line.exportedMemory
		case "complete":
			complete = line.Count == len(out)
		}
	}
	return out, complete
}

// storeLoadClient exports the store, checks the export is whole, rewrites
// its own memory with the sha it read as precondition, and appends a line
// to the memory every client shares, until ctx ends. A 409 means read
// again; 429 and 503 mean wait and retry.
func storeLoadClient(ctx context.Context, urls []string, token, storeID string, c int, s *storeLoad) {
	client := &http.Client{Timeout: 30 * time.Second}
	own := fmt.Sprintf("/c%03d.md", c)
	do := func(i int, method, path string, body any) (int, []byte) {
		var r io.Reader
		if body != nil {
			raw, _ := json.Marshal(body)
			r = bytes.NewReader(raw)
		}
		req, _ := http.NewRequestWithContext(ctx, method, urls[i%len(urls)]+"/v1/memory_stores/"+storeID+path, r)
		req.Header.Set("x-api-key", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil
		}
		s.count(resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		return resp.StatusCode, out
	}
	// write sends a create or a conditional update and reports whether it
	// was acknowledged.
	write := func(i int, cur exportedMemory, path, content string) bool {
		var code int
		var body []byte
		if cur.ID == "" {
			code, body = do(i, http.MethodPost, "/memories", map[string]any{"path": path, "content": content, "precondition": map[string]string{"type": "not_exists"}})
		} else {
			code, body = do(i, http.MethodPost, "/memories/"+cur.ID, map[string]any{"content": content, "precondition": map[string]string{"type": "content_sha256", "content_sha256": cur.SHA}})
		}
		switch code {
		case http.StatusOK:
			s.mu.Lock()
			s.writes++
			s.mu.Unlock()
			return true
		case 0, http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		default:
			s.odd(fmt.Sprintf("write %d %s", code, body))
		}
		return false
	}
	for n, i := 0, 0; ctx.Err() == nil; i++ {
		code, body := do(i, http.MethodGet, "/memories/export", nil)
		if code != http.StatusOK {
			if code != 0 && code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable {
				s.odd(fmt.Sprintf("export %d %s", code, body))
			}
			continue
		}
		mems, whole := readExport(body)
		if !whole {
			s.mu.Lock()
			s.torn++
			s.mu.Unlock()
			continue
		}
		n++
		content := fmt.Sprintf("client %d write %d", c, n)
		s.mu.Lock()
		s.attempted[own] = content
		s.mu.Unlock()
		if write(i+1, mems[own], own, content) {
			s.mu.Lock()
			s.acked[own] = content
			s.mu.Unlock()
		}
		shared := mems["/shared.md"]
		if len(shared.Content) > 90_000 {
			continue
		}
		line := fmt.Sprintf("c%d.%d\n", c, n)
		if write(i+2, shared, "/shared.md", shared.Content+line) {
			s.mu.Lock()
			s.sharedAcked = append(s.sharedAcked, line)
			s.mu.Unlock()
		}
	}
}

// TestMemoryStoresLoad drives 32 and 128 concurrent clients on one memory
// store of the built server, on SQLite and on two servers sharing
// PostgreSQL: every client rewrites its own memory and appends to one
// memory they all share, each write conditional on the sha256 it read.
// No acknowledged write may be lost (the shared memory holds every
// acknowledged line), no answer may be a 500 and no export may be torn.
func TestMemoryStoresLoad(t *testing.T) {
	seconds := 2.0
	if v, err := strconv.ParseFloat(os.Getenv("AGENTMEM_LOAD_SECONDS"), 64); err == nil {
		seconds = v
	}
	d := time.Duration(seconds * float64(time.Second))
	dir := t.TempDir()
	var grants []teamserver.TokenGrant
	var tokens []string
	for i := range 128 {
		tok, g, err := teamserver.NewToken("acme", nil, "*")
		require.NoError(t, err)
		g.Name = fmt.Sprintf("client%d", i)
		tokens, grants = append(tokens, tok), append(grants, g)
	}
	data, err := json.Marshal(grants)
	require.NoError(t, err)
	tokensFile := filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(tokensFile, data, 0o600))
	for name, urls := range storeServers(t, tokensFile) {
		for _, clients := range []int{32, 128} {
			runStoreLoad(t, fmt.Sprintf("%s %d clients", name, clients), urls, tokens, clients, d)
		}
	}
}

func runStoreLoad(t *testing.T, name string, urls, tokens []string, clients int, d time.Duration) {
	t.Helper()
	code, _, body := storeHTTP(t, "POST", urls[0]+"/v1/memory_stores", tokens[0], true, map[string]any{"name": name})
	require.Equal(t, 200, code, string(body))
	storeID := decodeJSON(t, body)["id"].(string)
	s := &storeLoad{status: map[int]int{}, acked: map[string]string{}, attempted: map[string]string{}}
	// The run lasts d, and longer (up to a minute) until at least one
	// write on the shared memory was acknowledged: on a loaded machine the
	// first rounds of 128 clients can take longer than d.
	ctx, cancel := context.WithTimeout(context.Background(), max(d, time.Minute))
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { storeLoadClient(ctx, urls, tokens[c], storeID, c, s) })
	}
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s.mu.Lock()
			enough := len(s.sharedAcked) > 0
			s.mu.Unlock()
			if enough && time.Since(start) >= d {
				cancel()
				return
			}
		}
	})
	wg.Wait()
	elapsed := time.Since(start)

	code, _, body = storeHTTP(t, "GET", urls[len(urls)-1]+"/v1/memory_stores/"+storeID+"/memories/export", tokens[0], true, nil)
	require.Equal(t, 200, code, string(body))
	final, whole := readExport(body)
	require.True(t, whole, "the final export is whole")
	lost := 0
	for path, want := range s.acked {
		if got := final[path].Content; got != want && got != s.attempted[path] {
			lost++
			t.Logf("%s: %s holds %q, acknowledged %q", name, path, got, want)
		}
	}
	shared := final["/shared.md"].Content
	for _, line := range s.sharedAcked {
		if !strings.Contains(shared, line) {
			lost++
		}
	}
	t.Logf("%-24s %5.0f req/s, %4.0f acked writes/s (%d on the shared memory); 409 %d, 429 %d, 503 %d, 500 %d, torn %d, lost %d",
		name, float64(s.requests)/elapsed.Seconds(), float64(s.writes)/elapsed.Seconds(), len(s.sharedAcked),
		s.status[409], s.status[429], s.status[503], s.status[500], s.torn, lost)
	assert.Zero(t, lost, "%s: acknowledged writes lost", name)
	assert.Zero(t, s.status[500], "%s: 500s", name)
	assert.Zero(t, s.torn, "%s: torn exports", name)
	assert.Empty(t, s.unexpected, "%s: unexpected answers", name)
	assert.Positive(t, len(s.sharedAcked), "%s: some shared writes were acknowledged", name)
}
