package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveArgs starts `agentmem team serve` with extra flags and returns its
// URL and process.
func serveArgs(t *testing.T, db, tokens string, extra ...string) (string, *exec.Cmd) {
	t.Helper()
	return serveEnv(t, nil, db, tokens, extra...)
}

// serveEnv is serveArgs with env added to the server's environment.
func serveEnv(t *testing.T, env []string, db, tokens string, extra ...string) (string, *exec.Cmd) {
	t.Helper()
	args := append([]string{"team", "serve", "--addr", "127.0.0.1:0", "--db", db, "--tokens", tokens}, extra...)
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	logPath := os.Getenv("AGENTMEM_SERVER_LOG")
	if logPath == "" {
		logPath = filepath.Join(t.TempDir(), "server.log")
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	cmd.Stderr = logFile
	serverLogs.Store(cmd, logPath)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = logFile.Close() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "metrics on http://"); ok {
			metricsAddrs.Store(cmd, strings.TrimSuffix(addr, "/metrics"))
		}
		if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return m[1], cmd
		}
	}
	t.Fatal("the server did not start")
	return "", nil
}

// metricsAddrs holds the metrics address each server started by serveEnv
// printed (with --metrics-addr 127.0.0.1:0: a port picked free
// beforehand may be taken by a parallel test by then).
var metricsAddrs sync.Map

// serverLogs holds the file each server started by serveEnv writes its
// standard error to.
var serverLogs sync.Map

// serverLogOf returns what the server cmd printed on standard error so
// far.
func serverLogOf(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	path, ok := serverLogs.Load(cmd)
	require.True(t, ok, "the server was not started by serveEnv")
	data, err := os.ReadFile(path.(string))
	require.NoError(t, err)
	return string(data)
}

// metricsAddrOf returns the metrics address the server cmd printed.
func metricsAddrOf(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	addr, ok := metricsAddrs.Load(cmd)
	require.True(t, ok, "the server printed no metrics address")
	return addr.(string)
}

// manyTokens writes a token file with n tokens (one per client).
func manyTokens(t *testing.T, dir string, n int) (string, []string) {
	t.Helper()
	var grants []teamserver.TokenGrant
	var tokens []string
	for i := range n {
		tok, g, err := teamserver.NewToken("acme", []string{"acme/*"})
		require.NoError(t, err)
		g.Name = fmt.Sprintf("client%d", i)
		tokens = append(tokens, tok)
		grants = append(grants, g)
	}
	data, err := json.Marshal(grants)
	require.NoError(t, err)
	path := filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path, tokens
}

// loadStats is what one load run saw.
type loadStats struct {
	mu             sync.Mutex
	requests, puts int
	status         map[int]int
	torn           int
	putLatency     []time.Duration
	acked          map[string]string // key → the last content a 200 acknowledged
	ackedVersion   map[string]int64
	// attempted is each key's last write sent: one cut off by the end of
	// the run may have been applied without its answer arriving.
	attempted          map[string]string
	elapsed            time.Duration
	unexpected         []string
	retriedAfterStatus int
}

func (s *loadStats) add(status int) {
	s.mu.Lock()
	s.requests++
	s.status[status]++
	s.mu.Unlock()
}

