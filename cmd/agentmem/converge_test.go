package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// teamServer is `agentmem team serve` on a fixed address, so it can be
// killed and started again where the watchers expect it.
// startTeamServer runs `agentmem team serve` on a SQLite file under root
// until the test ends, and returns it, its URL and a token for acme/*.
func startTeamServer(t *testing.T, root string) (srv *teamServer, url, token string) {
	t.Helper()
	token, tokens := makeToken(t, root)
	srv = &teamServer{t: t, addr: freeAddr(t), db: filepath.Join(root, "team.db"), toks: tokens}
	srv.start()
	t.Cleanup(srv.kill)
	return srv, "http://" + srv.addr, token
}

type teamServer struct {
	t              *testing.T
	addr, db, toks string
	cmd            *exec.Cmd
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func (s *teamServer) start() {
	s.t.Helper()
	s.cmd = exec.Command(binary(s.t), "team", "serve", "--addr", s.addr, "--db", s.db, "--tokens", s.toks)
	out, err := s.cmd.StdoutPipe()
	require.NoError(s.t, err)
	require.NoError(s.t, s.cmd.Start())
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on") {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return
		}
	}
	s.t.Fatal("the server did not start")
}

func (s *teamServer) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// watcher is one `agentmem team watch` process.
type watcher struct {
	name, team string
	cmd        *exec.Cmd
	mu         sync.Mutex
	log        strings.Builder
}

func startWatcher(t *testing.T, root, name, url, token string) *watcher {
	t.Helper()
	team := filepath.Join(root, name, "memory", "team")
	require.NoError(t, os.MkdirAll(team, 0o755))
	w := &watcher{name: name, team: team}
	w.cmd = exec.Command(binary(t), "team", "watch", "--server", url, "--repo", "acme/shop", "--dir", team, "--interval", "1s", "--verbose")
	w.cmd.Env = append(os.Environ(), "AGENTMEM_TEAM_TOKEN="+token)
	pr, pw := io.Pipe()
	w.cmd.Stdout, w.cmd.Stderr = pw, pw
	require.NoError(t, w.cmd.Start())
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			w.mu.Lock()
			w.log.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = w.cmd.Process.Kill(); _ = w.cmd.Wait(); pw.Close() })
	return w
}

func (w *watcher) write(t *testing.T, key, content string) {
	t.Helper()
	p := filepath.Join(w.team, filepath.FromSlash(key))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func (w *watcher) remove(t *testing.T, key string) {
	t.Helper()
	require.NoError(t, os.Remove(filepath.Join(w.team, filepath.FromSlash(key))))
}

// files reads every synced file of the watcher's team dir.
func (w *watcher) files() map[string]string {
	out := map[string]string{}
	_ = filepath.WalkDir(w.team, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err == nil {
			rel, _ := filepath.Rel(w.team, p)
			out[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})
	return out
}

// kept reads everything kept aside in the watcher's conflicts folder.
func (w *watcher) kept() []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(filepath.Dir(w.team), teammem.ConflictsDirName), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, err := os.ReadFile(p); err == nil {
				out = append(out, string(data))
			}
		}
		return nil
	})
	return out
}

// serverEntries reads the repo through the protocol.
func serverEntries(url, token string) (map[string]string, error) {
	req, _ := http.NewRequest(http.MethodGet, url+teamwire.DefaultSyncPath+"?repo=acme%2Fshop", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return map[string]string{}, nil
	}
	var data teamwire.TeamMemoryData
	if err := json.NewDecoder(resp.Body).Decode(&data); err != nil {
		return nil, err
	}
	if data.Content.Entries == nil {
		return map[string]string{}, nil
	}
	return data.Content.Entries, nil
}

