package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// background is one long-running command (a watcher) with its output.
type background struct {
	name string
	proc *os.Process
	done chan struct{}
	mu   sync.Mutex
	out  strings.Builder
}

func (b *background) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.Write(p)
}

func (b *background) log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// start runs args as p in the background until stop or the test's end.
func (p *person) start(args ...string) *background {
	p.t.Helper()
	b := &background{name: p.name + " " + strings.Join(args[:2], " "), done: make(chan struct{})}
	cmd := newCommand(p.t, p.project, p.env, args...)
	cmd.Stdout, cmd.Stderr = b, b
	require.NoError(p.t, cmd.Start())
	b.proc = cmd.Process
	go func() { _ = cmd.Wait(); close(b.done) }()
	p.t.Cleanup(func() { b.signal(syscall.SIGKILL) })
	return b
}

// signal sends sig and waits for the process to end.
func (b *background) signal(sig syscall.Signal) {
	_ = b.proc.Signal(sig)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.proc.Kill()
		<-b.done
	}
}

// eventually polls ok every 200 ms until it holds or within passes; on
// timeout it fails the test with what last returned and the logs.
func eventually(t *testing.T, within time.Duration, ok func() (bool, string), logs ...*background) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		good, why := ok()
		if good {
			return
		}
		if time.Now().After(deadline) {
			for _, b := range logs {
				t.Logf("%s:\n%s", b.name, b.log())
			}
			t.Fatalf("not within %s: %s", within, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// withoutPrefixes returns m without the keys under any of the folders.
func withoutPrefixes(m map[string]string, folders ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		keep := true
		for _, f := range folders {
			if strings.HasPrefix(k, f+"/") {
				keep = false
			}
		}
		if keep {
			out[k] = v
		}
	}
	return out
}

// under returns the keys of m below folder, without the folder.
func under(m map[string]string, folder string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, folder+"/"); ok {
			out[rest] = v
		}
	}
	return out
}

func memory(name, body string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\ntype: project\n---\n%s\n", name, body, body)
}

