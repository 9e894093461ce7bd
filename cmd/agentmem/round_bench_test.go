package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teammem"
)

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
