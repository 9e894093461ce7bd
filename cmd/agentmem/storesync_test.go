package main

import (
	"context"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/memdir"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

func syncOK(t *testing.T, c *storesync.Client) foldersync.Result {
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

// TestStoreCommand runs agentmem store as a user does: the mounts from
// CLAUDE_MEMORY_STORES, the token from AGENTMEM_STORE_TOKEN, two
// teammates' projects, `store ls`, `store sync` and a `store watch` that
// pushes a new file within seconds and stops cleanly on SIGTERM.
func TestStoreCommand(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	assert.Contains(t, res.Skipped, foldersync.Skip{Path: "/key.md", Reason: "secret"})
	assert.Len(t, storeFiles(t, f.url, f.key), 2)
}

// storeUser is a teammate's project with the one-mount store setting and
// the store token in its environment, and the mount's folder.
type storeUser struct {
	dir, folder string
	env         []string
}

// storeTeammates returns two teammates, ana and ben, on f's team-store
// mounted as "proj" (not synced yet).
func storeTeammates(t *testing.T, f *syncFixture) (ana, ben storeUser) {
	t.Helper()
	return storeTeammatesOn(t, f, `[{"path":"/v1/code/memory/team-store","mount":"proj"}]`)
}

// storeTeammatesOn is storeTeammates with the mounts of stores (JSON);
// folder is the first mount's.
func storeTeammatesOn(t *testing.T, f *syncFixture, stores string) (ana, ben storeUser) {
	t.Helper()
	root := t.TempDir()
	users := make([]storeUser, 2)
	for i, name := range []string{"ana", "ben"} {
		dir, env := clone(t, root, name)
		env = append(env, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+f.key)
		out, errOut, code := runIn(t, dir, env, "store", "ls")
		require.Equal(t, 0, code, errOut)
		users[i] = storeUser{dir: dir, env: env, folder: strings.Fields(out)[4]}
	}
	return users[0], users[1]
}

// TestStoreWatchPullsWhatOthersPush: a running `agentmem store watch`
// brings a teammate's new memory into its folder at the next resync, with
// nothing changed locally (a watcher that only pushed would never get it).
func TestStoreWatchPullsWhatOthersPush(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	a, b := storeTeammates(t, f)
	ana, anaEnv, anaDir := a.dir, a.env, a.folder
	ben, benEnv, benDir := b.dir, b.env, b.folder

	cmd := exec.Command(binary(t), "store", "watch", "--server", f.url, "--resync", "1s")
	cmd.Dir = ben
	cmd.Env = append(os.Environ(), benEnv...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	_, errOut, code := runIn(t, ana, anaEnv, "store", "sync", "--server", f.url) // mount Ana's folder
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

// TestStoreSyncCheckpointsBeforeItChangesFiles: a round that pulls over a
// file or deletes one takes a checkpoint first and prints the rewind
// that undoes it, which brings back what was there byte for byte (a
// store restored from a backup and written past the generation a
// teammate saw cannot be told from a store that moved on: this is what
// keeps that teammate's work).
func TestStoreSyncCheckpointsBeforeItChangesFiles(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	a, b := storeTeammates(t, f)
	ana, anaEnv, anaDir := a.dir, a.env, a.folder
	ben, benEnv, benDir := b.dir, b.env, b.folder
	sync := func(dir string, env []string, args ...string) string {
		t.Helper()
		out, errOut, code := runIn(t, dir, env, append([]string{"store", "sync", "--server", f.url, "--delete-mode", "immediate"}, args...)...)
		require.Equal(t, 0, code, out+errOut)
		return out
	}
	sync(ana, anaEnv) // mounts the folder
	writeFile(t, anaDir, "deploy.md", "Deploys freeze on Fridays.\n")
	writeFile(t, anaDir, "old.md", "Old news.\n")
	sync(ana, anaEnv)
	sync(ben, benEnv)
	require.Equal(t, "Old news.\n", readFile(t, benDir, "old.md"))

	writeFile(t, anaDir, "deploy.md", "Deploys freeze on Thursdays.\n")
	require.NoError(t, os.Remove(filepath.Join(anaDir, "old.md")))
	sync(ana, anaEnv)
	out := sync(ben, benEnv)
	assert.Contains(t, out, "proj: pulled  /deploy.md\n")
	assert.Contains(t, out, "proj: deleted /old.md (deleted in the store)\n")
	m := regexp.MustCompile(`proj: checkpoint (store-sync-\S+) \(to put this folder's files back as they were before this round: agentmem rewind (\S+)\)`).FindStringSubmatch(out)
	require.NotNil(t, m, "the round that changed files names its checkpoint:\n%s", out)
	require.Equal(t, m[1], m[2])
	_, err := os.Stat(filepath.Join(benDir, "old.md"))
	require.True(t, os.IsNotExist(err))

	rew, errOut, code := runIn(t, ben, benEnv, "rewind", m[1])
	require.Equal(t, 0, code, rew+errOut)
	assert.Equal(t, "Deploys freeze on Fridays.\n", readFile(t, benDir, "deploy.md"))
	assert.Equal(t, "Old news.\n", readFile(t, benDir, "old.md"))

	// What the rewind gave back is an edit here: the next round sends it.
	out = sync(ben, benEnv)
	assert.Contains(t, out, "proj: pushed  /deploy.md\n")
	assert.Contains(t, out, "proj: pushed  /old.md\n")
	out = sync(ana, anaEnv)
	assert.Equal(t, "Deploys freeze on Fridays.\n", readFile(t, anaDir, "deploy.md"), out)
	assert.Equal(t, "Old news.\n", readFile(t, anaDir, "old.md"), out)

	// --no-checkpoint takes none (and prints none).
	writeFile(t, anaDir, "deploy.md", "Deploys freeze on Wednesdays.\n")
	sync(ana, anaEnv)
	out = sync(ben, benEnv, "--no-checkpoint")
	assert.Contains(t, out, "proj: pulled  /deploy.md\n")
	assert.NotContains(t, out, "checkpoint")
}

// TestStoreSyncReportsALinkedFolder: a link to a folder in the mount is
// named with the reason and the run exits 9, as a linked file does;
// nothing behind it reaches the store.
func TestStoreSyncReportsALinkedFolder(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	ana, _ := storeTeammates(t, f)
	_, errOut, code := runIn(t, ana.dir, ana.env, "store", "sync", "--server", f.url) // mounts the folder
	require.Equal(t, 0, code, errOut)
	outside := t.TempDir()
	writeFile(t, outside, "private.md", "not for the store\n")
	require.NoError(t, os.Symlink(outside, filepath.Join(ana.folder, "linkdir")))
	writeFile(t, ana.folder, "shared.md", "for the store\n")
	out, errOut, code := runIn(t, ana.dir, ana.env, "store", "sync", "--server", f.url)
	assert.Equal(t, 9, code, out+errOut)
	assert.Contains(t, errOut, "proj: skipped /linkdir (not a regular file")
	assert.Contains(t, out, "proj: pushed  /shared.md")
	files := storeFiles(t, f.url, f.key)
	assert.Contains(t, files, "/shared.md")
	assert.Len(t, files, 1, "nothing behind the link reaches the store")
}

// TestStoreWatchSaysASkipOnce: a file left at home is named when it is
// first met, not again on every round while it stays so.
func TestStoreWatchSaysASkipOnce(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	ana, _ := storeTeammates(t, f)
	_, errOut, code := runIn(t, ana.dir, ana.env, "store", "sync", "--server", f.url) // mounts the folder
	require.Equal(t, 0, code, errOut)
	writeFile(t, ana.folder, "latin1.md", "caf\xe9\n")
	cmd := exec.Command(binary(t), "store", "watch", "--server", f.url, "--resync", "1s")
	cmd.Dir = ana.dir
	cmd.Env = append(os.Environ(), ana.env...)
	stderr := &background{} // a writer safe to read while the command runs
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, func() bool { return strings.Contains(stderr.log(), "skipped /latin1.md") })
	writeFile(t, ana.folder, "more.md", "a change, so rounds run\n")
	waitFor(t, func() bool {
		files := storeFiles(t, f.url, f.key)
		_, ok := files["/more.md"]
		return ok
	})
	time.Sleep(3 * time.Second) // a few resyncs
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	assert.Equal(t, 1, strings.Count(stderr.log(), "skipped /latin1.md"), stderr.log())
}

// TestStoreHistoryIsOnePerMount: --history with several mounts keeps one
// journal per mount folder (NAME-<mount>), so a rewind of one mount's
// round never touches another's files.
func TestStoreHistoryIsOnePerMount(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	a, b := storeTeammatesOn(t, f, `[{"path":"/v1/code/memory/team-store","mount":"proj"},{"path":"/v1/code/memory/team-store","mount":"mirror","mode":"ro"}]`)
	ana, anaEnv, ben, benEnv := a.dir, a.env, b.dir, b.env
	out, errOut, code := runIn(t, ana, anaEnv, "store", "sync", "--server", f.url, "--mount", "proj")
	require.Equal(t, 0, code, out+errOut)
	writeFile(t, a.folder, "deploy.md", "Deploys freeze on Fridays.\n")
	out, errOut, code = runIn(t, ana, anaEnv, "store", "sync", "--server", f.url, "--mount", "proj")
	require.Equal(t, 0, code, out+errOut)

	configDir := strings.TrimPrefix(benEnv[1], "CLAUDE_CONFIG_DIR=")
	out, errOut, code = runIn(t, ben, benEnv, "store", "sync", "--server", f.url, "--history", "mine", "--config-dir", configDir)
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "proj: checkpoint ")
	assert.Contains(t, out, "mirror: checkpoint ")
	assert.Contains(t, out, " --config-dir "+configDir+")", "the printed rewind finds the history this run wrote")
	out, errOut, code = runIn(t, ben, benEnv, "history", "--json")
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, `"mine-proj"`)
	assert.Contains(t, out, `"mine-mirror"`)
}