// loadClient reads the repo, checks the read is not torn, changes its own
// key and writes it back conditionally, until stop; 412 means read again,
// 429 and 503 mean wait Retry-After and try again.
func loadClient(ctx context.Context, urls []string, token, repo, key string, s *loadStats) {
	client := &http.Client{Timeout: 30 * time.Second}
	endpoint := func(i int) string {
		return urls[i%len(urls)] + teamwire.DefaultSyncPath + "?repo=" + repo
	}
	do := func(req *http.Request) (*http.Response, []byte, error) {
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}
	wait := func(resp *http.Response) {
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		s.mu.Lock()
		s.retriedAfterStatus++
		s.mu.Unlock()
		select {
		case <-time.After(time.Duration(max(secs, 1)) * 100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	for n, i := 0, 0; ctx.Err() == nil; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint(i), nil)
		resp, body, err := do(req)
		if err != nil {
			continue
		}
		s.add(resp.StatusCode)
		etag := ""
		switch resp.StatusCode {
		case http.StatusOK:
			var data teamwire.TeamMemoryData
			if json.Unmarshal(body, &data) != nil || teamwire.RepoChecksum(data.Content.EntryChecksums) != data.Checksum {
				s.mu.Lock()
				s.torn++
				s.mu.Unlock()
				continue
			}
			for k, v := range data.Content.Entries {
				if teamwire.EntryChecksum(v) != data.Content.EntryChecksums[k] {
					s.mu.Lock()
					s.torn++
					s.mu.Unlock()
				}
			}
			etag = resp.Header.Get("ETag")
		case http.StatusNotFound:
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			wait(resp)
			continue
		default:
			s.mu.Lock()
			s.unexpected = append(s.unexpected, fmt.Sprintf("GET %d %s", resp.StatusCode, body))
			s.mu.Unlock()
			continue
		}
		n++
		content := fmt.Sprintf("%s write %d", key, n)
		raw, _ := json.Marshal(teamwire.PutBody{Entries: map[string]string{key: content}})
		req, _ = http.NewRequestWithContext(ctx, http.MethodPut, endpoint(i+1), bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		if etag != "" {
			req.Header.Set("If-Match", etag)
		}
		s.mu.Lock()
		s.attempted[key] = content
		s.mu.Unlock()
		start := time.Now()
		resp, body, err = do(req)
		if err != nil {
			continue // not acknowledged
		}
		took := time.Since(start)
		s.add(resp.StatusCode)
		switch resp.StatusCode {
		case http.StatusOK:
			var pr teamwire.PutResult
			if json.Unmarshal(body, &pr) == nil {
				s.mu.Lock()
				s.puts++
				s.putLatency = append(s.putLatency, took)
				if pr.Version > s.ackedVersion[key] {
					s.acked[key], s.ackedVersion[key] = content, pr.Version
				}
				s.mu.Unlock()
			}
		case http.StatusPreconditionFailed:
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			wait(resp)
		default:
			s.mu.Lock()
			s.unexpected = append(s.unexpected, fmt.Sprintf("PUT %d %s", resp.StatusCode, body))
			s.mu.Unlock()
		}
	}
}

// runLoad runs clients against urls for d and checks that every
// acknowledged write is in the final state, that no read was torn and no
// answer was a 500.
func runLoad(t *testing.T, name string, urls, tokens []string, clients int, oneRepo bool, d time.Duration) *loadStats {
	t.Helper()
	s := &loadStats{status: map[int]int{}, acked: map[string]string{}, ackedVersion: map[string]int64{}, attempted: map[string]string{}}
	// The run lasts d and, on a slow machine, until some write has been
	// acknowledged (at most 20 s): a run with none checks nothing.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		stop, giveUp := time.Now().Add(d), time.Now().Add(max(d, 20*time.Second))
		for ctx.Err() == nil {
			s.mu.Lock()
			acked := s.puts
			s.mu.Unlock()
			if now := time.Now(); (now.After(stop) && acked > 0) || now.After(giveUp) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	prefix := strings.NewReplacer(" ", "-", "/", "-").Replace(name)
	repoOf := func(c int) string {
		if oneRepo {
			return "acme%2F" + prefix
		}
		return fmt.Sprintf("acme%%2F%s-%d", prefix, c)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { loadClient(ctx, urls, tokens[c%len(tokens)], repoOf(c), fmt.Sprintf("c%03d.md", c), s) })
	}
	wg.Wait()
	s.elapsed = time.Since(start)

	// Every acknowledged write is there.
	lost := 0
	for c := range clients {
		key := fmt.Sprintf("c%03d.md", c)
		want, ok := s.acked[key]
		if !ok {
			continue
		}
		var data teamwire.TeamMemoryData
		for attempt := 0; ; attempt++ {
			req, _ := http.NewRequest(http.MethodGet, urls[0]+teamwire.DefaultSyncPath+"?repo="+repoOf(c), nil)
			req.Header.Set("Authorization", "Bearer "+tokens[c%len(tokens)])
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			if resp.StatusCode == http.StatusTooManyRequests && attempt < 20 {
				resp.Body.Close()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&data))
			resp.Body.Close()
			break
		}
		if got := data.Content.Entries[key]; got != want && got != s.attempted[key] {
			lost++ // neither the acknowledged write nor a later one cut off
			if lost <= 3 {
				t.Logf("%s: %s holds %q; acknowledged %q (version %d), last sent %q", name, key, got, want, s.ackedVersion[key], s.attempted[key])
			}
		}
	}
	sort.Slice(s.putLatency, func(i, j int) bool { return s.putLatency[i] < s.putLatency[j] })
	pct := func(p float64) time.Duration {
		if len(s.putLatency) == 0 {
			return 0
		}
		return s.putLatency[min(len(s.putLatency)-1, int(p*float64(len(s.putLatency))))]
	}
	t.Logf("%-34s %4.0f req/s, %4.0f acked writes/s, PUT p50 %6.1f ms p99 %7.1f ms; 412 %d, 429 %d, 503 %d, 500 %d, torn %d, lost %d",
		name, float64(s.requests)/s.elapsed.Seconds(), float64(s.puts)/s.elapsed.Seconds(),
		float64(pct(0.5).Microseconds())/1000, float64(pct(0.99).Microseconds())/1000,
		s.status[412], s.status[429], s.status[503], s.status[500], s.torn, lost)
	assert.Zero(t, lost, "%s: acknowledged writes lost", name)
	assert.Zero(t, s.status[500], "%s: 500s", name)
	assert.Zero(t, s.torn, "%s: torn reads", name)
	assert.Empty(t, s.unexpected, "%s: unexpected answers", name)
	assert.Positive(t, s.puts, "%s: some writes were acknowledged", name)
	return s
}

// TestLoad drives real server processes with 8 and 128 concurrent
// read-modify-write clients (and 32 when AGENTMEM_LOAD_SECONDS asks for
// a measured run), all on one repo and on one repo each: on
// SQLite, and on two servers sharing PostgreSQL when a database is
// configured (AGENTMEM_TEST_POSTGRES_DSN). No acknowledged write may be
// lost, no answer may be a 500, no read may be torn. Each run lasts
// AGENTMEM_LOAD_SECONDS (default 0.5, and longer until a write is
// acknowledged; the guide's figures are of 2). It runs beside the
// package's other tests, so the rates it logs are only a guide; run it
// alone (-run '^TestLoad$') to measure.
func TestLoad(t *testing.T) {
	t.Parallel()
	seconds := 0.5
	if v, err := strconv.ParseFloat(os.Getenv("AGENTMEM_LOAD_SECONDS"), 64); err == nil {
		seconds = v
	}
	d := time.Duration(seconds * float64(time.Second))
	dir := t.TempDir()
	tokensFile, tokens := manyTokens(t, dir, 128)
	type setup struct {
		name string
		urls []string
	}
	sqliteURL, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokensFile, "--max-repos", "-1")
	setups := []setup{{"sqlite", []string{sqliteURL}}}
	if dsn := os.Getenv("AGENTMEM_TEST_POSTGRES_DSN"); dsn != "" {
		schemaDSN := freshPostgresSchema(t, dsn)
		a, _ := serveArgs(t, schemaDSN, tokensFile, "--max-repos", "-1")
		b, _ := serveArgs(t, schemaDSN, tokensFile, "--max-repos", "-1")
		setups = append(setups, setup{"postgres x2", []string{a, b}})
	} else if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
		t.Fatal("AGENTMEM_REQUIRE_POSTGRES is set but AGENTMEM_TEST_POSTGRES_DSN is not")
	}
	counts := []int{8, 128}
	if os.Getenv("AGENTMEM_LOAD_SECONDS") != "" {
		counts = []int{8, 32, 128} // a measured run: the guide's table
	}
	for _, st := range setups {
		for _, clients := range counts {
			for _, oneRepo := range []bool{true, false} {
				layout := "one repo each"
				if oneRepo {
					layout = "same repo"
				}
				runLoad(t, fmt.Sprintf("%s %d clients %s", st.name, clients, layout), st.urls, tokens, clients, oneRepo, d)
			}
		}
	}
}

