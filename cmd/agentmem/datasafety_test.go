package main

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run the built command against real server processes, the
// way a team meets a server that is moved, replaced or restored: nothing
// a teammate has may be lost, and every exit code is the documented one.

// teammate is one person's team directory and environment.
type teammate struct {
	t    *testing.T
	dir  string
	env  []string
	url  string
	repo string
}

func newTeammate(t *testing.T, root, who, url, token string) *teammate {
	t.Helper()
	home := filepath.Join(root, who, "home")
	dir := filepath.Join(root, who, "memory", "team")
	require.NoError(t, os.MkdirAll(filepath.Dir(dir), 0o755))
	return &teammate{t: t, dir: dir, url: url, repo: "acme/shop",
		env: []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "AGENTMEM_TEAM_TOKEN=" + token}}
}

// run runs `agentmem team CMD --server URL --repo R --dir D ARGS...`.
func (m *teammate) run(cmd string, args ...string) (string, string, int) {
	m.t.Helper()
	all := append([]string{"team", cmd, "--server", m.url, "--repo", m.repo, "--dir", m.dir}, args...)
	return runBin(m.t, m.env, all...)
}

func (m *teammate) write(key, content string) {
	m.t.Helper()
	p := filepath.Join(m.dir, filepath.FromSlash(key))
	require.NoError(m.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(m.t, os.WriteFile(p, []byte(content), 0o644))
}

// files returns key → content of every file in the team directory.
func (m *teammate) files() map[string]string {
	m.t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(m.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil // lock files are not memories
		}
		data, rerr := os.ReadFile(p)
		require.NoError(m.t, rerr)
		rel, _ := filepath.Rel(m.dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	return out
}

// moveTo points the server at another database, at the same address.
func (s *teamServer) moveTo(db string) {
	s.kill()
	s.db = db
	s.start()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o600))
}

// stop ends the server with SIGTERM, as a service manager does.
func (s *teamServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

func threeMemories(m *teammate) map[string]string {
	want := map[string]string{}
	for i := range 3 {
		k := fmt.Sprintf("m%d.md", i)
		want[k] = fmt.Sprintf("---\nname: m%d\ndescription: memory %d\ntype: project\n---\nFact %d.\n", i, i, i)
		m.write(k, want[k])
	}
	return want
}

func TestReplacedStoreDeletesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srv, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	want := threeMemories(ana)
	_, errOut, code := ana.run("sync")
	require.Equal(t, 0, code, errOut)

	// The server comes back at the same URL on an empty store.
	srv.moveTo(filepath.Join(root, "new.db"))
	out, errOut, code := ana.run("sync")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "deleted")
	assert.Contains(t, errOut, "warning: the server's store is not the one this directory last synced with")
	assert.Contains(t, errOut, "this run deletes nothing, keeps every local memory and pushes what the server lacks")
	assert.Equal(t, want, ana.files(), "every local memory is kept")
	for k := range want {
		assert.Contains(t, out, "pushed  "+k, "what the new store lacks is pushed")
	}

	// A teammate on the new store gets all three; ana's next sync is quiet.
	ben := newTeammate(t, root, "ben", url, token)
	_, errOut, code = ben.run("pull")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, want, ben.files())
	out, errOut, code = ana.run("sync")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "warning")
	assert.NotContains(t, out, "pushed")

	// Moved again, to a store that holds other data of the repo (another
	// identity): nothing deleted, the local versions stay.
	other := filepath.Join(root, "other.db")
	srv.moveTo(other)
	carl := newTeammate(t, root, "carl", url, token)
	carl.write("m0.md", "carl's own m0\n")
	_, errOut, code = carl.run("sync")
	require.Equal(t, 0, code, errOut)
	out, errOut, code = ana.run("sync")
	assert.Equal(t, exitConflict, code, errOut)
	assert.Contains(t, errOut, "another identity")
	assert.NotContains(t, out, "deleted")
	assert.Regexp(t, `conflict m0\.md: kept yours; the server's version is kept at `, out)
	assert.Equal(t, want, ana.files())
	kept, err := filepath.Glob(filepath.Join(root, "ana", "memory", ".team-conflicts", "m0.md.*.md"))
	require.NoError(t, err)
	require.Len(t, kept, 1)
	data, err := os.ReadFile(kept[0])
	require.NoError(t, err)
	assert.Equal(t, "carl's own m0\n", string(data), "the server's version is kept where the output says")
}

