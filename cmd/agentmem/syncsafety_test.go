package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncTokens writes a token file with one token for acme that reaches
// both the team repos and every memory store, and returns it and the
// token.
func syncTokens(t *testing.T, dir string) (path, token string) {
	t.Helper()
	tok, g, err := teamserver.NewToken("acme", []string{"acme/*"}, "*")
	require.NoError(t, err)
	g.Name = "ana"
	data, err := json.Marshal([]teamserver.TokenGrant{g})
	require.NoError(t, err)
	path = filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path, tok
}

// randomBytes is what a file may hold: any bytes, Latin-1 text, UTF-8
// with the characters that JSON and databases treat specially (NUL,
// U+FFFD, controls, encoded surrogates), or plain text.
func randomBytes(r *rand.Rand) []byte {
	n := 1 + r.IntN(120)
	var b []byte
	switch r.IntN(5) {
	case 0: // any bytes
		for range n {
			b = append(b, byte(r.IntN(256)))
		}
	case 1: // Latin-1 text
		for range n {
			const latin1 = " abc\xe9\xfc\xe0\n"
			b = append(b, latin1[r.IntN(len(latin1))])
		}
	case 2: // UTF-8 runes, some of them hostile
		special := []string{"\x00", "\uFFFD", "\u001b]0;T\u0007", "\xed\xa0\x80", "\xed\xbf\xbf", "\U0001F600", "\u2028", "\\u0000", `"`, "\xc0\xae", "\xf4\x90\x80\x80"}
		for range n / 4 {
			if r.IntN(3) == 0 {
				b = append(b, special[r.IntN(len(special))]...)
			} else {
				b = utf8.AppendRune(b, rune(r.IntN(0x3000)))
			}
		}
	case 3: // plain text with one byte changed
		b = []byte(strings.Repeat("Deploys freeze on Fridays. ", 1+n/27))
		b[r.IntN(len(b))] = byte(r.IntN(256))
	default:
		b = []byte(fmt.Sprintf("note %d: café ünïcode ✓\n", r.IntN(1000)))
	}
	return b
}

// inProcessServer is the real handler over a SQLite store.
func inProcessServer(t testing.TB) (url, token string) {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	tok, g, err := teamserver.NewToken("acme", []string{"acme/*"}, "*")
	require.NoError(t, err)
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{g}, RatePerToken: -1})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, tok
}

