package main

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/agentmem-sdk/agentmem/memdir"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncFixture is a built server with one store, and a clock the clients
// share.
type syncFixture struct {
	t      *testing.T
	tokens string
	url    string
	key    string
	mount  storesync.Mount
	now    time.Time
}

func newSyncFixture(t *testing.T, db string) *syncFixture {
	t.Helper()
	dir := t.TempDir()
	tokens, key, _, _ := storeTokens(t, dir)
	if db == "" {
		db = filepath.Join(dir, "team.db")
	}
	url, _ := serveArgs(t, db, tokens)
	f := &syncFixture{t: t, tokens: tokens, url: url, key: key, now: time.Now()}
	f.createStore()
	mounts, err := storesync.ParseMounts(`[{"path": "/v1/code/memory/team-store", "mount": "proj"}]`)
	require.NoError(t, err)
	f.mount = mounts[0]
	return f
}

func (f *syncFixture) createStore() {
	code, _, body := storeHTTP(f.t, "POST", f.url+"/v1/memory_stores", f.key, true, map[string]any{"name": "team-store"})
	require.Equal(f.t, 200, code, string(body))
}

// client returns a sync client for a fresh auto-memory directory, after
// its first round (which mounts the store: the manifests are written).
func (f *syncFixture) client(name string, mode ...string) (*storesync.Client, string) {
	f.t.Helper()
	c, dir := f.newClient(name, mode...)
	syncOK(f.t, c)
	return c, dir
}

// newClient returns a sync client that has not synced yet.
func (f *syncFixture) newClient(name string, mode ...string) (*storesync.Client, string) {
	f.t.Helper()
	auto := filepath.Join(f.t.TempDir(), name)
	dir := f.mount.Dir(auto)
	cfg := storesync.Options{BaseURL: f.url, Token: f.key, Mount: f.mount, Now: func() time.Time { return f.now }}
	if len(mode) > 0 {
		cfg.DeleteMode = mode[0]
	}
	c, err := storesync.New(folderAt(afero.NewOsFs(), dir), cfg)
	require.NoError(f.t, err)
	return c, dir
}

func syncOK(t *testing.T, c *storesync.Client) storesync.Result {
	t.Helper()
	res, err := c.Sync(context.Background())
	require.NoError(t, err)
	return res
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(raw)
}

