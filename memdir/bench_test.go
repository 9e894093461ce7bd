package memdir

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// benchTree writes n memory files (about 1 KiB each, 100 per directory) on
// the real disk and returns the directory and the file paths.
func benchTree(b *testing.B, n int) (string, []string) {
	b.Helper()
	dir := b.TempDir()
	paths := make([]string, 0, n)
	body := strings.Repeat("Some remembered detail about the project and why it matters.\n", 14)
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("topic%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		p := filepath.Join(sub, fmt.Sprintf("memory_%05d.md", i))
		content := fmt.Sprintf("---\nname: Memory %d\ndescription: Remembered fact number %d about the build\ntype: project\n---\n\n%s", i, i, body)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	return dir, paths
}

// floorRead is the least any scan must do: open each known file and read
// its first 4 KiB, with no directory walk, parsing or sorting.
func floorRead(b *testing.B, fsys afero.Fs, paths []string, buf []byte) {
	for _, p := range paths {
		f, err := fsys.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(f, buf); err != nil && err != io.ErrUnexpectedEOF {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkScanMemoryFiles reports ns/file for ScanMemoryFiles and for the
// floor, measured alternately in the same run, and their ratio (x-floor).
func BenchmarkScanMemoryFiles(b *testing.B) {
	for _, n := range []int{200, 2_000, 20_000} {
		for _, par := range []int{0, 1} {
			name := fmt.Sprintf("files=%d/parallel", n)
			if par == 1 {
				name = fmt.Sprintf("files=%d/serial", n)
			}
			benchScan(b, name, n, par)
		}
	}
}

func benchScan(b *testing.B, name string, n, parallelism int) {
	b.Run(name, func(b *testing.B) {
		dir, paths := benchTree(b, n)
		fsys := afero.NewOsFs()
		buf := make([]byte, 4096)
		ctx := context.Background()
		floorRead(b, fsys, paths, buf) // warm the page cache
		var scanTime, floorTime time.Duration
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			got, err := ScanMemoryFiles(ctx, fsys, dir, ScanOptions{Parallelism: parallelism})
			scanTime += time.Since(start)
			if err != nil || len(got) != min(n, maxMemoryFiles) {
				b.Fatalf("scan: %d headers, %v", len(got), err)
			}
			b.StopTimer()
			start = time.Now()
			floorRead(b, fsys, paths, buf)
			floorTime += time.Since(start)
			b.StartTimer()
		}
		perFile := float64(scanTime.Nanoseconds()) / float64(b.N*n)
		floor := float64(floorTime.Nanoseconds()) / float64(b.N*n)
		b.ReportMetric(perFile, "ns/file")
		b.ReportMetric(floor, "floor-ns/file")
		b.ReportMetric(perFile/floor, "x-floor")
	})
}

// BenchmarkBuildCombinedMemoryPrompt (buildCombinedMemoryPrompt) builds the combined prompt over two
// full 200-line indexes and 200 team files, and reports the ratio to a
// floor that only reads both indexes from the same filesystem: on the real
// disk, where hosts keep memory, and on afero's in-memory filesystem, whose
// own directory listing (it sorts a map under a lock on every call) costs
// about ten times that floor by itself.
func BenchmarkBuildCombinedMemoryPrompt(b *testing.B) {
	b.Run("fs=disk", func(b *testing.B) {
		benchCombinedPrompt(b, afero.NewOsFs(), b.TempDir())
	})
	b.Run("fs=memmap", func(b *testing.B) {
		benchCombinedPrompt(b, afero.NewMemMapFs(), "/m")
	})
}

func benchCombinedPrompt(b *testing.B, fsys afero.Fs, root string) {
	index := lines(200, indexEntry)
	team := filepath.Join(root, "team")
	if err := fsys.MkdirAll(team, 0o755); err != nil {
		b.Fatal(err)
	}
	indexes := []string{filepath.Join(root, "MEMORY.md"), filepath.Join(team, "MEMORY.md")}
	for _, p := range indexes {
		if err := afero.WriteFile(fsys, p, []byte(index), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		if err := afero.WriteFile(fsys, filepath.Join(team, fmt.Sprintf("topic_%d.md", i)), []byte("---\nname: t\n---\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// The team folder was last changed an hour ago, as between two syncs;
	// a folder changed this very second is listed again on every prompt.
	hourAgo := time.Now().Add(-time.Hour)
	if err := fsys.Chtimes(team, hourAgo, hourAgo); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := combinedPromptRequest{AutoDir: root + string(filepath.Separator)}
	var buildTime, floorTime time.Duration
	size := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := buildCombinedMemoryPrompt(ctx, fsys, req)
		buildTime += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
		b.StopTimer()
		start = time.Now()
		for _, p := range indexes {
			if _, err := afero.ReadFile(fsys, p); err != nil {
				b.Fatal(err)
			}
		}
		floorTime += time.Since(start)
		b.StartTimer()
	}
	if !strings.Contains(out0(fsys, req), "- topic_99.md\n") {
		b.Fatal("the prompt does not list the team files")
	}
	b.ReportMetric(float64(size), "prompt-bytes")
	b.ReportMetric(float64(buildTime)/float64(floorTime), "x-floor")
}

// out0 builds the prompt once, for a check after the timed loop.
func out0(fsys afero.Fs, req combinedPromptRequest) string {
	out, _ := buildCombinedMemoryPrompt(context.Background(), fsys, req)
	return out
}