func TestRestoredBackupKeepsLaterMemories(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srv, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ana.write("early.md", "before the backup\n")
	ana.write("edited.md", "first text\n")
	_, errOut, code := ana.run("sync")
	require.Equal(t, 0, code, errOut)

	// The README's backup: stop the server, copy the file.
	srv.stop()
	backup := filepath.Join(root, "backup.db")
	copyFile(t, srv.db, backup)
	srv.start()

	ana.write("late.md", "after the backup\n")
	ana.write("edited.md", "second text\n")
	_, errOut, code = ana.run("sync")
	require.Equal(t, 0, code, errOut)

	// Restore the backup over the database.
	srv.stop()
	copyFile(t, backup, srv.db)
	srv.start()

	out, errOut, code := ana.run("sync")
	assert.Equal(t, exitConflict, code, "edited.md differs: yours stays, the server's older copy is kept aside\n%s%s", out, errOut)
	assert.Contains(t, errOut, "restored from a backup")
	assert.NotContains(t, out, "deleted")
	assert.Contains(t, out, "pushed  late.md")
	assert.Equal(t, map[string]string{"early.md": "before the backup\n", "late.md": "after the backup\n", "edited.md": "second text\n"}, ana.files())

	ben := newTeammate(t, root, "ben", url, token)
	_, errOut, code = ben.run("pull")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, ana.files(), ben.files(), "the restored server has everything back")
}

func TestWatcherAcrossAStoreReplacement(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srv, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	want := threeMemories(ana)
	w := exec.Command(binary(t), "team", "watch", "--server", url, "--repo", "acme/shop", "--dir", ana.dir, "--interval", "1s")
	w.Env = append(os.Environ(), ana.env...)
	w.Stdout, w.Stderr = io.Discard, io.Discard
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })

	ben := newTeammate(t, root, "ben", url, token)
	waitFor(t, func() bool { ben.run("pull"); return len(ben.files()) == 3 })

	srv.moveTo(filepath.Join(root, "new.db"))
	carl := newTeammate(t, root, "carl", url, token)
	waitFor(t, func() bool { carl.run("pull"); return len(carl.files()) == 3 })
	assert.Equal(t, want, ana.files(), "the watcher deleted nothing")
	assert.Equal(t, want, carl.files(), "and pushed everything to the new store")
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w.Wait())
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func TestRestoreOfADeletion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ana.write("x.md", "the text\n")
	_, errOut, code := ana.run("sync")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, os.Remove(filepath.Join(ana.dir, "x.md")))
	out, errOut, code := ana.run("sync")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "removed x.md on the server")

	logKey := func() string {
		out, errOut, code := runBin(t, ana.env, "team", "log", "--server", url, "--repo", "acme/shop", "--key", "x.md")
		require.Equal(t, 0, code, errOut)
		return out
	}
	out = logKey()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Contains(t, lines[0], "deleted", "newest first")
	deletion, content := strings.Fields(lines[0])[0], strings.Fields(lines[1])[0]

	_, errOut, code = runBin(t, ana.env, "team", "restore", "--server", url, "--repo", "acme/shop", "--key", "x.md", "--version", deletion)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "version "+deletion+" of x.md is its deletion")
	suggested := "agentmem team restore --server " + url + " --repo acme/shop --key x.md --version " + content
	assert.Contains(t, errOut, suggested)
	out = logKey()
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2, "nothing was written")

	// The suggested command works as printed.
	out, errOut, code = runBin(t, ana.env, strings.Fields(strings.TrimPrefix(suggested, "agentmem "))...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "restored x.md from version "+content)
	out, errOut, code = runBin(t, ana.env, strings.Fields(strings.TrimPrefix(suggested, "agentmem "))...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "x.md already holds the content of version "+content+": nothing was written")
	assert.Len(t, strings.Split(strings.TrimSpace(logKey()), "\n"), 3, "one restore, not two")
	ben := newTeammate(t, root, "ben", url, token)
	_, errOut, code = ben.run("pull")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, map[string]string{"x.md": "the text\n"}, ben.files())
	_, _, code = ana.run("sync")
	require.Equal(t, 0, code)
	assert.Equal(t, map[string]string{"x.md": "the text\n"}, ana.files())
}

