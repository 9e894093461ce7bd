package teammem_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
)

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