// TestSyncCarriesBytesExactlyOrRefuses is the property both protocols
// hold for any bytes a file may hold: a teammate receives exactly those
// bytes, or the file is refused (reported as skipped) and left as it was
// on the author's disk, never overwritten by a pull.
func TestSyncCarriesBytesExactlyOrRefuses(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	url, token := inProcessServer(t)
	ctx := context.Background()

	// A copy damaged by an older client is on the server: the author's
	// file of that name must not be overwritten by it.
	code, _, body := storeHTTP(t, "PUT", url+"/api/claude_code/team_memory?repo=acme/shop", token, false, map[string]any{"entries": map[string]string{"old.md": "caf\uFFFD"}})
	require.Equal(t, 200, code, string(body))

	type side struct {
		dir  string
		sync func() ([]string, error) // the skipped files' names
	}
	teamSide := func(name string) side {
		dir := filepath.Join(t.TempDir(), name, "team")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		c, err := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: url, Repo: "acme/shop", Token: token})
		require.NoError(t, err)
		var st teammem.SyncState
		return side{dir, func() ([]string, error) {
			res, err := c.Sync(ctx, &st)
			var skipped []string
			for _, s := range res.Skipped {
				skipped = append(skipped, s.Path)
			}
			return skipped, err
		}}
	}
	code, _, body = storeHTTP(t, "POST", url+"/v1/memory_stores", token, true, map[string]any{"name": "team-store"})
	require.Equal(t, 200, code, string(body))
	mounts, err := storesync.ParseMounts(`[{"path": "/v1/code/memory/team-store", "mount": "proj"}]`)
	require.NoError(t, err)
	storeSide := func(name string) side {
		dir := mounts[0].Dir(filepath.Join(t.TempDir(), name))
		c, err := storesync.New(folderAt(afero.NewOsFs(), dir), storesync.Options{BaseURL: url, Token: token, Mount: mounts[0]})
		require.NoError(t, err)
		return side{dir, func() ([]string, error) {
			res, err := c.Sync(ctx)
			var skipped []string
			for _, s := range res.Skipped {
				skipped = append(skipped, strings.TrimPrefix(s.Path, "/"))
			}
			return skipped, err
		}}
	}

	for _, proto := range []struct {
		name string
		make func(string) side
	}{{"team", teamSide}, {"store", storeSide}} {
		t.Run(proto.name, func(t *testing.T) {
			ana, ben := proto.make("ana"), proto.make("ben")
			_, err := ana.sync()
			require.NoError(t, err)
			if proto.name == "team" {
				require.NoError(t, os.WriteFile(filepath.Join(ana.dir, "old.md"), []byte("caf\xe9"), 0o644))
			}
			want := map[string][]byte{}
			for round := range 4 {
				for i := range 30 {
					name := fmt.Sprintf("f%d-%02d.md", round, i)
					b := randomBytes(r)
					want[name] = b
					require.NoError(t, os.WriteFile(filepath.Join(ana.dir, name), b, 0o644))
				}
				skipped, err := ana.sync()
				require.NoError(t, err)
				_, err = ben.sync()
				require.NoError(t, err)
				_, err = ana.sync() // a second round must not pull anything over a refused file
				require.NoError(t, err)
				refused := map[string]bool{}
				for _, k := range skipped {
					refused[k] = true
				}
				for name, b := range want {
					mine, err := os.ReadFile(filepath.Join(ana.dir, name))
					require.NoError(t, err)
					assert.Equal(t, string(b), string(mine), "%s: the author's file changed", name)
					got, err := os.ReadFile(filepath.Join(ben.dir, name))
					if err == nil {
						assert.Equal(t, string(b), string(got), "%s (%q): the teammate received other bytes", name, b)
						continue
					}
					if strings.HasPrefix(name, fmt.Sprintf("f%d-", round)) {
						assert.True(t, refused[name], "%s (%q): neither received nor reported as refused", name, b)
					}
				}
			}
			if proto.name == "team" {
				old, err := os.ReadFile(filepath.Join(ana.dir, "old.md"))
				require.NoError(t, err)
				assert.Equal(t, "caf\xe9", string(old), "a damaged copy on the server never overwrites the file")
			}
		})
	}
}