// TestServeStopsWithWatchersConnected: SIGTERM to team serve with
// watchers long-polling drains and exits 0 within a second.
func TestServeStopsWithWatchersConnected(t *testing.T) {
	t.Parallel()
	dbs := map[string]string{"sqlite": ""}
	if dsn := os.Getenv("AGENTMEM_TEST_POSTGRES_DSN"); dsn != "" {
		dbs["postgres"] = dsn
	} else if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
		t.Fatal("AGENTMEM_REQUIRE_POSTGRES is set but AGENTMEM_TEST_POSTGRES_DSN is not")
	}
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			token, tokens := makeToken(t, root)
			if db == "" {
				db = filepath.Join(root, "team.db")
			}
			srv := &teamServer{t: t, addr: freeAddr(t), db: db, toks: tokens}
			srv.start()
			t.Cleanup(srv.kill)
			url := "http://" + srv.addr
			var watchers []*exec.Cmd
			for i := range 2 {
				m := newTeammate(t, root, fmt.Sprintf("w%d", i), url, token)
				m.repo = fmt.Sprintf("acme/stop-%d", time.Now().UnixNano())
				m.write("a.md", "a\n")
				w := exec.Command(binary(t), "team", "watch", "--server", url, "--repo", m.repo, "--dir", m.dir, "--interval", "30s")
				w.Env = append(os.Environ(), m.env...)
				require.NoError(t, w.Start())
				t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
				watchers = append(watchers, w)
			}
			time.Sleep(2 * time.Second) // both are long-polling now
			start := time.Now()
			require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
			err := srv.cmd.Wait()
			took := time.Since(start)
			assert.NoError(t, err, "team serve exits 0")
			assert.Less(t, took, time.Second, "and within a second")
			for _, w := range watchers {
				require.NoError(t, w.Process.Signal(syscall.SIGTERM))
				assert.NoError(t, w.Wait(), "the watchers stop cleanly too")
			}
		})
	}
}

func TestMassDeleteHold(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	for i := range 60 {
		ana.write(fmt.Sprintf("m%02d.md", i), fmt.Sprintf("memory %d\n", i))
	}
	_, errOut, code := ana.run("sync")
	require.Equal(t, 0, code, errOut)
	ben := newTeammate(t, root, "ben", url, token)
	_, errOut, code = ben.run("sync")
	require.Equal(t, 0, code, errOut)

	// Ana's directory loses 55 of 60 (a wrong rm): the push holds them all.
	for i := range 55 {
		require.NoError(t, os.Remove(filepath.Join(ana.dir, fmt.Sprintf("m%02d.md", i))))
	}
	flags := "--server " + ana.url + " --repo " + ana.repo + " --dir " + ana.dir
	var wayBack string
	for _, cmd := range []string{"push", "sync"} {
		out, errOut, code := ana.run(cmd)
		assert.Equal(t, exitHeld, code, "%s: %s%s", cmd, out, errOut)
		assert.Contains(t, errOut, "held: 55 memories would be deleted on the server (of 60 tracked; at most 50 at once); nothing was deleted")
		assert.Contains(t, errOut, "agentmem team "+cmd+" "+flags+" --allow-mass-delete")
		assert.NotContains(t, out, "removed")
		if m := regexp.MustCompile(`to bring them back here: agentmem (team pull .*)`).FindStringSubmatch(errOut); m != nil {
			wayBack = m[1]
		}
	}
	_, _, code = ben.run("sync")
	require.Equal(t, 0, code)
	assert.Len(t, ben.files(), 60, "the server kept every memory")

	// The way back the message names, as printed.
	require.Equal(t, "team pull "+flags+" --keep-deleted", wayBack)
	_, errOut, code = runBin(t, ana.env, strings.Fields(wayBack)...)
	require.Equal(t, 0, code, errOut)
	assert.Len(t, ana.files(), 60)

	// Ben really means it: confirmed, the deletions go through, and Ana's
	// next sync, which would remove 55 files here, holds them in turn.
	for i := range 55 {
		require.NoError(t, os.Remove(filepath.Join(ben.dir, fmt.Sprintf("m%02d.md", i))))
	}
	out, errOut, code := ben.run("sync", "--allow-mass-delete")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 55, strings.Count(out, "on the server"))
	out, errOut, code = ana.run("sync")
	assert.Equal(t, exitHeld, code, out)
	assert.Contains(t, errOut, "held: 55 memories would be removed from this directory")
	assert.Len(t, ana.files(), 60)
	out, errOut, code = ana.run("sync", "--allow-mass-delete")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 55, strings.Count(out, "deleted "))
	assert.Len(t, ana.files(), 5)
	assert.Regexp(t, `checkpoint (\S+) \(undo this pull: agentmem rewind (\S+)\)`, out)
}

