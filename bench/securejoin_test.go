package bench_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/teammem"
)

// BenchmarkValidateTeamMemWritePath validates paths 2, 5 and 10 components
// below the team dir on the real disk. In the same loop it times
// securejoin.SecureJoinVFS on the same tree (the peer) and a bare Lstat of
// each component (the floor), and reports x-securejoin and x-floor.
func BenchmarkValidateTeamMemWritePath(b *testing.B) {
	for _, depth := range []int{2, 5, 10} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			root, err := filepath.EvalSymlinks(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			team := filepath.Join(root, "memory", "team")
			parts := make([]string, depth)
			for i := range parts {
				parts[i] = fmt.Sprintf("d%d", i)
			}
			parts[depth-1] = "file.md"
			rel := filepath.Join(parts...)
			if err := os.MkdirAll(filepath.Join(team, filepath.Dir(rel)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(team, rel), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
			abs := filepath.Join(team, rel)
			fsys := afero.NewOsFs()
			var ours, peer, floor time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := teammem.ValidateTeamMemWritePath(fsys, team, abs); err != nil {
					b.Fatal(err)
				}
				ours += time.Since(start)
				b.StopTimer()
				start = time.Now()
				if _, err := securejoin.SecureJoinVFS(team, rel, nil); err != nil {
					b.Fatal(err)
				}
				peer += time.Since(start)
				start = time.Now()
				p := team
				for _, c := range parts {
					p += "/" + c
					if _, err := os.Lstat(p); err != nil {
						b.Fatal(err)
					}
				}
				floor += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(ours)/float64(peer), "x-securejoin")
			b.ReportMetric(float64(ours)/float64(floor), "x-floor")
		})
	}
}