// TestStoreSyncDeleteAndRecreateIsNotAReplacedStore: Ana deletes y.md,
// and deletes x.md then writes it again (a new memory ID). Ben's round
// falls between her two; Cy was offline through both and comes back with
// a one-shot `agentmem store sync`. Nobody takes the new ID for a
// replaced store: y.md stays deleted everywhere and the newer x.md wins
// everywhere.
func TestStoreSyncDeleteAndRecreateIsNotAReplacedStore(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	ana, anaDir := f.client("ana", foldersync.DeleteImmediate)
	ben, benDir := f.client("ben", foldersync.DeleteImmediate)
	writeFile(t, anaDir, "x.md", "x, first")
	writeFile(t, anaDir, "y.md", "y")
	syncOK(t, ana)
	syncOK(t, ben)

	root := t.TempDir()
	cy, cyEnv := clone(t, root, "cy")
	cyEnv = append(cyEnv, `CLAUDE_MEMORY_STORES=[{"path":"/v1/code/memory/team-store","mount":"proj"}]`, "AGENTMEM_STORE_TOKEN="+f.key)
	store := func() (string, string, int) {
		return runIn(t, cy, cyEnv, "store", "sync", "--server", f.url, "--delete-mode", "immediate")
	}
	_, errOut, code := store()
	require.Equal(t, 0, code, errOut)
	out, _, _ := runIn(t, cy, cyEnv, "store", "ls")
	cyDir := strings.Fields(out)[4]
	assert.Equal(t, "x, first", readFile(t, cyDir, "x.md"))

	require.NoError(t, os.Remove(filepath.Join(anaDir, "x.md")))
	require.NoError(t, os.Remove(filepath.Join(anaDir, "y.md")))
	res := syncOK(t, ana)
	assert.ElementsMatch(t, []string{"/x.md", "/y.md"}, res.DeletedRemote)

	res = syncOK(t, ben) // between Ana's two rounds
	assert.False(t, res.BasisReset)
	assert.ElementsMatch(t, []string{"/x.md", "/y.md"}, res.DeletedLocal)

	writeFile(t, anaDir, "x.md", "x, second: newer")
	res = syncOK(t, ana)
	assert.Equal(t, []string{"/x.md"}, res.Pushed)

	for _, c := range []struct {
		name string
		sync func() foldersync.Result
		dir  string
	}{{"ben", func() foldersync.Result { return syncOK(t, ben) }, benDir}} {
		res := c.sync()
		assert.False(t, res.BasisReset, c.name)
		assert.Equal(t, []string{"/x.md"}, res.Pulled, c.name)
		assert.Equal(t, "x, second: newer", readFile(t, c.dir, "x.md"), c.name)
		assert.NoFileExists(t, filepath.Join(c.dir, "y.md"), c.name)
	}

	// Cy, offline until now: the store has the same ID and a later
	// generation, so its word on x.md and y.md stands.
	out, errOut, code = store()
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.NotContains(t, errOut, "does not know this folder's last sync")
	assert.Contains(t, out, "proj: pulled  /x.md")
	assert.Contains(t, out, "proj: deleted /y.md (deleted in the store)")
	assert.Equal(t, "x, second: newer", readFile(t, cyDir, "x.md"))
	assert.NoFileExists(t, filepath.Join(cyDir, "y.md"))
	assert.Empty(t, conflictCopies(t, cyDir))

	// The store holds what Ana left: no y.md came back, x.md is hers.
	got := storeFiles(t, f.url, f.key)
	assert.Equal(t, map[string]string{"/x.md": "x, second: newer"}, got)
	res = syncOK(t, ana)
	assert.False(t, res.Changed())
}

// conflictCopies lists the files kept aside in a mount's conflict folder.
func conflictCopies(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(filepath.Join(dir, storesync.ConflictsDirName), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestStoreSyncSkipsAPathClash: a folder holds /clash.md/inner.md while
// the store has /clash.md (a file where the folder must be). Neither can
// be written beside the other: the client skips the clashing paths with
// their reason and exit 9, syncs the rest, and every later round goes
// on; the server refuses to make the clash from this side.
func TestStoreSyncSkipsAPathClash(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t, "")
	ben, benDir := f.client("ben")
	writeFile(t, benDir, "clash.md", "a file")
	syncOK(t, ben)

	root := t.TempDir()
	ana, anaEnv := clone(t, root, "ana")
	anaEnv = append(anaEnv, `CLAUDE_MEMORY_STORES=[{"path":"/v1/code/memory/team-store","mount":"proj"}]`, "AGENTMEM_STORE_TOKEN="+f.key)
	out, _, _ := runIn(t, ana, anaEnv, "store", "ls")
	anaDir := strings.Fields(out)[4]
	_, errOut, code := runIn(t, ana, anaEnv, "store", "sync", "--server", f.url)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, os.Remove(filepath.Join(anaDir, "clash.md")))
	writeFile(t, anaDir, "clash.md/inner.md", "below what is a file in the store")
	writeFile(t, anaDir, "other.md", "the rest of the round goes on")
	for round := range 2 {
		out, errOut, code := runIn(t, ana, anaEnv, "store", "sync", "--server", f.url)
		assert.Equal(t, 9, code, "round %d: %s%s", round, out, errOut)
		assert.Contains(t, errOut, "proj: skipped /clash.md (path-clash: /clash.md/inner.md is in the way)")
		assert.Contains(t, errOut, "proj: skipped /clash.md/inner.md (path-clash")
		assert.NotContains(t, errOut, "mkdirat")
		if round == 0 {
			assert.Contains(t, out, "proj: pushed  /other.md")
		}
	}
	assert.Equal(t, "below what is a file in the store", readFile(t, anaDir, "clash.md/inner.md"))
	got := storeFiles(t, f.url, f.key)
	assert.Equal(t, map[string]string{"/clash.md": "a file", "/other.md": "the rest of the round goes on"}, got)
	res := syncOK(t, ben)
	assert.Equal(t, []string{"/other.md"}, res.Pulled)
}