func TestPullTakesACheckpointThatUndoesIt(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ana.write("a.md", "one\n")
	ana.write("b.md", "bee\n")
	_, _, code := ana.run("sync")
	require.Equal(t, 0, code)
	ben := newTeammate(t, root, "ben", url, token)
	_, _, code = ben.run("pull")
	require.Equal(t, 0, code)
	ben.write("a.md", "two\n")
	require.NoError(t, os.Remove(filepath.Join(ben.dir, "b.md")))
	_, _, code = ben.run("sync")
	require.Equal(t, 0, code)

	out, errOut, code := ana.run("pull")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote   a.md")
	assert.Contains(t, out, "deleted b.md")
	m := regexp.MustCompile(`checkpoint (\S+) \(undo this pull: (agentmem rewind \S+)\)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	out, errOut, code = runBin(t, ana.env, strings.Fields(m[2])[1:]...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, map[string]string{"a.md": "one\n", "b.md": "bee\n"}, ana.files(), "the rewind undid the pull: %s", out)
}

// One user, two projects: each team directory keeps its checkpoints in a
// history of its own, so two watchers never append to one journal, and a
// rewind undoes one project's pull only.
func TestEachTeamDirectoryHasItsOwnHistory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ben := newTeammate(t, root, "ben", url, token)
	ben.write("a.md", "one\n")
	_, _, code := ben.run("sync")
	require.Equal(t, 0, code)

	shop := newTeammate(t, root, "ana", url, token)
	site := newTeammate(t, root, "ana", url, token)
	site.dir = filepath.Join(root, "ana", "site", "memory", "team")
	require.NoError(t, os.MkdirAll(filepath.Dir(site.dir), 0o755))
	var checkpoints []string
	for _, m := range []*teammate{shop, site} {
		out, errOut, code := m.run("pull")
		require.Equal(t, 0, code, errOut)
		cp := regexp.MustCompile(`undo this pull: (agentmem rewind [^\s)]+)`).FindStringSubmatch(out)
		require.NotNil(t, cp, out)
		checkpoints = append(checkpoints, cp[1])
	}
	out, errOut, code := runBin(t, shop.env, "history")
	require.Equal(t, 0, code, errOut)
	names := regexp.MustCompile(`team-sync-[0-9a-f]{12}`).FindAllString(out, -1)
	assert.Len(t, uniq(names), 2, "two team directories, two histories: %s", out)

	_, errOut, code = runBin(t, shop.env, strings.Fields(checkpoints[1])[1:]...)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, site.files(), "the rewind undid the second project's pull")
	assert.Equal(t, map[string]string{"a.md": "one\n"}, shop.files(), "and left the first project alone")
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func TestConflictsExitSevenAndPullKeepsTheEdit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ana.write("deploy.md", "Tuesdays\n")
	_, _, code := ana.run("sync")
	require.Equal(t, 0, code)
	ben := newTeammate(t, root, "ben", url, token)
	_, _, code = ben.run("pull")
	require.Equal(t, 0, code)
	ana.write("deploy.md", "Wednesdays\n")
	_, _, code = ana.run("sync")
	require.Equal(t, 0, code)
	ben.write("deploy.md", "Thursdays\n")

	out, _, code := ben.run("pull")
	assert.Equal(t, exitConflict, code, out)
	assert.Contains(t, out, "skipped deploy.md (conflict: changed here and on the server; your file is untouched")
	assert.Equal(t, "Thursdays\n", ben.files()["deploy.md"], "pull never overwrites a local edit")
	out, _, code = ben.run("push")
	assert.Equal(t, exitConflict, code, out)
	assert.Contains(t, out, "skipped deploy.md (conflict")
	out, _, code = ben.run("sync")
	assert.Equal(t, exitConflict, code, out)
	assert.Contains(t, out, "conflict deploy.md: took the server's version; yours is kept at ")
	assert.Equal(t, "Wednesdays\n", ben.files()["deploy.md"])
	kept, _ := filepath.Glob(filepath.Join(root, "ben", "memory", ".team-conflicts", "deploy.md.*.md"))
	require.Len(t, kept, 1)
	data, _ := os.ReadFile(kept[0])
	assert.Equal(t, "Thursdays\n", string(data))
}

func TestWatchIsQuietWhenNothingChanges(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ana.write("a.md", "a\n")
	w := exec.Command(binary(t), "team", "watch", "--server", url, "--repo", "acme/shop", "--dir", ana.dir, "--interval", "300ms")
	w.Env = append(os.Environ(), ana.env...)
	var out strings.Builder
	w.Stdout, w.Stderr = &out, &out
	require.NoError(t, w.Start())
	time.Sleep(3 * time.Second)
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w.Wait())
	assert.Equal(t, 1, strings.Count(out.String(), "pushed  a.md"), out.String())
	assert.LessOrEqual(t, strings.Count(out.String(), "done:"), 1, "one line for the one change, none for the quiet rounds:\n%s", out.String())
}

func TestUntrustedCertificateIsNamed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	m := newTeammate(t, t.TempDir(), "ana", srv.URL, "amt_x")
	_, errOut, code := m.run("pull")
	assert.Equal(t, exitNetwork, code)
	assert.Contains(t, errOut, "the server's TLS certificate is signed by an authority this machine does not trust")
	assert.NotContains(t, errOut, "could not be reached")
}

// TestWatcherSaysAHoldOnce: a running watcher that meets a mass delete
// holds it every round but prints it once, and deletes nothing.
func TestWatcherSaysAHoldOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	for i := range 60 {
		ana.write(fmt.Sprintf("m%02d.md", i), fmt.Sprintf("memory %d\n", i))
	}
	_, errOut, code := ana.run("sync")
	require.Equal(t, 0, code, errOut)
	for i := range 55 {
		require.NoError(t, os.Remove(filepath.Join(ana.dir, fmt.Sprintf("m%02d.md", i))))
	}
	w := exec.Command(binary(t), "team", "watch", "--server", url, "--repo", "acme/shop", "--dir", ana.dir, "--interval", "300ms")
	w.Env = append(os.Environ(), ana.env...)
	var out strings.Builder
	w.Stdout, w.Stderr = &out, &out
	require.NoError(t, w.Start())
	time.Sleep(3 * time.Second) // about ten rounds
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w.Wait())
	assert.Equal(t, 1, strings.Count(out.String(), "held: 55 memories would be deleted on the server"), out.String())
	ben := newTeammate(t, root, "ben", url, token)
	_, _, code = ben.run("pull")
	require.Equal(t, 0, code)
	assert.Len(t, ben.files(), 60, "the server kept every memory")
}

// TestWatcherSaysALeftAtHomeFileOnce: a file the server's screens refuse
// is skipped every round but printed once, and left as it is.
func TestWatcherSaysALeftAtHomeFileOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	ana := newTeammate(t, root, "ana", url, token)
	ana.write("a.md", "a\n")
	ana.write("hidden.md", "deploy\u200b on fridays\n")
	w := exec.Command(binary(t), "team", "watch", "--server", url, "--repo", "acme/shop", "--dir", ana.dir, "--interval", "300ms")
	w.Env = append(os.Environ(), ana.env...)
	var out strings.Builder
	w.Stdout, w.Stderr = &out, &out
	require.NoError(t, w.Start())
	time.Sleep(2 * time.Second)
	ana.write("b.md", "b\n") // a change: a round with something to say
	time.Sleep(2 * time.Second)
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w.Wait())
	assert.Equal(t, 1, strings.Count(out.String(), "skipped hidden.md (screened"), out.String())
	assert.Equal(t, 1, strings.Count(out.String(), "pushed  b.md"), out.String())
	assert.Equal(t, "deploy\u200b on fridays\n", readFile(t, ana.dir, "hidden.md"))
}

// TestSyncErrorsSayWhatToDo: a repo outside the token's grant and a
// plain http:// URL to a TLS server each get a sentence that says what
// to change, not only a status.
func TestSyncErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	m := newTeammate(t, root, "ana", url, token)
	m.repo = "other/repo"
	_, errOut, code := m.run("pull")
	assert.Equal(t, exitAuth, code, errOut)
	assert.Contains(t, errOut, "the token may not use repo other/repo: ask for a token whose grant names it")

	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	plain := newTeammate(t, t.TempDir(), "ben", strings.Replace(srv.URL, "https://", "http://", 1), "amt_x")
	_, errOut, _ = plain.run("pull")
	assert.Contains(t, errOut, "the server speaks HTTPS: use an https:// URL")
}

// TestStoreRestoredAndWrittenPastLosesNothing runs the case a user met
// with the built server and CLI: Ben edits a memory and writes a new one
// after a backup; the backup is restored; Ana pushes the store past the
// generation Ben last saw; Ben's next `store sync` must neither delete
// his new memory nor take the older copy over his edit. (The store's
// versions tell the restore only when written more than a minute apart:
// the backup is made two minutes older, as one taken then would be.)
func TestStoreRestoredAndWrittenPastLosesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tokens, key, _, _ := storeTokens(t, root)
	srv := &teamServer{t: t, addr: freeAddr(t), db: filepath.Join(root, "team.db"), toks: tokens}
	srv.start()
	t.Cleanup(srv.kill)
	f := &syncFixture{t: t, tokens: tokens, url: "http://" + srv.addr, key: key, now: time.Now()}
	f.createStore()
	ana, ben := storeTeammates(t, f)
	sync := func(u storeUser) (string, int) {
		t.Helper()
		out, errOut, code := runIn(t, u.dir, u.env, "store", "sync", "--server", f.url)
		return out + errOut, code
	}
	for _, u := range []storeUser{ben, ana} {
		out, code := sync(u)
		require.Equal(t, 0, code, out)
	}
	writeFile(t, ben.folder, "shared.md", "v1\n")
	out, code := sync(ben)
	require.Equal(t, 0, code, out)
	out, code = sync(ana)
	require.Equal(t, 0, code, out)

	srv.stop() // the guide's backup: stop the server, copy the file
	backup := filepath.Join(root, "backup.db")
	copyFile(t, srv.db, backup)
	srv.start()
	agedBackup(t, backup, 2*time.Minute)
	writeFile(t, ben.folder, "shared.md", "v2, after the backup\n")
	writeFile(t, ben.folder, "new.md", "written after the backup\n")
	out, code = sync(ben)
	require.Equal(t, 0, code, out)

	srv.stop()
	copyFile(t, backup, srv.db)
	srv.start()
	for i := range 3 { // Ana's pushes take the store past Ben's generation
		writeFile(t, ana.folder, fmt.Sprintf("ana%d.md", i), "from Ana\n")
		out, code = sync(ana)
		require.Equal(t, 0, code, out)
	}

	out, code = sync(ben)
	assert.Equal(t, exitConflict, code, "the store's older shared.md is kept aside:\n%s", out)
	assert.Contains(t, out, "restored from a backup")
	assert.NotContains(t, out, "deleted /", "nothing of Ben's is deleted")
	assert.Contains(t, out, "pushed  /new.md")
	assert.Equal(t, "v2, after the backup\n", readFile(t, ben.folder, "shared.md"))
	assert.Equal(t, "written after the backup\n", readFile(t, ben.folder, "new.md"))
	for _, u := range []storeUser{ben, ana} {
		sync(u)
	}
	assert.Equal(t, "v2, after the backup\n", readFile(t, ana.folder, "shared.md"), "the edit reached Ana")
	assert.Equal(t, "written after the backup\n", readFile(t, ana.folder, "new.md"))
}

// agedBackup moves every time a SQLite backup of the server holds back
// by age, as if the backup had been taken that long ago (the server
// stopped, so nothing else has the file open).
func agedBackup(t *testing.T, path string, age time.Duration) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	ms := age.Milliseconds()
	for _, q := range []string{
		"UPDATE ms_memories SET created_ms = created_ms - ?1, updated_ms = updated_ms - ?1",
		"UPDATE ms_versions SET created_ms = created_ms - ?1",
	} {
		_, err := db.Exec(q, ms)
		require.NoError(t, err, q)
	}
}
