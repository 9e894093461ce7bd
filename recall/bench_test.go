package recall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/memdir"
	"github.com/spf13/afero"
)

var benchWords = strings.Fields("postgres migration index orders deploy canary rollback kafka consumer lag redis cache ttl " +
	"stripe refund idempotency checkout tax shipping inventory warehouse grafana tempo tracing alert pager oncall " +
	"react vite storybook i18n accessibility openapi client graphql grpc proto auth token session cookie csrf argon2id " +
	"helm terraform vault secret docker image distroless lint error context retry timeout queue cron email search")

// benchDocs makes n distinct memories from the vocabulary.
func benchDocs(n int) []Document {
	docs := make([]Document, n)
	for i := range docs {
		w := func(k int) string { return benchWords[(i*7+k*13)%len(benchWords)] }
		docs[i] = Document{
			Filename:    fmt.Sprintf("m%05d.md", i),
			Name:        w(0) + " " + w(1),
			Description: fmt.Sprintf("%s %s and %s for service%d", w(2), w(3), w(4), i%97),
			Body:        strings.Repeat(w(5)+" "+w(6)+" "+w(7)+" detail about parseConfig%d. ", 6),
		}
	}
	return docs
}

// BenchmarkLexicalIndexBuild reports the cost of building the index.
func BenchmarkLexicalIndexBuild(b *testing.B) {
	for _, n := range []int{200, 2_000, 20_000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			docs := benchDocs(n)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = NewIndex(docs)
			}
		})
	}
}

// BenchmarkLexicalQuery reports ns per query on a built index.
func BenchmarkLexicalQuery(b *testing.B) {
	queries := []string{
		"why is the kafka consumer lag paging oncall",
		"add an index to the orders table in a postgres migration",
		"where does parseConfig17 read the stripe refund settings",
		"write a haiku about autumn",
	}
	for _, n := range []int{200, 2_000, 20_000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			ix := NewIndex(benchDocs(n))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = ix.Search(queries[i%len(queries)], MaxSelected, 0)
			}
		})
	}
}

type nopSelector struct{}

func (nopSelector) Select(context.Context, SelectRequest) ([]string, error) { return nil, nil }

// BenchmarkFinderOverhead compares Finder.Find without a model call (scan,
// filtering, candidate checks) with ScanMemoryFiles alone on 200 files on
// the real disk, in the same loop, and reports x-scan.
func BenchmarkFinderOverhead(b *testing.B) {
	dir := b.TempDir()
	for i, d := range benchDocs(200) {
		content := fmt.Sprintf("---\nname: %s\ndescription: %s\ntype: project\n---\n\n%s\n", d.Name, d.Description, d.Body)
		p := filepath.Join(dir, d.Filename)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		mt := time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)
		if err := os.Chtimes(p, mt, mt); err != nil {
			b.Fatal(err)
		}
	}
	fsys := afero.NewOsFs()
	f, err := NewFinder(FinderConfig{Fs: fsys, Dir: dir, Selector: nopSelector{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	surfaced := map[string]bool{filepath.Join(dir, "m00001.md"): true}
	var finder, scan time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		f.Find(ctx, "kafka consumer lag", surfaced, nil)
		finder += time.Since(start)
		b.StopTimer()
		start = time.Now()
		if _, err := memdir.ScanMemoryFiles(ctx, fsys, dir, memdir.ScanOptions{}); err != nil {
			b.Fatal(err)
		}
		scan += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(finder)/float64(scan), "x-scan")
}