// TestTeamSyncLeavesStoreFoldersToStoreSync runs a project with team sync
// and two store mounts (the built binary, one server for both
// protocols): team sync never carries a store's folder (a configured
// mount, or a folder holding a store manifest), so a teammate's store
// sync finds its folders its own, and both kinds converge.
func TestTeamSyncLeavesStoreFoldersToStoreSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, token := syncTokens(t, dir)
	url, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens)
	for _, name := range []string{"team-store", "docs-store"} {
		code, _, body := storeHTTP(t, "POST", url+"/v1/memory_stores", token, true, map[string]any{"name": name})
		require.Equal(t, 200, code, string(body))
	}
	stores := `[{"path":"/v1/code/memory/team-store","mount":"proj"},{"path":"/v1/code/memory/docs-store","mount":"docs"}]`
	root := t.TempDir()
	type person struct {
		project string
		env     []string
		team    string
	}
	newPerson := func(who string) person {
		project, env := clone(t, root, who)
		env = append(env, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+token, "AGENTMEM_TEAM_TOKEN="+token)
		return person{project, env, projectTeamDir(t, project, env)}
	}
	ana, ben := newPerson("ana"), newPerson("ben")
	run := func(p person, args ...string) string {
		t.Helper()
		out, errOut, code := runIn(t, p.project, p.env, args...)
		require.Equal(t, 0, code, "%v: %s%s", args, out, errOut)
		return out + errOut
	}
	team := func(p person) string { return run(p, "team", "sync", "--server", url) }
	store := func(p person) string { return run(p, "store", "sync", "--server", url) }

	store(ana) // mounts the two (empty) folders
	writeFile(t, ana.team, "notes.md", "team note")
	writeFile(t, ana.team, "proj/deploy.md", "store note")
	writeFile(t, ana.team, "docs/guide.md", "docs note")
	out := team(ana)
	assert.NotContains(t, out, "proj/")
	assert.NotContains(t, out, "docs/")
	store(ana)
	team(ana)
	entries, err := serverEntries(url, token)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"notes.md": "team note"}, entries, "the team repo holds no store file")

	// Ben runs team sync before store sync has ever mounted his folders:
	// the configured mounts alone keep them out, and a file he put in one
	// is not pushed.
	writeFile(t, ben.team, "docs/draft.md", "not for the team repo")
	out = team(ben)
	assert.NotContains(t, out, "proj/")
	assert.NotContains(t, out, "docs/")
	require.NoError(t, os.Remove(filepath.Join(ben.team, "docs", "draft.md")))
	out = store(ben)
	assert.NotContains(t, out, "holds files and no")
	want := func(p person) {
		t.Helper()
		assert.Equal(t, "team note", readFile(t, p.team, "notes.md"))
		assert.Equal(t, "store note", readFile(t, p.team, "proj/deploy.md"))
		assert.Equal(t, "docs note", readFile(t, p.team, "docs/guide.md"))
	}
	want(ben)

	// Edits and deletes on both sides, each kind by its own sync.
	writeFile(t, ben.team, "proj/deploy.md", "store note, edited by ben")
	writeFile(t, ben.team, "notes.md", "team note, edited by ben")
	require.NoError(t, os.Remove(filepath.Join(ben.team, "docs", "guide.md")))
	for range 2 {
		team(ben)
		run(ben, "store", "sync", "--server", url, "--delete-mode", "immediate")
		team(ana)
		store(ana)
	}
	for _, p := range []person{ana, ben} {
		assert.Equal(t, "team note, edited by ben", readFile(t, p.team, "notes.md"))
		assert.Equal(t, "store note, edited by ben", readFile(t, p.team, "proj/deploy.md"))
		assert.NoFileExists(t, filepath.Join(p.team, "docs", "guide.md"))
	}
	entries, err = serverEntries(url, token)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"notes.md": "team note, edited by ben"}, entries)

	// Without the mounts configured, a folder with a store's manifest is
	// still left alone by team sync.
	noStores := append(append([]string{}, ana.env...), "CLAUDE_MEMORY_STORES=")
	var errOut string
	var code int
	writeFile(t, ana.team, "proj/more.md", "written while stores are off")
	out, errOut, code = runIn(t, ana.project, noStores, "team", "sync", "--server", url)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.NotContains(t, out, "proj/")
	entries, err = serverEntries(url, token)
	require.NoError(t, err)
	assert.Equal(t, []string{"notes.md"}, keys(entries))

	// lint does not take a store's files for team problems.
	out, errOut, _ = runIn(t, ana.project, ana.env, "lint")
	assert.NotContains(t, out+errOut, "proj/")
	assert.NotContains(t, out+errOut, "docs/")
}

