package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The black-box sync tests below drive the built binary as a user does:
// `agentmem team serve` as a process, each person in a checkout of
// github.com/acme/shop with a home of their own, and nothing but the
// command line and the HTTP APIs to look at the results.

// person is one teammate: a checkout of acme/shop, a home, and the tokens
// and stores in the environment.
type person struct {
	t             *testing.T
	name, project string
	env           []string
	team          string // <auto memory>/team/
}

// newPerson makes who's checkout under root; stores is the value of
// CLAUDE_MEMORY_STORES ("" for none).
func newPerson(t *testing.T, root, who, token, stores string) *person {
	t.Helper()
	project, env := clone(t, root, who)
	env = append(env, "AGENTMEM_TEAM_TOKEN="+token, "AGENTMEM_STORE_TOKEN="+token, "CLAUDE_MEMORY_STORES="+stores)
	p := &person{t: t, name: who, project: project, env: env}
	p.team = projectTeamDir(t, project, env)
	require.NoError(t, os.MkdirAll(p.team, 0o755))
	return p
}

// run runs the binary in the person's checkout and returns stdout and
// stderr together, and the exit code.
func (p *person) run(args ...string) (string, int) {
	p.t.Helper()
	out, errOut, code := runIn(p.t, p.project, p.env, args...)
	return out + errOut, code
}

// ok runs args and fails the test unless they exit 0.
func (p *person) ok(args ...string) string {
	p.t.Helper()
	out, code := p.run(args...)
	require.Equal(p.t, 0, code, "%s: agentmem %s:\n%s", p.name, strings.Join(args, " "), out)
	return out
}

// write writes raw bytes at a slash path below dir.
func writeRaw(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// memoryFiles reads every regular file below dir whose path has no
// segment starting with "." (what a sync or the prompt would take for a
// memory), keyed by slash path without a leading slash.
func memoryFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(raw)
		}
		return nil
	})
	if os.IsNotExist(err) {
		return out
	}
	require.NoError(t, err)
	return out
}

// hiddenFiles lists the files below dir whose own name starts with "."
// and that are none of known (by base name): what a cut-short write may
// leave behind.
func hiddenFiles(t *testing.T, dir string, known ...string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		for _, k := range known {
			if d.Name() == k {
				return nil
			}
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out
}

// storeMemories reads a store's memories through a full export, keyed by
// path without the leading slash.
func storeMemories(t *testing.T, url, token, store string) map[string]string {
	t.Helper()
	code, _, body := storeHTTP(t, "GET", url+"/v1/code/memory/"+store+"/memories/export", token, false, nil)
	require.Equal(t, 200, code, string(body))
	mems, whole := readExport(body)
	require.True(t, whole, "the export is whole")
	out := map[string]string{}
	for p, m := range mems {
		out[strings.TrimPrefix(p, "/")] = m.Content
	}
	return out
}

// teamEntries reads one repo's entries through the team protocol.
func teamEntries(t *testing.T, url, token string) map[string]string {
	t.Helper()
	e, err := serverEntries(url, token)
	require.NoError(t, err)
	return e
}

// startKilledAfter runs the binary as p and SIGKILLs it after delay; it
// reports whether the process was still running when the signal went.
func (p *person) runKilledAfter(delay time.Duration, args ...string) bool {
	p.t.Helper()
	cmd := newCommand(p.t, p.project, p.env, args...)
	require.NoError(p.t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return false
	case <-time.After(delay):
	}
	alive := cmd.Process.Signal(syscall.SIGKILL) == nil
	<-done
	return alive
}

// fixedServer is `agentmem team serve` on an address of its own that
// stays the same across restarts, with a token for acme that reaches the
// repos and every store.
func fixedServer(t *testing.T, root string) (srv *teamServer, url, token string) {
	t.Helper()
	tokens, token := syncTokens(t, root)
	srv = &teamServer{t: t, addr: freeAddr(t), db: filepath.Join(root, "team.db"), toks: tokens}
	srv.start()
	t.Cleanup(srv.kill)
	return srv, "http://" + srv.addr, token
}

// newCommand is the built binary run in dir with env added.
func newCommand(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// syncProtocol is one of the two sync commands a black-box test runs: its
// name, the folder below the team directory it keeps ("" for team sync,
// the mount's for store sync) and one round of it.
type syncProtocol struct {
	name, dir string
	round     []string
}

// storeMount creates the store name on the server at url and returns the
// CLAUDE_MEMORY_STORES value that mounts it as "proj".
func storeMount(t *testing.T, url, token, name string) string {
	t.Helper()
	createStore(t, url, token, name)
	return `[{"path":"/v1/code/memory/` + name + `","mount":"proj"}]`
}

// bothProtocols are team sync and store sync (the "proj" mount,
// deletions carried out at once) against the server at url.
func bothProtocols(url string) []syncProtocol {
	return []syncProtocol{
		{"team", "", []string{"team", "sync", "--server", url}},
		{"store", "proj/", []string{"store", "sync", "--server", url, "--delete-mode", "immediate"}},
	}
}
