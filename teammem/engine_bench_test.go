package teammem_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
)

// BenchmarkEngineRound runs the sync engine's round through the team
// driver on a folder of 2,000 memories against a team server: x-floor
// is an unchanged round's time over a stat walk of the folder (both
// measured here), bytes-ratio what a round with one changed memory sends
// over what the first, full upload sent.
func BenchmarkEngineRound(b *testing.B) {
	const n = 2000
	body := make([]byte, 600)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	ctx := context.Background()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	if err != nil {
		b.Fatal(err)
	}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, MaxEntries: 5000, RatePerToken: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	dir := b.TempDir()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r, err := teammem.NewRemote(teammem.Options{BaseURL: srv.URL, Repo: "acme/bench", Token: token})
	if err != nil {
		b.Fatal(err)
	}
	e, err := foldersync.New(d, dir, r, foldersync.Options{})
	if err != nil {
		b.Fatal(err)
	}
	round := func() foldersync.Result {
		res, err := e.Round(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	if res := round(); len(res.Pushed) != n {
		b.Fatalf("the first round pushed %d of %d", len(res.Pushed), n)
	}
	_, full := r.Traffic()
	// Files of a folder in use were written long before the round: aged
	// past the stat cache's racy window, they are not read again.
	past := time.Now().Add(-time.Hour)
	for i := range n {
		if err := os.Chtimes(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), past, past); err != nil {
			b.Fatal(err)
		}
	}
	round() // settles what the first round learned
	round()

	walk := func() {
		if err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			_, err = de.Info()
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	// Rounds and walks alternate, so that both meet the same load.
	var roundT, walkT time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if res := round(); res.Changed() {
			b.Fatalf("an unchanged folder's round changed something: %+v", res)
		}
		roundT += time.Since(start)
		b.StopTimer()
		start = time.Now()
		walk()
		walkT += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()

	if err := os.WriteFile(filepath.Join(dir, "m0007.md"), []byte("one changed memory"), 0o644); err != nil {
		b.Fatal(err)
	}
	_, before := r.Traffic()
	if res := round(); len(res.Pushed) != 1 {
		b.Fatalf("one changed memory: pushed %v", res.Pushed)
	}
	_, after := r.Traffic()
	b.ReportMetric(float64(roundT)/float64(walkT), "x-floor")
	b.ReportMetric(float64(after-before)/float64(full), "bytes-ratio")
	b.ReportMetric(float64(full), "full-bytes")
}

// BenchmarkClientRound is BenchmarkEngineRound through the team client
// (Client.Sync: the driver, the SyncState, the store-folder check): one
// Client keeps its engine across calls, so an unchanged round reads no
// file. x-floor is an unchanged Sync's time over a stat walk of the
// folder, both measured here, in turns.
func BenchmarkClientRound(b *testing.B) {
	const n = 2000
	body := make([]byte, 600)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	ctx := context.Background()
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	if err != nil {
		b.Fatal(err)
	}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}, MaxEntries: 5000, RatePerToken: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	dir := filepath.Join(b.TempDir(), "team")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c, err := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: srv.URL, Repo: "acme/bench", Token: token})
	if err != nil {
		b.Fatal(err)
	}
	var st teammem.SyncState
	round := func() foldersync.Result {
		res, err := c.Sync(ctx, &st)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	if res := round(); len(res.Pushed) != n {
		b.Fatalf("the first round pushed %d of %d", len(res.Pushed), n)
	}
	past := time.Now().Add(-time.Hour) // files of a folder in use: past the racy window
	for i := range n {
		if err := os.Chtimes(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), past, past); err != nil {
			b.Fatal(err)
		}
	}
	round() // settles what the first round learned
	round()
	walk := func() {
		if err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			_, err = de.Info()
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	var roundT, walkT time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if res := round(); !res.Unchanged {
			b.Fatalf("an unchanged folder's round did something: %+v", res)
		}
		roundT += time.Since(start)
		b.StopTimer()
		start = time.Now()
		walk()
		walkT += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(roundT)/float64(walkT), "x-floor")
}