// TestTeamPushSkipsWhatItCannotCarry: one file named in NFD, one in
// Latin-1 and one holding a NUL do not stop a push: each is printed with
// its reason, the rest reaches the teammate, the run exits 9, and the
// files are left exactly as they were.
func TestTeamPushSkipsWhatItCannotCarry(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ben := newTeammate(t, root, "ben", url, token)
	nfd := "cafe\u0301.md" // é as e and a combining accent
	ana.write(nfd, "named in NFD")
	ana.write("latin1.md", "caf\xe9")
	ana.write("nul.md", "a\x00b")
	ana.write("fine.md", "plain text")
	out, errOut, code := ana.run("push")
	assert.Equal(t, 9, code, "%s%s", out, errOut)
	assert.Contains(t, out, "pushed  fine.md")
	assert.Contains(t, out, "skipped "+nfd+" (not_nfc:")
	assert.Contains(t, out, "skipped latin1.md (not_utf8:")
	assert.Contains(t, out, "skipped nul.md (nul_byte:")
	_, errOut, code = ben.run("pull")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, map[string]string{"fine.md": "plain text"}, ben.files())
	assert.Equal(t, map[string]string{nfd: "named in NFD", "latin1.md": "caf\xe9", "nul.md": "a\x00b", "fine.md": "plain text"}, ana.files())
	out, errOut, code = ana.run("sync")
	assert.Equal(t, 9, code, "every run says so until the files are fixed: %s%s", out, errOut)
	assert.Equal(t, "caf\xe9", ana.files()["latin1.md"])
}

// A file here where a teammate has a folder (clash.md beside
// clash.md/inner.md) cannot be on either side: the push refuses it and
// the pull skips the folder's file, each saying why, the rest of the
// round goes on and the run exits 9; the author's file stays as it is.
func TestTeamSyncSkipsAPathClash(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ben := newTeammate(t, root, "ben", url, token)
	ana.write("clash.md/inner.md", "a folder's file")
	_, errOut, code := ana.run("push")
	require.Equal(t, 0, code, errOut)
	ben.write("clash.md", "a file")
	ben.write("other.md", "the rest of the round goes on")
	out, errOut, code := ben.run("sync")
	assert.Equal(t, 9, code, "%s%s", out, errOut)
	assert.Contains(t, out, "pushed  other.md")
	assert.Contains(t, out, "skipped clash.md (refused: two keys could not both exist")
	assert.Contains(t, out, "skipped clash.md/inner.md (path_clash: the file clash.md is in the way")
	assert.Equal(t, map[string]string{"clash.md": "a file", "other.md": "the rest of the round goes on"}, ben.files())
	_, errOut, code = ana.run("pull")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, map[string]string{"clash.md/inner.md": "a folder's file", "other.md": "the rest of the round goes on"}, ana.files())
}

// killMidway starts the built binary and SIGKILLs it once progress
// reports that the round has begun but not finished; it reports whether
// the kill landed mid-round (a round that ended first is still checked).
func killMidway(t *testing.T, dir string, env []string, progress func() bool, args ...string) bool {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return false
		default:
		}
		if progress() {
			_ = cmd.Process.Kill()
			<-done
			return true
		}
		time.Sleep(200 * time.Microsecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return false
}

// countFiles counts the regular files below dir whose names do not start
// with "." (a temporary file of an atomic write does).
func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	return n
}