// TestTeamSyncAndTwoStoresSideBySide follows the two walkthroughs of the
// documentation (team sync, then memory stores) in one project, with the
// tokens, server and stores made as they say: Ana leaves `team watch`
// and `store watch` running, Ben runs one-shot `team sync` and `store
// sync`. Edits, creations and deletions on both sides, in the team folder
// and in both store folders, converge everywhere; the team repo never
// holds a store's file or manifest, no store holds a team file, and
// `agentmem lint` finds nothing wrong.
func TestTeamSyncAndTwoStoresSideBySide(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	admin := filepath.Join(root, "admin")
	require.NoError(t, os.MkdirAll(admin, 0o755))
	token := func(args ...string) string {
		out, errOut, code := runIn(t, admin, nil, append([]string{"team", "token", "--org", "acme"}, args...)...)
		require.Equal(t, 0, code, errOut)
		return strings.TrimSpace(out)
	}
	anaTeam := token("--repo", "acme/*", "--name", "ana", "--add", "tokens.json")
	anaKey := token("--store", "*", "--name", "alice", "--add", "tokens.json")
	benTeam := token("--repo", "acme/*", "--name", "ben", "--add", "tokens.json")
	benKey := token("--store", "*", "--name", "bob", "--add", "tokens.json")
	srv := &teamServer{t: t, addr: freeAddr(t), db: filepath.Join(admin, "team.db"), toks: filepath.Join(admin, "tokens.json")}
	srv.start()
	t.Cleanup(srv.kill)
	url := "http://" + srv.addr
	for _, name := range []string{"team-store", "docs-store"} {
		createStore(t, url, anaKey, name)
	}
	const stores = `[{"path": "/v1/code/memory/team-store", "mount": "proj"}, {"path": "/v1/code/memory/docs-store", "mount": "docs"}]`
	ana := newPerson(t, root, "ana", anaTeam, stores)
	ana.env = append(ana.env, "AGENTMEM_STORE_TOKEN="+anaKey)
	ben := newPerson(t, root, "ben", benTeam, stores)
	ben.env = append(ben.env, "AGENTMEM_STORE_TOKEN="+benKey)

	out := ana.ok("store", "ls")
	assert.Contains(t, out, "proj")
	assert.Contains(t, out, "docs")
	ana.ok("store", "sync", "--server", url) // mounts both folders
	ana.ok("team", "sync", "--server", url)
	teamWatch := ana.start("team", "watch", "--server", url, "--interval", "1s")
	storeWatch := ana.start("store", "watch", "--server", url, "--resync", "1s", "--delete-mode", "immediate")
	logs := []*background{teamWatch, storeWatch}

	// Ana writes in all three folders; her watchers carry each to its own
	// server side.
	writeRaw(t, ana.team, "testing.md", []byte(memory("testing", "integration tests use the real Postgres")))
	writeRaw(t, ana.team, "proj/deploy.md", []byte(memory("deploy", "deploys freeze on Fridays")))
	writeRaw(t, ana.team, "docs/guide.md", []byte(memory("guide", "the style guide lives in docs/")))
	ana.ok("lint", "--fix")

	ben.ok("store", "sync", "--server", url, "--delete-mode", "immediate")
	ben.ok("team", "sync", "--server", url)
	benRound := func() {
		t.Helper()
		for _, args := range [][]string{{"team", "sync", "--server", url}, {"store", "sync", "--server", url, "--delete-mode", "immediate"}} {
			out, code := ben.run(args...)
			require.Equal(t, 0, code, "ben: %v\n%s", args, out)
			assert.NotContains(t, out, "holds files and no", "ben: %v", args)
			for _, f := range []string{"proj/", "docs/", ".memory-sync"} {
				if args[0] == "team" {
					assert.NotContains(t, out, f, "team sync touched a store's folder")
				}
			}
		}
	}
	same := func() (bool, string) {
		benRound()
		a, b := memoryFiles(t, ana.team), memoryFiles(t, ben.team)
		if !mapsEqual(a, b) {
			return false, fmt.Sprintf("ana has %v, ben %v", keys(a), keys(b))
		}
		entries := teamEntries(t, url, anaTeam)
		if want := withoutPrefixes(a, "proj", "docs"); !mapsEqual(entries, want) {
			return false, fmt.Sprintf("the team repo holds %v, the team folder %v", keys(entries), keys(want))
		}
		for mount, store := range map[string]string{"proj": "team-store", "docs": "docs-store"} {
			if got, want := storeMemories(t, url, anaKey, store), under(a, mount); !mapsEqual(got, want) {
				return false, fmt.Sprintf("%s holds %v, the folder %s/ %v", store, keys(got), mount, keys(want))
			}
		}
		return true, ""
	}
	eventually(t, 30*time.Second, same, logs...)
	b := memoryFiles(t, ben.team)
	assert.Contains(t, b, "testing.md")
	assert.Contains(t, b, "proj/deploy.md")
	assert.Contains(t, b, "docs/guide.md")

	// Both sides edit, create and delete on every path.
	writeRaw(t, ben.team, "testing.md", []byte(memory("testing", "integration tests use the real Postgres, edited by ben")))
	writeRaw(t, ben.team, "proj/deploy.md", []byte(memory("deploy", "deploys freeze on Fridays and holidays")))
	writeRaw(t, ben.team, "docs/api.md", []byte(memory("api", "the API is versioned by date")))
	require.NoError(t, os.Remove(filepath.Join(ben.team, "docs", "guide.md")))
	writeRaw(t, ana.team, "oncall.md", []byte(memory("oncall", "the on-call rota is in PagerDuty")))
	writeRaw(t, ana.team, "proj/release.md", []byte(memory("release", "releases are cut on Tuesdays")))
	ana.ok("lint", "--fix")
	ben.ok("lint", "--fix")
	eventually(t, 40*time.Second, func() (bool, string) {
		ok, why := same()
		if !ok {
			return false, why
		}
		a := memoryFiles(t, ana.team)
		for k, want := range map[string]string{
			"testing.md":      "edited by ben",
			"proj/deploy.md":  "and holidays",
			"docs/api.md":     "versioned by date",
			"oncall.md":       "PagerDuty",
			"proj/release.md": "Tuesdays",
		} {
			if !strings.Contains(a[k], want) {
				return false, fmt.Sprintf("%s is %q", k, a[k])
			}
		}
		if _, ok := a["docs/guide.md"]; ok {
			return false, "docs/guide.md is still there"
		}
		return true, ""
	}, logs...)

	for _, p := range []*person{ana, ben} {
		entries := teamEntries(t, url, anaTeam)
		for k := range entries {
			assert.False(t, strings.HasPrefix(k, "proj/") || strings.HasPrefix(k, "docs/") || strings.Contains(k, ".memory-sync"), "the team repo holds %s", k)
		}
		out, code := p.run("lint")
		assert.Equal(t, 0, code, "%s: lint:\n%s", p.name, out)
	}
	for _, b := range logs {
		assert.NotContains(t, b.log(), "holds files and no", b.name)
		assert.NotContains(t, b.log(), "replaced", b.name)
	}
	storeWatch.signal(syscall.SIGTERM)
	teamWatch.signal(syscall.SIGTERM)
}
