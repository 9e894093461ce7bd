package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
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
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/lib/environments"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/afero"
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
// the middle of a change, and random churn (8 s; AGENTMEM_CHURN_SECONDS
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
	seconds := 8
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

// folderFiles reads the synced files of a folder (no dot names), keyed
// by their store path ("/" first).
func folderFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel, content := range memoryFiles(t, dir) {
		out["/"+rel] = content
	}
	return out
}

// storeFiles reads the store's memories from a full export.
func storeFiles(t *testing.T, url, key string) map[string]string {
	t.Helper()
	code, _, body := storeHTTP(t, "GET", url+"/v1/code/memory/team-store/memories/export", key, false, nil)
	require.Equal(t, 200, code, string(body))
	mems, whole := readExport(body)
	require.True(t, whole)
	out := map[string]string{}
	for p, m := range mems {
		out[p] = m.Content
	}
	return out
}

// TestStoreSyncConvergence runs three agentmem clients and the official Go
// SDK's own directory sync (lib/environments) on one store of the built
// server: creates, edits, deletes, a delete against an edit, an edit
// against an edit, the server SIGKILLed in the middle of a push and
// restarted, and churn. At the end every folder equals the store, every
// owner's last write is there, and the losing side of the conflict is
// kept.
func TestStoreSyncConvergence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, key, _, _ := storeTokens(t, dir)
	db := filepath.Join(dir, "team.db")
	addr := freeAddr(t)
	url, srv := serveArgs(t, db, tokens, "--addr", addr)
	code, _, body := storeHTTP(t, "POST", url+"/v1/memory_stores", key, true, map[string]any{"name": "team-store"})
	require.Equal(t, 200, code, string(body))
	storeID := decodeJSON(t, body)["id"].(string)
	mounts, err := storesync.ParseMounts(`["/v1/code/memory/team-store"]`)
	require.NoError(t, err)
	now := time.Now()
	clock := func() time.Time { return now }
	ctx := context.Background()
	type agent struct {
		name string
		c    *storesync.Client
		dir  string
	}
	var agents []*agent
	for _, name := range []string{"ana", "ben", "cy"} {
		d := mounts[0].Dir(filepath.Join(dir, name))
		c, err := storesync.New(folderAt(afero.NewOsFs(), d), storesync.Options{BaseURL: url, Token: key, Mount: mounts[0], Now: clock, Retries: -1})
		require.NoError(t, err)
		agents = append(agents, &agent{name, c, d})
	}
	round := func() {
		t.Helper()
		for _, a := range agents {
			_, err := a.c.Sync(ctx)
			require.NoError(t, err, a.name)
		}
	}
	ana, ben, cy := agents[0], agents[1], agents[2]
	round() // mount the store in every folder
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		writeFile(t, ana.dir, n+".md", "first "+n)
	}
	round()

	// The SDK's client, as a session would use it.
	sdkDir := filepath.Join(dir, "sdk", "memory")
	sdk, err := environments.NewSessionMemoryStores(anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey(key)),
		environments.SessionMemoryStoresOptions{Workdir: dir, SyncInterval: environments.MinMemorySyncInterval,
			Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	var session anthropic.BetaManagedAgentsSession
	require.NoError(t, json.Unmarshal(fmt.Appendf(nil, `{"id":"sesn_1","type":"session","resources":[{"type":"memory_store","memory_store_id":%q,"mount_path":%q}]}`, storeID, sdkDir), &session))
	require.NoError(t, sdk.Download(ctx, &session))
	sdkSynced := time.Now()
	sdkRound := func() {
		time.Sleep(time.Until(sdkSynced.Add(environments.MinMemorySyncInterval + 100*time.Millisecond)))
		sdk.SyncIfDue(ctx)
		sdkSynced = time.Now()
	}
	assert.Equal(t, storeFiles(t, url, key), folderFiles(t, sdkDir), "the SDK downloaded the store")

	// Edits, a delete against an edit (the edit wins), an SDK edit.
	writeFile(t, ben.dir, "a.md", "ben's a")
	require.NoError(t, os.Remove(filepath.Join(cy.dir, "b.md")))
	writeFile(t, ana.dir, "b.md", "ana's b")
	writeFile(t, sdkDir, "c.md", "the SDK's c")
	_, err = ana.c.Sync(ctx)
	require.NoError(t, err)
	sdkRound()
	now = now.Add(31 * time.Second)
	round()
	round()
	assert.Equal(t, "ana's b", readFile(t, cy.dir, "b.md"), "an edit beats a deletion")
	assert.Equal(t, "the SDK's c", readFile(t, ana.dir, "c.md"))

	// An edit against an edit: the store's version takes the file, the
	// other is kept.
	writeFile(t, ana.dir, "d.md", "ana's d")
	writeFile(t, ben.dir, "d.md", "ben's d")
	_, err = ana.c.Sync(ctx)
	require.NoError(t, err)
	res, err := ben.c.Sync(ctx)
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)
	kept, err := os.ReadFile(res.Conflicts[0].SavedAs)
	require.NoError(t, err)
	assert.Equal(t, "ben's d", string(kept))

	// The server is killed in the middle of a push, then restarted on the
	// same database and address.
	for i := range 40 {
		writeFile(t, cy.dir, fmt.Sprintf("bulk/%02d.md", i), fmt.Sprintf("bulk %d", i))
	}
	done := make(chan error, 1)
	go func() { _, err := cy.c.Sync(ctx); done <- err }()
	time.Sleep(30 * time.Millisecond)
	require.NoError(t, srv.Process.Signal(syscall.SIGKILL))
	_ = srv.Wait()
	t.Logf("the sync cut by SIGKILL ended with: %v", <-done)
	url2, _ := serveArgs(t, db, tokens, "--addr", addr)
	require.Equal(t, url, url2)
	round()

	// Churn: each agent rewrites, creates and deletes its own files.
	rng := rand.New(rand.NewPCG(1, 2))
	last := map[string]string{} // path -> the owner's last content ("" = deleted)
	for step := range 6 {
		for _, a := range agents {
			for k := range 3 {
				p := fmt.Sprintf("/%s/%d.md", a.name, rng.IntN(5))
				if rng.IntN(4) == 0 && last[p] != "" {
					require.NoError(t, os.Remove(filepath.Join(a.dir, filepath.FromSlash(p[1:]))))
					last[p] = ""
					continue
				}
				content := fmt.Sprintf("%s step %d write %d", a.name, step, k)
				writeFile(t, a.dir, p[1:], content)
				last[p] = content
			}
		}
		now = now.Add(31 * time.Second)
		round()
		if step%3 == 2 {
			sdkRound()
		}
	}

	// Quiesce, and the SDK's last sync.
	for range 3 {
		now = now.Add(31 * time.Second)
		round()
	}
	sdkRound()
	sdk.Finish(ctx)
	for range 2 {
		now = now.Add(31 * time.Second)
		round()
	}
	want := storeFiles(t, url, key)
	for p, content := range last {
		if content == "" {
			assert.NotContains(t, want, p, "%s was deleted by its owner", p)
		} else {
			assert.Equal(t, content, want[p], "%s holds its owner's last write", p)
		}
	}
	for i := range 40 {
		assert.Equal(t, fmt.Sprintf("bulk %d", i), want[fmt.Sprintf("/bulk/%02d.md", i)], "the push cut by SIGKILL completed later")
	}
	assert.Equal(t, "ana's d", want["/d.md"])
	for _, a := range agents {
		assert.Equal(t, want, folderFiles(t, a.dir), "%s equals the store", a.name)
	}
	assert.Equal(t, want, folderFiles(t, sdkDir), "the SDK's folder equals the store")
}

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

// teammatesOnBothProtocols runs body, in a parallel subtest per sync
// protocol, for two teammates, ana and ben, of one built server (a store
// named store mounted as "proj" for store sync), after a first round of
// each: a store's folder starts empty.
func teammatesOnBothProtocols(t *testing.T, store string, body func(t *testing.T, pr syncProtocol, ana, ben *person)) {
	t.Helper()
	_, url, token := fixedServer(t, t.TempDir())
	stores := storeMount(t, url, token, store)
	for _, pr := range bothProtocols(url) {
		t.Run(pr.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			ana := newPerson(t, base, "ana", token, stores)
			ben := newPerson(t, base, "ben", token, stores)
			ana.ok(pr.round...)
			ben.ok(pr.round...)
			body(t, pr, ana, ben)
		})
	}
}

// bothProtocols are team sync and store sync (the "proj" mount,
// deletions carried out at once) against the server at url.
func bothProtocols(url string) []syncProtocol {
	return []syncProtocol{
		{"team", "", []string{"team", "sync", "--server", url}},
		{"store", "proj/", []string{"store", "sync", "--server", url, "--delete-mode", "immediate"}},
	}
}