// TestSyncKilledMidRoundTearsNothing SIGKILLs the built client in the
// middle of a round that writes or pushes many files, on both protocols:
// every file is either as it was or as the server has it, never torn,
// and the next round finishes and converges.
func TestSyncKilledMidRoundTearsNothing(t *testing.T) {
	t.Parallel()
	const files = 400
	content := func(i int, v string) string {
		return fmt.Sprintf("memory %d, %s\n%s", i, v, strings.Repeat("a line of text that makes the file long enough to take time\n", 40))
	}
	dir := t.TempDir()
	tokens, token := syncTokens(t, dir)
	url, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens)

	t.Run("team", func(t *testing.T) {
		root := t.TempDir()
		ana := newTeammate(t, root, "ana", url, token)
		ben := newTeammate(t, root, "ben", url, token)
		old := map[string]string{}
		for i := range files {
			k := fmt.Sprintf("n%03d.md", i)
			ana.write(k, content(i, "ana's"))
			if i%2 == 0 {
				ben.write(k, content(i, "ana's")) // as it was, in step
				old[k] = content(i, "ana's")
			}
		}
		_, errOut, code := ben.run("sync")
		require.Equal(t, 0, code, errOut)
		// Ana pushes, killed midway: her files never change.
		mid := killMidway(t, "", ana.env, func() bool {
			e, err := serverEntries(url, token)
			return err == nil && len(e) > files/2
		}, "team", "push", "--server", url, "--repo", ana.repo, "--dir", ana.dir)
		t.Logf("push killed mid-round: %v", mid)
		for k, v := range ana.files() {
			require.Equal(t, content(mustIndex(k), "ana's"), v, k)
		}
		_, errOut, code = ana.run("push")
		require.Equal(t, 0, code, errOut)
		entries, err := serverEntries(url, token)
		require.NoError(t, err)
		require.Len(t, entries, files)

		// Ben pulls them all, killed midway: each file is as it was or as
		// the server has it.
		mid = killMidway(t, "", ben.env, func() bool {
			return countFiles(ben.dir) > files*3/4
		}, "team", "pull", "--server", url, "--repo", ben.repo, "--dir", ben.dir, "--no-checkpoint")
		t.Logf("pull killed mid-round: %v", mid)
		for k, v := range ben.files() {
			if v != entries[k] {
				assert.Equal(t, old[k], v, "%s is neither as it was nor as the server has it", k)
			}
		}
		_, errOut, code = ben.run("sync")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, entries, ben.files())
	})

	t.Run("store", func(t *testing.T) {
		code, _, body := storeHTTP(t, "POST", url+"/v1/memory_stores", token, true, map[string]any{"name": "kill-store"})
		require.Equal(t, 200, code, string(body))
		stores := `[{"path":"/v1/code/memory/kill-store","mount":"proj"}]`
		root := t.TempDir()
		ana, anaEnv := clone(t, root, "ana")
		ben, benEnv := clone(t, root, "ben")
		anaEnv = append(anaEnv, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+token)
		benEnv = append(benEnv, "CLAUDE_MEMORY_STORES="+stores, "AGENTMEM_STORE_TOKEN="+token)
		mountDir := func(project string, env []string) string {
			_, errOut, code := runIn(t, project, env, "store", "sync", "--server", url)
			require.Equal(t, 0, code, errOut)
			out, _, _ := runIn(t, project, env, "store", "ls")
			return strings.Fields(out)[4]
		}
		anaDir, benDir := mountDir(ana, anaEnv), mountDir(ben, benEnv)
		for i := range files / 4 {
			writeFile(t, anaDir, fmt.Sprintf("n%03d.md", i), content(i, "ana's"))
		}
		remote := func() map[string]string {
			code, _, body := storeHTTP(t, "GET", url+"/v1/code/memory/kill-store/memories/export", token, false, nil)
			require.Equal(t, 200, code, string(body))
			mems, whole := readExport(body)
			require.True(t, whole)
			out := map[string]string{}
			for p, m := range mems {
				out[strings.TrimPrefix(p, "/")] = m.Content
			}
			return out
		}
		mid := killMidway(t, ana, anaEnv, func() bool { return len(remote()) > files/8 }, "store", "sync", "--server", url)
		t.Logf("store push killed mid-round: %v", mid)
		_, errOut, code := runIn(t, ana, anaEnv, "store", "sync", "--server", url)
		require.Equal(t, 0, code, errOut)
		want := remote()
		require.Len(t, want, files/4)
		mid = killMidway(t, ben, benEnv, func() bool { return countFiles(benDir) > files/8 }, "store", "sync", "--server", url)
		t.Logf("store pull killed mid-round: %v", mid)
		got := folderFiles(t, benDir)
		for p, v := range got {
			assert.Equal(t, want[strings.TrimPrefix(p, "/")], v, "%s is torn", p)
		}
		_, errOut, code = runIn(t, ben, benEnv, "store", "sync", "--server", url)
		require.Equal(t, 0, code, errOut)
		got = folderFiles(t, benDir)
		assert.Len(t, got, files/4)
		for p, v := range got {
			assert.Equal(t, want[strings.TrimPrefix(p, "/")], v, p)
		}
	})
}