// peakRSS reads a process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestFullGetsStreamInBoundedMemory fills a repo with 240 entries of
// 240 kB (about 58 MB), has the server answer it once, then twice at
// once: the server's peak memory may grow by far less than the repo (it
// streams entries from the store), where buffering replies would cost
// several times the repo. It is one of the long runs, opt-in by
// AGENTMEM_BIG_REPO_ENTRIES (at least 240; CI sets it).
func TestFullGetsStreamInBoundedMemory(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("AGENTMEM_BIG_REPO_ENTRIES"))
	if err != nil {
		t.Skip("a long run: AGENTMEM_BIG_REPO_ENTRIES=240 (CI's full-length step) runs it")
	}
	// Under 240 entries the server's constant growth (15 to 16 MB) is
	// too close to half the repo to tell streaming from holding.
	batches := max(n, 240) / 4 // 2000 is the server's default entry limit
	t.Parallel()
	dir := t.TempDir()
	tokensFile, tokens := manyTokens(t, dir, 1)
	line := strings.Repeat("A memory line that is long enough to matter. ", 20) + "\n"
	entry := strings.Repeat(line, 240_000/len(line))
	// The repo is written into the server's database before it starts:
	// what is measured is the server answering, not the uploads.
	db, err := sqlite.Open(filepath.Join(dir, "team.db"))
	require.NoError(t, err)
	total := 0
	entries := map[string]string{}
	for i := range batches * 4 {
		k := fmt.Sprintf("notes/m%03d.md", i)
		entries[k] = fmt.Sprintf("%s %d\n", k, i/4) + entry
		total += len(entries[k])
	}
	_, err = db.Put(context.Background(), teamserver.Repo{Tenant: "acme", Name: "acme/big"}, teamserver.PutRequest{Entries: entries, Now: time.Now()})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	url, cmd := serveArgs(t, filepath.Join(dir, "team.db"), tokensFile, "--rate", "-1")
	endpoint := url + teamwire.DefaultSyncPath + "?repo=acme%2Fbig"
	get := func(check bool) {
		req, _ := http.NewRequest(http.MethodGet, endpoint, nil)
		req.Header.Set("Authorization", "Bearer "+tokens[0])
		resp, err := http.DefaultClient.Do(req)
		if !assert.NoError(t, err) {
			return
		}
		defer resp.Body.Close()
		if !check {
			n, err := io.Copy(io.Discard, resp.Body)
			assert.NoError(t, err)
			assert.Greater(t, n, int64(total))
			return
		}
		var data teamwire.TeamMemoryData
		if assert.NoError(t, json.NewDecoder(resp.Body).Decode(&data)) {
			assert.Len(t, data.Content.Entries, batches*4)
			assert.Equal(t, data.Checksum, teamwire.RepoChecksum(data.Content.EntryChecksums))
			for k, v := range data.Content.Entries {
				if teamwire.EntryChecksum(v) != data.Content.EntryChecksums[k] {
					t.Errorf("%s does not match its checksum", k)
					break
				}
			}
		}
	}
	// A start reads every entry for credentials stored before the routes
	// refused them (RedactStoredCredentials): streamed, not held. The
	// floor is a server's start on an empty database.
	started := peakRSS(t, cmd.Process.Pid)
	_, idle := serveArgs(t, filepath.Join(dir, "empty.db"), tokensFile)
	floor := peakRSS(t, idle.Process.Pid)
	t.Logf("server peak RSS %d MB once started, %d MB on an empty database", started>>20, floor>>20)
	assert.Less(t, started-floor, int64(total)/2, "a start must not hold the repo")
	get(false) // the server's first answer settles its caches and heap
	before := peakRSS(t, cmd.Process.Pid)
	var wg sync.WaitGroup
	wg.Go(func() { get(true) })
	wg.Go(func() { get(false) })
	wg.Wait()
	after := peakRSS(t, cmd.Process.Pid)
	growth := after - before
	t.Logf("repo %d MB; server peak RSS %d MB before, %d MB after two concurrent full GETs (+%d MB)", total>>20, before>>20, after>>20, growth>>20)
	assert.Less(t, growth, int64(total)/2, "the server must not hold the repo to answer")
	assert.Less(t, growth, int64(64<<20))
}