func TestStoreSyncBothWays(t *testing.T) {
	f := newSyncFixture(t, "")
	a, aDir := f.client("ana")
	b, bDir := f.client("ben")
	writeFile(t, aDir, "MEMORY.md", "- [Deploys](deploy.md)\n")
	writeFile(t, aDir, "deploy.md", "Deploys freeze on Fridays.\n")
	writeFile(t, aDir, "notes/ci.md", "CI runs on main.\n")
	writeFile(t, aDir, ".hidden.md", "never synced")
	writeFile(t, aDir, "image.png", "never synced")
	res := syncOK(t, a)
	assert.ElementsMatch(t, []string{"/MEMORY.md", "/deploy.md", "/notes/ci.md"}, res.Pushed)
	res = syncOK(t, b)
	assert.ElementsMatch(t, []string{"/MEMORY.md", "/deploy.md", "/notes/ci.md"}, res.Pulled)
	assert.Equal(t, "CI runs on main.\n", readFile(t, bDir, "notes/ci.md"))
	assert.NoFileExists(t, filepath.Join(bDir, "image.png"))

	// The manifests, in Claude Code's JSON.
	var manifest map[string]any
	require.NoError(t, json.Unmarshal([]byte(readFile(t, bDir, ".memory-sync")), &manifest))
	assert.Equal(t, map[string]any{"v": float64(1), "partition": "/v1/code/memory/team-store"}, manifest)
	var basis struct {
		V                 int             `json:"v"`
		Partition         string          `json:"partition"`
		Entries           [][]string      `json:"entries"`
		Deletes           []any           `json:"deletes"`
		EntriesWereOnDisk bool            `json:"entriesWereOnDisk"`
		Extra             json.RawMessage `json:"held"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, bDir, ".memory-sync-basis")), &basis))
	assert.Equal(t, 1, basis.V)
	assert.True(t, basis.EntriesWereOnDisk)
	require.Len(t, basis.Entries, 3)
	assert.Equal(t, "/MEMORY.md", basis.Entries[0][0])
	assert.Regexp(t, `^mem_`, basis.Entries[0][1])
	assert.Equal(t, sha("- [Deploys](deploy.md)\n"), basis.Entries[0][2])

	// One side edits: the other pulls. Nothing to do after.
	writeFile(t, bDir, "deploy.md", "Deploys freeze on Fridays, except hotfixes.\n")
	res = syncOK(t, b)
	assert.Equal(t, []string{"/deploy.md"}, res.Pushed)
	res = syncOK(t, a)
	assert.Equal(t, []string{"/deploy.md"}, res.Pulled)
	assert.Equal(t, "Deploys freeze on Fridays, except hotfixes.\n", readFile(t, aDir, "deploy.md"))
	assert.False(t, syncOK(t, a).Changed())

	// Both edit: the store's version takes the file, the local one is kept.
	writeFile(t, aDir, "notes/ci.md", "Ana's CI note.\n")
	writeFile(t, bDir, "notes/ci.md", "Ben's CI note.\n")
	syncOK(t, a)
	res = syncOK(t, b)
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "Ana's CI note.\n", readFile(t, bDir, "notes/ci.md"))
	saved, err := os.ReadFile(res.Conflicts[0].SavedAs)
	require.NoError(t, err)
	assert.Equal(t, "Ben's CI note.\n", string(saved))
	assert.True(t, strings.HasPrefix(res.Conflicts[0].SavedAs, filepath.Join(bDir, ".memory-sync-conflicts")))

	// A secret is never pushed.
	writeFile(t, aDir, "token.md", "token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 end")
	res = syncOK(t, a)
	assert.Contains(t, res.Skipped, storesync.Skip{Path: "/token.md", Reason: "secret"})
	assert.Empty(t, res.Pushed)
}

func TestStoreSyncDeletes(t *testing.T) {
	f := newSyncFixture(t, "")
	a, aDir := f.client("ana")
	b, bDir := f.client("ben")
	writeFile(t, aDir, "old.md", "old")
	writeFile(t, aDir, "edited.md", "v1")
	syncOK(t, a)
	syncOK(t, b)

	// corroborate: the first walk records the miss, a walk 30 s later deletes.
	require.NoError(t, os.Remove(filepath.Join(aDir, "old.md")))
	res := syncOK(t, a)
	assert.Equal(t, []string{"/old.md"}, res.Pending)
	assert.Empty(t, res.DeletedRemote)
	assert.Contains(t, readFile(t, aDir, ".memory-sync-basis"), `"deletes":[["/old.md",`)
	f.now = f.now.Add(10 * time.Second)
	assert.Empty(t, syncOK(t, a).DeletedRemote, "two walks but only 10 s")
	f.now = f.now.Add(25 * time.Second)
	assert.Equal(t, []string{"/old.md"}, syncOK(t, a).DeletedRemote)
	assert.Equal(t, []string{"/old.md"}, syncOK(t, b).DeletedLocal)
	assert.NoFileExists(t, filepath.Join(bDir, "old.md"))

	// Deleted on one side, edited on the other: the edit wins.
	imm, immDir := f.client("ivy", storesync.DeleteImmediate)
	syncOK(t, imm)
	require.NoError(t, os.Remove(filepath.Join(immDir, "edited.md")))
	writeFile(t, bDir, "edited.md", "v2")
	syncOK(t, b)
	res = syncOK(t, imm)
	assert.Equal(t, []string{"/edited.md"}, res.Pulled)
	assert.Equal(t, "v2", readFile(t, immDir, "edited.md"))

	// never: a local deletion never reaches the store.
	nev, nevDir := f.client("nora", storesync.DeleteNever)
	syncOK(t, nev)
	require.NoError(t, os.Remove(filepath.Join(nevDir, "edited.md")))
	f.now = f.now.Add(time.Hour)
	syncOK(t, nev)
	assert.Empty(t, syncOK(t, nev).DeletedRemote)
	assert.Equal(t, []string{}, append([]string{}, syncOK(t, a).DeletedLocal...))
}

func TestStoreSyncMassDeleteHold(t *testing.T) {
	f := newSyncFixture(t, "")
	a, aDir := f.client("ana", storesync.DeleteImmediate)
	for i := range 60 {
		writeFile(t, aDir, "m"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26))+".md", "memory")
	}
	syncOK(t, a)
	entries, err := os.ReadDir(aDir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			require.NoError(t, os.Remove(filepath.Join(aDir, e.Name())))
		}
	}
	res := syncOK(t, a)
	require.Len(t, res.Held, 1)
	assert.Equal(t, "store", res.Held[0].Side)
	assert.Len(t, res.Held[0].Paths, 60)
	assert.Empty(t, res.DeletedRemote)
	b, _ := f.newClient("ben")
	assert.Len(t, syncOK(t, b).Pulled, 60, "the store kept every memory")
}

func TestStoreSyncRefusesAForeignFolder(t *testing.T) {
	f := newSyncFixture(t, "")
	c, dir := f.newClient("ana")
	writeFile(t, dir, "mine.md", "written before any sync")
	_, err := c.Sync(context.Background())
	var foreign *storesync.ForeignDirError
	require.True(t, errors.As(err, &foreign), "%v", err)
	assert.Contains(t, err.Error(), "remove or rename the folder")
	assert.Equal(t, "written before any sync", readFile(t, dir, "mine.md"), "nothing was touched")
	assert.NoFileExists(t, filepath.Join(dir, ".memory-sync"))
}

// TestStoreSyncSurvivesAReplacedOrRestoredStore: a store replaced under
// the same name, and a database restored from a backup, delete nothing
// on the clients; what the store lacks is pushed back.
func TestStoreSyncSurvivesAReplacedOrRestoredStore(t *testing.T) {
	f := newSyncFixture(t, "")
	a, aDir := f.client("ana", storesync.DeleteImmediate)
	writeFile(t, aDir, "one.md", "1")
	writeFile(t, aDir, "two.md", "2")
	syncOK(t, a)

	// Replaced: the store is deleted and made again under its name.
	code, _, body := storeHTTP(t, "GET", f.url+"/v1/memory_stores", f.key, true, nil)
	require.Equal(t, 200, code)
	id := decodeJSON(t, body)["data"].([]any)[0].(map[string]any)["id"].(string)
	code, _, _ = storeHTTP(t, "DELETE", f.url+"/v1/memory_stores/"+id, f.key, true, nil)
	require.Equal(t, 200, code)
	f.createStore()
	res := syncOK(t, a)
	assert.True(t, res.BasisReset)
	assert.Empty(t, res.DeletedLocal)
	assert.ElementsMatch(t, []string{"/one.md", "/two.md"}, res.Pushed)
	assert.Equal(t, "1", readFile(t, aDir, "one.md"))

	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
			t.Fatal("sqlite3 is not installed")
		}
		t.Log("sqlite3 is not installed: the restore is not run")
		return
	}
	// Restored: a backup taken now, a memory written after it, then the
	// backup served at a new URL as the store.
	dir := t.TempDir()
	db := filepath.Join(dir, "team.db")
	g := newSyncFixture(t, db)
	c, cDir := g.client("cy", storesync.DeleteImmediate)
	writeFile(t, cDir, "early.md", "early")
	syncOK(t, c)
	out, err := exec.Command("sqlite3", db, ".backup "+filepath.Join(dir, "backup.db")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	writeFile(t, cDir, "late.md", "late")
	writeFile(t, cDir, "early.md", "early, edited")
	syncOK(t, c)
	restored, _ := serveArgs(t, filepath.Join(dir, "backup.db"), g.tokens)
	c2, err := storesync.New(folderAt(afero.NewOsFs(), cDir), storesync.Options{BaseURL: restored, Token: g.key, Mount: g.mount, DeleteMode: storesync.DeleteImmediate})
	require.NoError(t, err)
	res = syncOK(t, c2)
	assert.True(t, res.BasisReset, "the restored store's generation went back")
	assert.Empty(t, res.DeletedLocal)
	assert.Equal(t, "late", readFile(t, cDir, "late.md"))
	assert.Contains(t, res.Pushed, "/late.md")
	assert.Equal(t, "early, edited", readFile(t, cDir, "early.md"), "the newer local version stays")
	require.Len(t, res.Conflicts, 1)
	assert.True(t, res.Conflicts[0].LocalKept)
}

// TestStoreCommand runs agentmem store as a user does: the mounts from
// CLAUDE_MEMORY_STORES, the token from AGENTMEM_STORE_TOKEN, two
// teammates' projects, `store ls`, `store sync` and a `store watch` that
// pushes a new file within seconds and stops cleanly on SIGTERM.
func TestStoreCommand(t *testing.T) {
	f := newSyncFixture(t, "")
	root := t.TempDir()
	stores := `[{"path":"/v1/code/memory/team-store","mount":"proj"},{"path":"/v1/code/memory/team-store","mount":"mirror","mode":"ro"}]`
	ana, anaEnv := clone(t, root, "ana")
	ben, benEnv := clone(t, root, "ben")
	anaEnv = append(anaEnv, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+f.key)
	benEnv = append(benEnv, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+f.key)

	out, errOut, code := runIn(t, ana, anaEnv, "store", "ls")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	assert.Regexp(t, `^proj +team +rw +/v1/code/memory/team-store +/.*/team/proj$`, lines[0])
	assert.Regexp(t, `^mirror +team +ro `, lines[1])
	anaDir := strings.Fields(lines[0])[4]

	_, errOut, code = runIn(t, ana, anaEnv, "store", "sync", "--server", f.url, "--mount", "proj")
	require.Equal(t, 0, code, errOut)
	writeFile(t, anaDir, "deploy.md", "Deploys freeze on Fridays.\n")
	out, errOut, code = runIn(t, ana, anaEnv, "store", "sync", "--server", f.url, "--mount", "proj")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "proj: pushed  /deploy.md\n", out)

	out, errOut, code = runIn(t, ben, benEnv, "store", "sync", "--server", f.url)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "proj: pulled  /deploy.md\n")
	assert.Contains(t, out, "mirror: pulled  /deploy.md\n")
	benOut, _, _ := runIn(t, ben, benEnv, "store", "ls")
	benMirror := strings.Fields(strings.Split(strings.TrimSpace(benOut), "\n")[1])[4]
	writeFile(t, benMirror, "local-only.md", "never pushed from a read-only mount")
	_, errOut, code = runIn(t, ben, benEnv, "store", "sync", "--server", f.url, "--mount", "mirror")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "mirror: skipped /local-only.md (read-only)")

	_, errOut, code = runIn(t, ana, append(anaEnv, "AGENTMEM_STORE_TOKEN="), "store", "sync", "--server", f.url)
	assert.Equal(t, 3, code, errOut)
	_, errOut, code = runIn(t, ana, append(anaEnv, "AGENTMEM_STORE_TOKEN=amt_wrong"), "store", "sync", "--server", f.url)
	assert.Equal(t, 3, code, errOut)
	_, errOut, code = runIn(t, ana, anaEnv, "store", "sync", "--server", "http://"+freeAddr(t))
	assert.Equal(t, 4, code, errOut)

	// watch: a new file reaches the store within seconds.
	cmd := exec.Command(binary(t), "store", "watch", "--server", f.url, "--mount", "proj")
	cmd.Dir = ana
	cmd.Env = append(os.Environ(), anaEnv...)
	var watchOut strings.Builder
	cmd.Stdout = &watchOut
	require.NoError(t, cmd.Start())
	time.Sleep(time.Second)
	writeFile(t, anaDir, "watched.md", "seen by the watcher")
	start := time.Now()
	waitFor(t, func() bool {
		code, _, body := storeHTTP(t, "GET", f.url+"/v1/code/memory/team-store/memories/export?view=basic", f.key, false, nil)
		return code == 200 && strings.Contains(string(body), `"/watched.md"`)
	})
	t.Logf("the watcher pushed a new file %.1f s after it was written", time.Since(start).Seconds())
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "watch exits 0 on SIGTERM")
	assert.Contains(t, watchOut.String(), "proj: pushed  /watched.md")
}

// TestFrontDoorMountsStores opens the front door with store sync on, the
// mounts read from CLAUDE_MEMORY_STORES through the host's Getenv: the
// store's memories arrive in <memory>/team/<mount>/, the memory prompt
// names both stores, marks the read-only one, and carries the store's
// index; a file the model writes there is pushed by the watcher.
func TestFrontDoorMountsStores(t *testing.T) {
	f := newSyncFixture(t, "")
	code, _, body := storeHTTP(t, "POST", f.url+"/v1/code/memory/team-store/memories", f.key, false,
		map[string]any{"path": "/MEMORY.md", "content": "- [CI](ci.md) — where CI runs <main>\n"})
	require.Equal(t, 200, code, string(body))
	code, _, body = storeHTTP(t, "POST", f.url+"/v1/code/memory/team-store/memories", f.key, false,
		map[string]any{"path": "/ci.md", "content": "CI runs on main.\n"})
	require.Equal(t, 200, code, string(body))
	root := t.TempDir()
	env := map[string]string{"CLAUDE_MEMORY_STORES": `[{"path":"/v1/code/memory/team-store","mount":"proj","promptIndex":"MEMORY.md"},{"path":"/v1/code/memory/team-store","mount":"ref","mode":"ro"}]`}
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: root, MemoryDir: filepath.Join(root, "memory"),
		Getenv: func(k string) string { return env[k] }, Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation | agentmem.Transcripts,
		Stores: agentmem.StoreOptions{BaseURL: f.url, Token: f.key}})
	require.NoError(t, err)
	defer mem.Close()
	results, err := mem.SyncStores(context.Background())
	require.NoError(t, err)
	assert.Len(t, results, 2)
	proj := filepath.Join(root, "memory", "team", "proj")
	assert.Equal(t, "CI runs on main.\n", readFile(t, proj, "ci.md"))

	prompt, err := mem.SystemPrompt(context.Background())
	require.NoError(t, err)
	assert.Contains(t, prompt, "## Memory stores")
	assert.Contains(t, prompt, "- `"+proj+"`: the store proj, shared with your team.\n")
	assert.Contains(t, prompt, "the store ref, shared with your team; read-only this session: do not write there")
	assert.Contains(t, prompt, "<memory path=\"team/proj/MEMORY.md\">\n- [CI](ci.md) — where CI runs &lt;main>\n</memory>")

	writeFile(t, proj, "release.md", "Releases on Tuesdays.\n")
	waitFor(t, func() bool {
		code, _, body := storeHTTP(t, "GET", f.url+"/v1/code/memory/team-store/memories/export?view=basic", f.key, false, nil)
		return code == 200 && strings.Contains(string(body), `"/release.md"`)
	})
	require.NoError(t, mem.Close())
}

func TestStoreCommandHonoursTheEnableChain(t *testing.T) {
	root := t.TempDir()
	project, env := clone(t, root, "ana")
	env = append(env, `CLAUDE_MEMORY_STORES=["/v1/code/memory/team-store"]`, "AGENTMEM_STORE_TOKEN=x", "CLAUDE_CODE_DISABLE_AUTO_MEMORY=1")
	_, errOut, code := runIn(t, project, env, "store", "sync", "--server", "http://127.0.0.1:1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "auto memory is disabled here")
}

// TestStoreSyncUserStore mounts a user store over the whole auto-memory
// directory: its own files sync, team/, logs/ and dot folders do not, and
// a secret in private memory is not pushed.
func TestStoreSyncUserStore(t *testing.T) {
	f := newSyncFixture(t, "")
	mounts, err := storesync.ParseMounts(`[{"path":"/v1/code/memory/team-store","scope":"user","mount":"me"}]`)
	require.NoError(t, err)
	auto := filepath.Join(t.TempDir(), "memory")
	dir := mounts[0].Dir(auto)
	assert.Equal(t, auto, dir)
	writeFile(t, auto, "MEMORY.md", "- [Prefs](prefs.md)\n")
	writeFile(t, auto, "prefs.md", "Likes terse answers.\n")
	writeFile(t, auto, "team/shared.md", "team memory, not the user store's")
	writeFile(t, auto, "logs/2026/12/02.md", "a daily log")
	writeFile(t, auto, ".team-sync/state.json", "{}")
	writeFile(t, auto, "key.md", "token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 end")
	c, err := storesync.New(folderAt(afero.NewOsFs(), dir), storesync.Options{BaseURL: f.url, Token: f.key, Mount: mounts[0]})
	require.NoError(t, err)
	res := syncOK(t, c)
	assert.ElementsMatch(t, []string{"/MEMORY.md", "/prefs.md"}, res.Pushed, "an auto-memory folder with files is the user store's own")
	assert.Contains(t, res.Skipped, storesync.Skip{Path: "/key.md", Reason: "secret"})
	assert.Len(t, storeFiles(t, f.url, f.key), 2)
}

// TestStoreWatchPullsWhatOthersPush: a running `agentmem store watch`
// brings a teammate's new memory into its folder at the next resync, with
// nothing changed locally (a watcher that only pushed would never get it).
func TestStoreWatchPullsWhatOthersPush(t *testing.T) {
	f := newSyncFixture(t, "")
	root := t.TempDir()
	stores := `[{"path":"/v1/code/memory/team-store","mount":"proj"}]`
	ana, anaEnv := clone(t, root, "ana")
	ben, benEnv := clone(t, root, "ben")
	anaEnv = append(anaEnv, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+f.key)
	benEnv = append(benEnv, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+f.key)
	out, errOut, code := runIn(t, ana, anaEnv, "store", "ls")
	require.Equal(t, 0, code, errOut)
	anaDir := strings.Fields(out)[4]
	out, _, _ = runIn(t, ben, benEnv, "store", "ls")
	benDir := strings.Fields(out)[4]

	cmd := exec.Command(binary(t), "store", "watch", "--server", f.url, "--resync", "1s")
	cmd.Dir = ben
	cmd.Env = append(os.Environ(), benEnv...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	_, errOut, code = runIn(t, ana, anaEnv, "store", "sync", "--server", f.url) // mount Ana's folder
	require.Equal(t, 0, code, errOut)
	writeFile(t, anaDir, "from-ana.md", "pushed by Ana\n")
	_, errOut, code = runIn(t, ana, anaEnv, "store", "sync", "--server", f.url)
	require.Equal(t, 0, code, errOut)
	waitFor(t, func() bool {
		raw, err := os.ReadFile(filepath.Join(benDir, "from-ana.md"))
		return err == nil && string(raw) == "pushed by Ana\n"
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
}

// folderAt is a mount folder on its own at dir, for a store client.
func folderAt(fsys afero.Fs, dir string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{})
	if err != nil {
		panic(err)
	}
	return d
}
