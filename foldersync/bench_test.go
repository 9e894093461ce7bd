package foldersync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
)

// settle ages every file of dir past the racy-clean window, as files of a
// folder nobody touched for a while are.
func settle(b *testing.B, dir string) {
	past := time.Now().Add(-time.Minute)
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			_ = os.Chtimes(p, past, past)
		}
		return nil
	})
}

// BenchmarkUnchangedRound compares a round on an unchanged folder of
// 2,000 memories with a stat walk of it (ratio reported as x-statwalk;
// the target is at most 1.5), and reports the bytes one changed memory
// sends as a share of a full upload (pct-of-full; target at most 2).
func BenchmarkUnchangedRound(b *testing.B) {
	r := memremote.New("bench")
	c := remotetest.NewClient(b, r, foldersync.Options{})
	for i := range 2000 {
		c.Write(b, fmt.Sprintf("topic%02d/memory%04d.md", i%20, i), fmt.Sprintf("---\nname: memory %d\n---\n\n%s\n", i, longText(i)))
	}
	c.Round(b)
	full := r.SentBytes()
	settle(b, c.Dir)
	c.Round(b) // records the settled stat cache
	ctx := context.Background()
	// Rounds and walks take turns, so that both meet the same load; the
	// setup above is not timed.
	var round, walk time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := c.Engine.Round(ctx)
		if err != nil || !res.Unchanged {
			b.Fatalf("an unchanged round: %+v %v", res, err)
		}
		round += time.Since(start)
		b.StopTimer()
		start = time.Now()
		n := 0
		_ = filepath.WalkDir(c.Dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if _, err := os.Stat(p); err == nil {
					n++
				}
			}
			return nil
		})
		if n < 2000 {
			b.Fatalf("walked %d files", n)
		}
		walk += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(round)/float64(walk), "x-statwalk")
	before := r.SentBytes()
	c.Write(b, "topic00/memory0000.md", "changed\n"+longText(0))
	c.Round(b)
	b.ReportMetric(100*float64(r.SentBytes()-before)/float64(full), "pct-of-full")
}

func longText(i int) string {
	s := ""
	for j := range 8 {
		s += fmt.Sprintf("Line %d of memory %d: the deploy runs from main after CI passes.\n", j, i)
	}
	return s
}