// countingTransport counts the request body bytes a client sends.
type countingTransport struct{ sent atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body = &countingBody{r.Body, &c.sent}
	}
	return http.DefaultTransport.RoundTrip(r)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// statWalk is the floor of a round: the least any sync must do to see
// whether a folder changed, a walk that stats every file.
func statWalk(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = d.Info()
		return err
	})
}

// BenchmarkSyncRound runs a sync round through each protocol's client
// on a folder of 2,000 memories against the built server's handler on
// SQLite: x-floor is an unchanged round's time over a stat walk of the
// folder (both measured here), bytes-ratio is what a round with one
// changed memory sends over what the first, full upload sent.
func BenchmarkSyncRound(b *testing.B) {
	const n = 2000
	body := make([]byte, 600)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	ctx := context.Background()
	for _, proto := range []string{"team", "store"} {
		b.Run(proto, func(b *testing.B) {
			// A server of its own each time: b.Run calls this more than once.
			url, token := inProcessServer(b)
			code, _, out := storeHTTP(b, "POST", url+"/v1/memory_stores", token, true, map[string]any{"name": "bench-store"})
			if code != 200 {
				b.Fatalf("create store: %d %s", code, out)
			}
			mounts, err := storesync.ParseMounts(`[{"path": "/v1/code/memory/bench-store", "mount": "proj"}]`)
			if err != nil {
				b.Fatal(err)
			}
			count := &countingTransport{}
			hc := &http.Client{Transport: count, Timeout: time.Minute}
			var dir string
			var round func() error
			switch proto {
			case "team":
				dir = filepath.Join(b.TempDir(), "team")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				c, err := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: url, Repo: "acme/bench", Token: token, HTTP: hc})
				if err != nil {
					b.Fatal(err)
				}
				var st teammem.SyncState
				round = func() error { _, err := c.Sync(ctx, &st); return err }
			case "store":
				dir = mounts[0].Dir(b.TempDir())
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				c, err := storesync.New(folderAt(afero.NewOsFs(), dir), storesync.Options{BaseURL: url, Token: token, Mount: mounts[0], HTTP: hc})
				if err != nil {
					b.Fatal(err)
				}
				round = func() error { _, err := c.Sync(ctx); return err }
			}
			if err := round(); err != nil { // mounts the folder
				b.Fatal(err)
			}
			count.sent.Store(0)
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), body, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			if err := round(); err != nil {
				b.Fatal(err)
			}
			full := count.sent.Load()
			// Files of a folder in use were written long before the round:
			// aged past the stat cache's racy window, they are not read again.
			past := time.Now().Add(-time.Hour)
			for i := range n {
				if err := os.Chtimes(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), past, past); err != nil {
					b.Fatal(err)
				}
			}
			for range 2 { // settles what the first round learned
				if err := round(); err != nil {
					b.Fatal(err)
				}
			}

			// Rounds and walks take turns, so that both meet the same load.
			var roundT, walkT time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := round(); err != nil {
					b.Fatal(err)
				}
				roundT += time.Since(start)
				b.StopTimer()
				start = time.Now()
				if err := statWalk(dir); err != nil {
					b.Fatal(err)
				}
				walkT += time.Since(start)
				b.StartTimer()
			}
			b.StopTimer()

			if err := os.WriteFile(filepath.Join(dir, "m0007.md"), []byte("one changed memory"), 0o644); err != nil {
				b.Fatal(err)
			}
			before := count.sent.Load()
			if err := round(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(roundT)/float64(walkT), "x-floor")
			b.ReportMetric(float64(count.sent.Load()-before)/float64(full), "bytes-ratio")
			b.ReportMetric(float64(full), "full-bytes")
		})
	}
}
