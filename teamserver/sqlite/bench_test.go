package sqlite_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
)

// BenchmarkMemoryStoreReads reads a store of 1,000 memories (about 1 KB
// each) the ways a sync client can — every page of the basic listing, the
// basic export, the full export — and reports each as a ratio to the team
// sync protocol's hashes view of a repo with the same 1,000 entries,
// measured alternately in the same run (x-hashes), with the memories read
// per second.
func BenchmarkMemoryStoreReads(b *testing.B) {
	const n = 1000
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "team.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"}, "*")
	if err != nil {
		b.Fatal(err)
	}
	h, err := teamserver.NewHandler(s, teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, RatePerToken: -1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	body := strings.Repeat("A remembered fact about the build and why it matters.\n", 19)
	entries := map[string]string{}
	st, err := s.CreateMemStore(ctx, "acme", teamserver.MemStore{Name: "bench"}, teamserver.StoreLimits{}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		key := fmt.Sprintf("topic%02d/memory_%04d.md", i/100, i)
		entries[key] = body + key
		content := body + key
		if _, err := s.CreateMemory(ctx, "acme", st.ID, teamserver.MemoryWrite{Path: "/" + key, Content: &content}, teamserver.StoreLimits{}, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{Entries: entries, Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	get := func(url string) int {
		req := httptest.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("x-api-key", token)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", url, rec.Code, rec.Body.String())
		}
		return rec.Body.Len()
	}
	hashes := func() { get("/api/claude_code/team_memory?repo=acme/shop&view=hashes") }
	base := "/v1/memory_stores/" + st.ID + "/memories"
	reads := map[string]func(){
		"list-basic": func() {
			page := ""
			for pages := 0; ; pages++ {
				url := base + "?limit=100"
				if page != "" {
					url += "&page=" + page
				}
				req := httptest.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("x-api-key", token)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				next := nextPage(rec.Body.String())
				if next == "" {
					if pages != n/100-1 {
						b.Fatalf("%d pages", pages+1)
					}
					return
				}
				page = next
			}
		},
		"export-basic": func() { get(base + "/export?view=basic") },
		"export-full":  func() { get(base + "/export") },
	}
	for _, name := range []string{"list-basic", "export-basic", "export-full"} {
		read := reads[name]
		b.Run(name, func(b *testing.B) {
			hashes()
			read()
			var readTime, floorTime time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				read()
				readTime += time.Since(start)
				b.StopTimer()
				start = time.Now()
				hashes()
				floorTime += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(readTime)/float64(floorTime), "x-hashes")
			b.ReportMetric(float64(n*b.N)/readTime.Seconds(), "memories/s")
		})
	}
}

// nextPage pulls next_page out of a listing without decoding it all.
func nextPage(body string) string {
	_, after, ok := strings.Cut(body, `"next_page":"`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}