func mustIndex(key string) int {
	var i int
	_, _ = fmt.Sscanf(key, "n%03d.md", &i)
	return i
}

// TestSyncLeavesScreenedFilesAtHome runs both syncs with the built
// binary on a project whose files hold what every server's screens
// refuse: each is reported with the screen's reason and left as it is,
// the rest is pushed, and the run exits 9.
func TestSyncLeavesScreenedFilesAtHome(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, token := syncTokens(t, dir)
	url, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens)
	code, _, body := storeHTTP(t, "POST", url+"/v1/memory_stores", token, true, map[string]any{"name": "team-store"})
	require.Equal(t, 200, code, string(body))
	project, env := clone(t, t.TempDir(), "ana")
	env = append(env, `CLAUDE_MEMORY_STORES=[{"path":"/v1/code/memory/team-store","mount":"proj"}]`, "AGENTMEM_STORE_TOKEN="+token, "AGENTMEM_TEAM_TOKEN="+token)
	teamDir := projectTeamDir(t, project, env)
	_, errOut, code := runIn(t, project, env, "store", "sync", "--server", url)
	require.Equal(t, 0, code, errOut)

	hidden := "deploy\u200b on fridays"
	writeFile(t, teamDir, "hidden.md", hidden)
	writeFile(t, teamDir, "notes.md", "team note")
	writeFile(t, teamDir, "proj/hidden.md", hidden)
	writeFile(t, teamDir, "proj/deploy.md", "store note")

	out, errOut, code := runIn(t, project, env, "team", "sync", "--server", url)
	assert.Equal(t, 9, code, out+errOut)
	assert.Contains(t, out+errOut, "skipped hidden.md (screened: refusing to write an invisible character, U+200B ZERO WIDTH SPACE")
	out, errOut, code = runIn(t, project, env, "store", "sync", "--server", url)
	assert.Equal(t, 9, code, out+errOut)
	assert.Contains(t, errOut, "proj: skipped /hidden.md (screened: refusing to write an invisible character, U+200B ZERO WIDTH SPACE")

	entries, err := serverEntries(url, token)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"notes.md": "team note"}, entries)
	assert.Equal(t, map[string]string{"/deploy.md": "store note"}, storeFiles(t, url, token))
	assert.Equal(t, hidden, readFile(t, teamDir, "hidden.md"))
	assert.Equal(t, hidden, readFile(t, teamDir, "proj/hidden.md"))
}

// TestStoreSyncSaysTheServerIsDown: a store server that does not answer
// is exit 4 with a sentence that says so, not a transport error.
func TestStoreSyncSaysTheServerIsDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	project, env := clone(t, t.TempDir(), "ana")
	env = append(env, `CLAUDE_MEMORY_STORES=[{"path":"/v1/code/memory/team-store","mount":"proj"}]`, "AGENTMEM_STORE_TOKEN=tok")
	out, errOut, code := runIn(t, project, env, "store", "sync", "--server", url)
	assert.Equal(t, exitNetwork, code, out+errOut)
	assert.Contains(t, errOut, "the store at "+url+" could not be reached (connection refused): check that the server runs")
	assert.NotContains(t, errOut, "dial tcp")
}
