package memtools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// BenchmarkGrep runs the Grep tool over a 2,000-file memory dir on the
// real disk, and in the same loop a floor that reads every file (paths
// known in advance) and runs the same regexp; it reports x-floor.
func BenchmarkGrep(b *testing.B) {
	dir := b.TempDir()
	var paths []string
	body := strings.Repeat("remembered detail about the build and the deploy process\n", 16)
	for i := 0; i < 2000; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("t%02d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		p := filepath.Join(sub, fmt.Sprintf("m%04d.md", i))
		extra := ""
		if i%50 == 0 {
			extra = "the flaky-test quarantine list lives in ci/quarantine.txt\n"
		}
		if err := os.WriteFile(p, []byte("---\nname: m\n---\n"+body+extra), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	fsys := afero.NewOsFs()
	ts, err := New(dirAt(fsys, dir), Options{})
	if err != nil {
		b.Fatal(err)
	}
	grep := ts.grepTool()
	input, _ := json.Marshal(map[string]any{"pattern": `flaky-test \w+`})
	re := regexp.MustCompile(`flaky-test \w+`)
	ctx := context.Background()
	var ours, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := grep.Call(ctx, input)
		ours += time.Since(start)
		if err != nil || strings.Count(out, "\n") != 40 {
			b.Fatalf("grep: %v %q", err, out[:min(len(out), 200)])
		}
		b.StopTimer()
		start = time.Now()
		n := 0
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			if re.Match(data) {
				n++
			}
		}
		floor += time.Since(start)
		if n != 40 {
			b.Fatal(n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(ours)/float64(floor), "x-floor")
}
