package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTwoServersOnOneSQLiteFile runs what the team server guide calls
// safe: two `agentmem team serve` processes on one SQLite file. Two
// teammates, each on their own server, push at the same moment on both
// protocols; no acknowledged write is lost, both servers answer with all
// of them, and each teammate ends with the other's memories. A watcher on
// one server hears of a write through the other at once (its long-poll
// looks at the file every second), not at its interval.
func TestTwoServersOnOneSQLiteFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	first, url1, token := fixedServer(t, root)
	second := &teamServer{t: t, addr: freeAddr(t), db: first.db, toks: first.toks}
	second.start()
	t.Cleanup(second.kill)
	url2 := "http://" + second.addr
	stores := storeMount(t, url1, token, "shared-store")
	ana := newPerson(t, root, "ana", token, stores)
	ben := newPerson(t, root, "ben", token, stores)
	for i, pr := range bothProtocols(url1) {
		other := bothProtocols(url2)[i]
		t.Run(pr.name, func(t *testing.T) {
			ana.ok(pr.round...)
			ben.ok(other.round...)
			want := map[string]string{}
			for i := range 20 {
				for _, p := range []*person{ana, ben} {
					k := fmt.Sprintf("%s%s-%02d.md", pr.dir, p.name, i)
					want[k] = fmt.Sprintf("%s's memory %d\n", p.name, i)
					writeRaw(t, p.team, k, []byte(want[k]))
				}
			}
			var wg sync.WaitGroup
			outs, codes := make([]string, 2), make([]int, 2)
			for i, run := range []func() (string, int){func() (string, int) { return ana.run(pr.round...) }, func() (string, int) { return ben.run(other.round...) }} {
				wg.Add(1)
				go func() { defer wg.Done(); outs[i], codes[i] = run() }()
			}
			wg.Wait()
			for i := range codes {
				require.Equal(t, exitOK, codes[i], outs[i])
			}
			ana.ok(pr.round...)
			ben.ok(other.round...)
			for _, p := range []*person{ana, ben} {
				got := memoryFiles(t, p.team)
				for k, v := range want {
					assert.Equal(t, v, got[k], "%s: %s", p.name, k)
				}
			}
			for _, url := range []string{url1, url2} {
				var held map[string]string
				if pr.name == "team" {
					held = teamEntries(t, url, token)
				} else {
					held = storeMemories(t, url, token, "shared-store")
				}
				for k, v := range want {
					require.Equal(t, v, held[stripDir(k, pr.dir)], "%s holds %s", url, k)
				}
			}
		})
	}

	// A watcher on the second server, a push through the first.
	watch := newCommand(t, ben.project, ben.env, "team", "watch", "--server", url2, "--interval", "10m")
	require.NoError(t, watch.Start())
	t.Cleanup(func() { _ = watch.Process.Kill(); _ = watch.Wait() })
	time.Sleep(500 * time.Millisecond) // its first round, then its long-poll
	writeRaw(t, ana.team, "through-the-first.md", []byte("pushed through the first server\n"))
	ana.ok("team", "sync", "--server", url1)
	start := time.Now()
	waitFor(t, func() bool {
		return memoryFiles(t, ben.team)["through-the-first.md"] == "pushed through the first server\n"
	})
	t.Logf("the watcher on the second server pulled a write through the first after %s", time.Since(start).Round(10*time.Millisecond))
	assert.Less(t, time.Since(start), 30*time.Second, "woken by its long-poll, not its 10-minute interval")
}
