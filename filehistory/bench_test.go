package filehistory_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/filehistory"
)

// BenchmarkCheckpointBeforeJob: a 2,000-file memory directory whose
// earlier jobs touched 50 files; each iteration is one more job that
// checkpoints and then changes 5 files. The floor is what any checkpoint
// must at least do: a stat walk of the directory plus copying the 5 files
// the job changes. Reported as x-floor (target: at most 1.5).
func BenchmarkCheckpointBeforeJob(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	dir := filepath.Join(root, "memory")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("a line of memory text that is long enough to matter\n", 40)
	var paths []string
	for i := range 2000 {
		p := filepath.Join(dir, fmt.Sprintf("memory_%04d.md", i))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	tr, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(root, "config"), "bench", filehistory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	job := func(n int, files []string) {
		if err := tr.MakeSnapshot(ctx, fmt.Sprintf("job-%d", n)); err != nil {
			b.Fatal(err)
		}
		for _, p := range files {
			if err := tr.TrackEdit(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	change := func(files []string, n int) {
		for _, p := range files {
			if err := os.WriteFile(p, []byte(body+fmt.Sprintf("change %d\n", n)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for n := range 10 { // earlier jobs: 50 tracked files
		files := paths[n*5 : n*5+5]
		job(n, files)
		change(files, n)
	}
	floorDir := filepath.Join(root, "floor")
	if err := os.MkdirAll(floorDir, 0o700); err != nil {
		b.Fatal(err)
	}
	var ours, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		files := paths[1000+(i%190)*5 : 1000+(i%190)*5+5]
		start := time.Now()
		job(100+i, files)
		ours += time.Since(start)
		b.StopTimer()
		change(files, 100+i)

		start = time.Now()
		n := 0
		err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if _, err := d.Info(); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil || n < 2000 {
			b.Fatal(err, n)
		}
		for j, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(floorDir, fmt.Sprintf("%d-%d", i, j)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		floor += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(ours)/float64(floor), "x-floor")
}