// converge waits until every watcher's directory equals the server's
// entries byte for byte, and returns them.
func converge(t *testing.T, url, token string, ws []*watcher, within time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for {
		server, err := serverEntries(url, token)
		if err == nil {
			same := true
			for _, w := range ws {
				if got := w.files(); !mapsEqual(got, server) {
					same = false
					last = fmt.Sprintf("%s has %v, the server %v", w.name, keys(got), keys(server))
					break
				}
			}
			if same {
				return server
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			for _, w := range ws {
				_ = w.cmd.Process.Signal(syscall.SIGQUIT) // a goroutine dump into its log
			}
			time.Sleep(time.Second)
			for _, w := range ws {
				w.mu.Lock()
				t.Logf("%s log:\n%s", w.name, w.log.String())
				w.mu.Unlock()
			}
			t.Fatalf("no convergence within %s: %s", within, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestWatchersConverge runs three `agentmem team watch` processes against
// one `agentmem team serve` through creates, edits, deletes, a deletion
// racing an edit, two edits racing each other, a SIGKILL of the server in
// the middle of a change, and random churn (20 s; AGENTMEM_CHURN_SECONDS
// changes it). After each phase every directory must equal the server's
// entries byte for byte; nothing deleted may come back; every edit that
// lost a race must survive in a conflicts folder.
func TestWatchersConverge(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srv, url, token := startTeamServer(t, root)
	a := startWatcher(t, root, "a", url, token)
	b := startWatcher(t, root, "b", url, token)
	c := startWatcher(t, root, "c", url, token)
	ws := []*watcher{a, b, c}
	const settle = 30 * time.Second

	// Creates.
	a.write(t, "a.md", "from a")
	b.write(t, "notes/b.md", "from b")
	c.write(t, "c.md", "from c")
	got := converge(t, url, token, ws, settle)
	assert.Equal(t, map[string]string{"a.md": "from a", "notes/b.md": "from b", "c.md": "from c"}, got)

	// An edit.
	b.write(t, "a.md", "from a, edited by b")
	got = converge(t, url, token, ws, settle)
	assert.Equal(t, "from a, edited by b", got["a.md"])

	// A deletion.
	c.remove(t, "notes/b.md")
	got = converge(t, url, token, ws, settle)
	assert.NotContains(t, got, "notes/b.md", "a deleted memory does not come back")

	// A deletion racing an edit: the edit wins.
	a.remove(t, "c.md")
	b.write(t, "c.md", "from c, edited by b")
	got = converge(t, url, token, ws, settle)
	assert.Equal(t, "from c, edited by b", got["c.md"])

	// Two edits racing: one takes the name, the other is kept aside.
	a.write(t, "a.md", "a's version")
	b.write(t, "a.md", "b's version")
	got = converge(t, url, token, ws, settle)
	winner := got["a.md"]
	require.Contains(t, []string{"a's version", "b's version"}, winner)
	loser := map[string]string{"a's version": "b's version", "b's version": "a's version"}[winner]
	var kept []string
	for _, w := range ws {
		kept = append(kept, w.kept()...)
	}
	assert.Contains(t, kept, loser, "the edit that lost the race survives in a conflicts folder")

	// The server dies in the middle of a change and comes back.
	a.write(t, "during-outage.md", "written while the server was down")
	srv.kill()
	c.write(t, "also-during-outage.md", "this one too")
	time.Sleep(3 * time.Second)
	srv.start()
	got = converge(t, url, token, ws, settle)
	assert.Equal(t, "written while the server was down", got["during-outage.md"])
	assert.Equal(t, "this one too", got["also-during-outage.md"])

	// Random churn: each watcher creates, edits and deletes keys of its
	// own, so the last write to each key is known.
	seconds := 20
	if s, err := strconv.Atoi(os.Getenv("AGENTMEM_CHURN_SECONDS")); err == nil {
		seconds = s
	}
	want := map[string]string{}
	deleted := map[string]bool{}
	for k, v := range got {
		want[k] = v
	}
	r := rand.New(rand.NewPCG(42, 7))
	owned := map[*watcher][]string{}
	ops := 0
	for end := time.Now().Add(time.Duration(seconds) * time.Second); time.Now().Before(end); ops++ {
		w := ws[r.IntN(len(ws))]
		mine := owned[w]
		switch op := r.IntN(10); {
		case op < 4 || len(mine) == 0:
			key := fmt.Sprintf("churn/%s-%04d.md", w.name, ops)
			content := fmt.Sprintf("%s created %d", w.name, ops)
			w.write(t, key, content)
			owned[w] = append(mine, key)
			want[key] = content
		case op < 8:
			key := mine[r.IntN(len(mine))]
			content := fmt.Sprintf("%s edited %s at %d", w.name, key, ops)
			w.write(t, key, content)
			want[key] = content
		default:
			i := r.IntN(len(mine))
			key := mine[i]
			w.remove(t, key)
			owned[w] = append(mine[:i], mine[i+1:]...)
			delete(want, key)
			deleted[key] = true
		}
		time.Sleep(time.Duration(50+r.IntN(400)) * time.Millisecond)
	}
	got = converge(t, url, token, ws, 60*time.Second)
	for k := range deleted {
		assert.NotContains(t, got, k, "deleted during churn, came back")
	}
	assert.Equal(t, want, got, "every directory ends with every last write")
	t.Logf("%d churn operations over %d s: %d memories, %d deleted, all three directories equal the server", ops, seconds, len(got), len(deleted))
}

// runIn runs the binary in dir ("" for the current one) with env.
func runIn(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runBinary(t, dir, env, "", args...)
}

// runBinary runs the built command in dir with env added and stdin, and
// returns its stdout, stderr and exit code.
func runBinary(t *testing.T, dir string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errOut.String(), code
}

// TestTeamSessionFromTheREADME follows the README's two-teammate session:
// each works in a clone with a github.com remote and passes only --server;
// --repo and --dir come from the project.
func TestTeamSessionFromTheREADME(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	withToken := func(project string, env []string) (string, []string) {
		return project, append(env, "AGENTMEM_TEAM_TOKEN="+token)
	}
	teamDir := func(project string, env []string) string { return projectTeamDir(t, project, env) }
	ana, anaEnv := withToken(clone(t, root, "ana"))
	ben, benEnv := withToken(clone(t, root, "ben"))
	anaTeam, benTeam := teamDir(ana, anaEnv), teamDir(ben, benEnv)
	require.NotEqual(t, anaTeam, benTeam)

	require.NoError(t, os.MkdirAll(anaTeam, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(anaTeam, "deploy.md"), []byte("Deploys happen on Tuesdays."), 0o644))
	out, errOut, code := runIn(t, ana, anaEnv, "team", "sync", "--server", url)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pushed  deploy.md")

	out, errOut, code = runIn(t, ben, benEnv, "team", "sync", "--server", url)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote   deploy.md")
	require.NoError(t, os.WriteFile(filepath.Join(benTeam, "testing.md"), []byte("Integration tests use the real Postgres."), 0o644))
	out, _, code = runIn(t, ben, benEnv, "team", "sync", "--server", url)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "pushed  testing.md")
	out, _, _ = runIn(t, ana, anaEnv, "team", "pull", "--server", url)
	assert.Contains(t, out, "wrote   testing.md")

	require.NoError(t, os.Remove(filepath.Join(benTeam, "testing.md")))
	out, _, code = runIn(t, ben, benEnv, "team", "sync", "--server", url)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "removed testing.md on the server")
	for range 2 { // Ana's next syncs delete her copy; none brings it back
		_, _, code = runIn(t, ana, anaEnv, "team", "sync", "--server", url)
		require.Equal(t, 0, code)
		_, err := os.Stat(filepath.Join(anaTeam, "testing.md"))
		assert.True(t, os.IsNotExist(err))
	}
	_, _, code = runIn(t, ben, benEnv, "team", "sync", "--server", url)
	require.Equal(t, 0, code)
	_, err := os.Stat(filepath.Join(benTeam, "testing.md"))
	assert.True(t, os.IsNotExist(err), "a deleted memory does not come back")

	// Both edit deploy.md: exit 7, the other edit kept aside.
	require.NoError(t, os.WriteFile(filepath.Join(anaTeam, "deploy.md"), []byte("Deploys happen on Wednesdays."), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(benTeam, "deploy.md"), []byte("Deploys happen on Thursdays."), 0o644))
	_, _, code = runIn(t, ana, anaEnv, "team", "sync", "--server", url)
	require.Equal(t, 0, code)
	out, _, code = runIn(t, ben, benEnv, "team", "sync", "--server", url)
	assert.Equal(t, exitConflict, code)
	assert.Contains(t, out, "conflict deploy.md: took the server's version; yours is kept at ")
	kept, err := filepath.Glob(filepath.Join(filepath.Dir(filepath.Clean(benTeam)), teammem.ConflictsDirName, "deploy.md.*.md"))
	require.NoError(t, err)
	require.Len(t, kept, 1)
	data, err := os.ReadFile(kept[0])
	require.NoError(t, err)
	assert.Equal(t, "Deploys happen on Thursdays.", string(data))
}
