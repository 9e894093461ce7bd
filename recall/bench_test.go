package recall

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

var benchWords = strings.Fields("postgres migration index orders deploy canary rollback kafka consumer lag redis cache ttl " +
	"stripe refund idempotency checkout tax shipping inventory warehouse grafana tempo tracing alert pager oncall " +
	"react vite storybook i18n accessibility openapi client graphql grpc proto auth token session cookie csrf argon2id " +
	"helm terraform vault secret docker image distroless lint error context retry timeout queue cron email search")

var benchQueries = []string{
	"why is the kafka consumer lag paging oncall",
	"add an index to the orders table in a postgres migration",
	"where does parseConfig17 read the stripe refund settings",
	"write a haiku about autumn",
}

// benchTree writes n distinct memories into a fresh directory on the real
// disk, spread over 20 subdirectories.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		w := func(k int) string { return benchWords[(i*7+k*13)%len(benchWords)] }
		content := fmt.Sprintf("---\nname: %s %s\ndescription: %s %s and %s for service%d\ntype: project\n---\n\n%s\n",
			w(0), w(1), w(2), w(3), w(4), i%97, strings.Repeat(w(5)+" "+w(6)+" "+w(7)+fmt.Sprintf(" detail about parseConfig%d. ", i), 6))
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("m%05d.md", i))
		if i < 20 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// statWalk is the floor of a Find on an unchanged directory: list every
// directory and stat every memory file, nothing else.
func statWalk(ctx context.Context, fsys afero.Fs, dir string) int {
	n := 0
	l := fsys.(afero.Lstater)
	_ = fswalk.Walk(ctx, fsys, dir, func(e fswalk.Entry) error {
		if e.Type.IsRegular() && path.Ext(e.Rel) == ".md" {
			if _, _, err := l.LstatIfPossible(e.Abs); err == nil {
				n++
			}
		}
		return nil
	})
	return n
}

// BenchmarkFindUnchanged measures a repeated Find on an unchanged
// directory of 2,000 and 20,000 memories on the real disk (folders last
// changed long ago) against a bare stat walk of the tree in the same loop,
// the cost of every Find before change detection. It reports find-ms (a
// Find), query-ms (the index search alone) and x-walk (Find / walk).
func BenchmarkFindUnchanged(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			dir := benchTree(b, n)
			settle(b, dir)
			fsys := afero.NewOsFs()
			f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ctx := context.Background()
			f.Find(ctx, "warm up", nil, nil) // the first Find reads every file once
			var find, walk, query time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := benchQueries[i%len(benchQueries)]
				start := time.Now()
				f.Find(ctx, q, nil, nil)
				find += time.Since(start)
				b.StopTimer()
				start = time.Now()
				if got := statWalk(ctx, fsys, dir); got != n {
					b.Fatalf("walked %d files, want %d", got, n)
				}
				walk += time.Since(start)
				start = time.Now()
				f.corpus.search(q, MaxSelected, nil)
				query += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(find)/float64(walk), "x-walk")
			b.ReportMetric(float64(find.Microseconds())/1000/float64(b.N), "find-ms")
			b.ReportMetric(float64(query.Microseconds())/1000/float64(b.N), "query-ms")
		})
	}
}

// settle gives the folders below dir an mtime long past, as on a
// directory nobody changed in the last seconds.
func settle(b *testing.B, dir string) {
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFindFirst measures the first Find on a directory of 2,000 and
// 20,000 memories (every file read and indexed) against reading the
// headers with ScanMemoryFiles in the same loop.
func BenchmarkFindFirst(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			dir := benchTree(b, n)
			fsys := afero.NewOsFs()
			ctx := context.Background()
			var first, scan time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				f.Find(ctx, benchQueries[0], nil, nil)
				first += time.Since(start)
				f.Close()
				start = time.Now()
				if _, err := memdir.ScanMemoryFiles(ctx, fsys, dir, memdir.ScanOptions{MaxFiles: 1 << 20}); err != nil {
					b.Fatal(err)
				}
				scan += time.Since(start)
			}
			b.ReportMetric(float64(first)/float64(scan), "x-scan")
		})
	}
}
