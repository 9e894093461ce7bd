package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/console"
)

// BenchmarkListPage measures the memory-list page of a repo of 2,000
// memories (the console reads them through the sync protocol, parses
// their frontmatter, filters and renders one page of 50) against the
// JSON listing of the same memories (the protocol's full GET), both over
// HTTP from the same server in the same run. x-json is the ratio.
func BenchmarkListPage(b *testing.B) {
	f := newFixture(b)
	entries := map[string]string{}
	body := strings.Repeat("A remembered detail about the build, the deploy and the people who run them.\n", 12)
	types := []string{"user", "feedback", "project", "reference"}
	for i := range 2000 {
		entries[fmt.Sprintf("notes/m%04d.md", i)] = fmt.Sprintf("---\nname: m%04d\ndescription: memory number %d\ntype: %s\n---\n%s", i, i, types[i%4], body)
	}
	for i := 0; i < 2000; i += 500 { // in batches under the body limit
		batch := map[string]string{}
		for k, v := range entries {
			var n int
			fmt.Sscanf(k, "notes/m%04d.md", &n)
			if n >= i && n < i+500 {
				batch[k] = v
			}
		}
		f.do(b, f.alice, http.MethodPut, teamwire.DefaultSyncPath+"?repo=acme%2Fbig", teamwire.PutBody{Entries: batch}, nil)
	}
	// The console as team serve mounts it, with its default page size.
	con, err := console.New(f.h, console.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(con.Wrap(f.h))
	defer srv.Close()
	base := srv.URL + con.Prefix()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	// Sign in with a real browser's steps: the form's CSRF token, then POST.
	resp, err := client.Get(base + "/signin")
	if err != nil {
		b.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfRe.FindSubmatch(page)
	if m == nil {
		b.Fatal("no CSRF field on the sign-in page")
	}
	resp, err = client.PostForm(base+"/signin", url.Values{"csrf": {string(m[1])}, "token": {f.alice}})
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()

	get := func(u string, auth bool, want string) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+f.alice)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), want) {
			b.Fatalf("%s: %d %.200s", u, resp.StatusCode, data)
		}
	}
	pageURL := base + "/repos/acme/big?type=project&page=3"
	jsonURL := srv.URL + teamwire.DefaultSyncPath + "?repo=acme%2Fbig"
	var ours, floor time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		get(pageURL, false, "500 of 2000 memories, page 3 of 10")
		ours += time.Since(start)
		start = time.Now()
		get(jsonURL, true, `"notes/m1999.md"`)
		floor += time.Since(start)
	}
	b.ReportMetric(float64(ours)/float64(floor), "x-json")
	b.ReportMetric(float64(ours.Microseconds())/float64(b.N)/1000, "page-ms")
	b.ReportMetric(float64(floor.Microseconds())/float64(b.N)/1000, "json-ms")
}

// BenchmarkReviewPage measures the review queue with 50 pending changes
// of an agent in a repo of 2,000 memories (each shown beside the current
// text) against the JSON listing of the repo, over HTTP from the same
// server in the same run. x-json is the ratio.
func BenchmarkReviewPage(b *testing.B) {
	f := newFixture(b)
	body := strings.Repeat("A remembered detail about the build, the deploy and the people who run them.\n", 12)
	for i := 0; i < 2000; i += 500 {
		batch := map[string]string{}
		for n := i; n < i+500; n++ {
			batch[fmt.Sprintf("notes/m%04d.md", n)] = fmt.Sprintf("---\nname: m%04d\ntype: project\n---\n%s", n, body)
		}
		f.do(b, f.alice, http.MethodPut, teamwire.DefaultSyncPath+"?repo=acme%2Fbig", teamwire.PutBody{Entries: batch}, nil)
	}
	if err := f.h.SetPolicy(context.Background(), "acme", teamserver.Target{Kind: teamserver.TargetRepo, Name: "acme/big"}, teamserver.PolicyReview, "alice"); err != nil {
		b.Fatal(err)
	}
	for n := range 50 {
		f.propose(b, f.robot, "acme/big", map[string]string{fmt.Sprintf("notes/m%04d.md", n*40): fmt.Sprintf("---\nname: m%04d\ntype: project\n---\n%sOne more line.\n", n*40, body)})
	}
	con, err := console.New(f.h, console.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(con.Wrap(f.h))
	defer srv.Close()
	base := srv.URL + con.Prefix()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(base + "/signin")
	if err != nil {
		b.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfRe.FindSubmatch(page)
	if m == nil {
		b.Fatal("no CSRF field on the sign-in page")
	}
	resp, err = client.PostForm(base+"/signin", url.Values{"csrf": {string(m[1])}, "token": {f.alice}})
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	get := func(u string, auth bool, want string) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+f.alice)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), want) {
			b.Fatalf("%s: %d %.200s", u, resp.StatusCode, data)
		}
	}
	var ours, home, floor time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		get(base+"/review", false, "50 changes wait")
		ours += time.Since(start)
		start = time.Now()
		get(base+"/", false, `aria-label="50 in review in acme/big">50</a>`)
		home += time.Since(start)
		start = time.Now()
		get(srv.URL+teamwire.DefaultSyncPath+"?repo=acme%2Fbig", true, `"notes/m1999.md"`)
		floor += time.Since(start)
	}
	b.ReportMetric(float64(ours)/float64(floor), "x-json")
	b.ReportMetric(float64(ours.Microseconds())/float64(b.N)/1000, "review-ms")
	b.ReportMetric(float64(home.Microseconds())/float64(b.N)/1000, "home-ms")
	b.ReportMetric(float64(floor.Microseconds())/float64(b.N)/1000, "json-ms")
}
