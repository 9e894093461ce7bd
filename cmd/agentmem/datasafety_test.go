package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
		dbs["postgres"] = freshPostgresSchema(t, dsn) // a shared schema fills the organization's repos
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
				w.Stderr = new(strings.Builder)
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
				assert.NoError(t, w.Wait(), "the watchers stop cleanly too: %s", w.Stderr)
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
	assert.Contains(t, errOut, "says the token may not use repo other/repo: ask for a token whose grant names it")

	// A full organization is not the token's fault: the words say so.
	fullToken, tokens := makeToken(t, t.TempDir())
	full, _ := serve(t, filepath.Join(root, "full.db"), tokens, "--max-repos", "1")
	first := newTeammate(t, root, "cy", full, fullToken)
	first.repo = "acme/first"
	first.write("a.md", "a\n")
	_, errOut, code = first.run("push")
	require.Equal(t, 0, code, errOut)
	second := newTeammate(t, root, "di", full, fullToken)
	second.repo = "acme/second"
	second.write("b.md", "b\n")
	_, errOut, code = second.run("push")
	assert.Equal(t, exitAuth, code, errOut)
	assert.Contains(t, errOut, "will not create repo acme/second: the organization holds as many repos as the server allows; nothing was written")
	assert.Contains(t, errOut, "team serve --max-repos")
	assert.NotContains(t, errOut, "may not use repo")

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
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, uint64(7+len(proto.name)))) // each protocol its own draws
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
		t.Parallel()
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
		t.Parallel()
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

// hostileCase is one file a teammate may write: its name and bytes, and,
// for a name that clashes with another client's folder, the file the
// other client holds below it.
type hostileCase struct {
	name    string
	file    string
	content string
	other   string // a path the teammate writes first ("" for none)
	link    bool   // file is a symbolic link to content outside the folder
	refused bool   // never carried: the name fakes a folder or an extension
}

func hostileCases() []hostileCase {
	line := strings.Repeat("a long line without a break, ", 3450)[:100_000]
	return []hostileCase{
		{name: "latin-1", file: "latin1.md", content: "---\nname: caf\xe9\n---\ncaf\xe9 au lait\n"},
		{name: "encoded surrogate", file: "surrogate.md", content: "before \xed\xa0\x80 after\n"},
		{name: "binary with NUL", file: "binary.md", content: "\x00\x01\x02\xff\xfe\x00binary\x00"},
		{name: "byte order mark", file: "bom.md", content: "\uFEFF---\nname: bom\n---\nstarts with a BOM\n"},
		{name: "CRLF", file: "crlf.md", content: "---\r\nname: crlf\r\n---\r\nWindows lines\r\n"},
		{name: "lone CR", file: "cr.md", content: "old Mac\rlines\rhere\r"},
		{name: "line separator", file: "u2028.md", content: "one\u2028two\u2029three\n"},
		{name: "100 KB line", file: "long.md", content: line},
		{name: "empty file", file: "empty.md", content: ""},
		{name: "trailing spaces", file: "trailing.md", content: "keep these   \nand this\t\n  \n"},
		{name: "tag characters", file: "tags.md", content: "visible\U000E0041\U000E0042\U000E007F text\n"},
		{name: "bidi controls", file: "bidi.md", content: "admin\u202Eexe.md\u202C and \u2066isolate\u2069\n"},
		{name: "NFD name", file: "cafe\u0301.md", content: "named in NFD\n"},
		{name: "spaces in name", file: "my notes  on deploys .md", content: "spaces\n"},
		{name: "emoji name", file: "rocket-\U0001F680.md", content: "emoji\n"},
		{name: "escape in name", file: "a\x1b]0;TITLE\x07.md", content: "an escape sequence in the name\n"},
		{name: "tab in name", file: "tab\there.md", content: "a tab in the name\n"},
		{name: "newline in name", file: "two\nlines.md", content: "a newline in the name\n"},
		// Today the server refuses Ana's whole team push on the clash
		// (team_memory_key_conflict): nothing else of hers reaches Ben.
		{name: "name clashes with a folder", file: "clash.md", content: "a file here\n", other: "clash.md/inner.md"},
		// Today the team server refuses Ana's whole push on keys that
		// differ only in case (team_memory_key_conflict).
		{name: "name differs only in case", file: "notes.md", content: "lower case\n", other: "Notes.md"},
		{name: "over the size limit", file: "huge.md", content: strings.Repeat("x", 250_001)},
		{name: "a secret", file: "secret.md", content: "the token is ghp_" + strings.Repeat("aB3dE5", 6) + "\n"},
		{name: "deep path", file: strings.Repeat("d/", 21) + "deep.md", content: "21 folders down\n"},
		{name: "long name", file: strings.Repeat("n", 240) + ".md", content: "a long name\n"},
		// Today team sync leaves a link out without a word, exit 0.
		{name: "link to a file outside", file: "outside.md", content: "what lies outside the memory folder\n", link: true},
		{name: "colon and backslash in name", file: "a:b\\c.md", content: "odd characters\n"},
		{name: "look-alike slash in name", file: "a\u2215b.md", content: "a division slash, not a folder\n", refused: true},
		{name: "look-alike dot in name", file: "notes\uff0eold.md", content: "a fullwidth dot, not an extension\n", refused: true},
	}
}

// hostileProtocol is one protocol's way to run the case table.
type hostileProtocol struct {
	name   string
	stores func(i int) string   // CLAUDE_MEMORY_STORES for group i ("" for none)
	round  func(i int) []string // the sync command of group i
	folder func(*person) string
}

// TestHostileBytesArriveExactlyOrAreRefused runs each hostile content and
// name on both protocols with the built binary, the way a user's folder
// holds them: all at once, beside an ordinary file. A case whose name
// clashes with a teammate's file refuses a whole team push, so each of
// those runs in a folder of its own. Ana writes the files and syncs; Ben
// syncs; Ana syncs twice more. For every case, either Ben holds exactly
// Ana's bytes under exactly her name, or Ana's rounds printed a line
// naming the file and why and exited non-zero; Ana's file is
// byte-identical after every round, the ordinary file reached Ben, and
// no output holds a raw control character of a name.
func TestHostileBytesArriveExactlyOrAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, token := syncTokens(t, dir)
	url, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens, "--rate", "-1")
	var groups [][]hostileCase
	var together []hostileCase
	for _, c := range hostileCases() {
		if c.other != "" {
			groups = append(groups, []hostileCase{c})
		} else {
			together = append(together, c)
		}
	}
	groups = append(groups, together)
	for i := range groups {
		createStore(t, url, token, fmt.Sprintf("hostile-%d", i))
	}
	protocols := []hostileProtocol{{
		name:   "team",
		stores: func(int) string { return "" },
		round: func(i int) []string {
			return []string{"team", "sync", "--server", url, "--repo", fmt.Sprintf("acme/hostile-%d", i)}
		},
		folder: func(p *person) string { return p.team },
	}, {
		name: "store",
		stores: func(i int) string {
			return fmt.Sprintf(`[{"path":"/v1/code/memory/hostile-%d","mount":"proj"}]`, i)
		},
		round:  func(int) []string { return []string{"store", "sync", "--server", url} },
		folder: func(p *person) string { return filepath.Join(p.team, "proj") },
	}}
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			for i, group := range groups {
				name := group[0].name
				if len(group) > 1 {
					name = "all at once"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel() // each group has its own repo, store and folders
					runHostileGroup(t, proto, token, i, group)
				})
			}
		})
	}
}

// runHostileGroup runs one folder of hostile cases through one protocol
// and checks every case of it.
func runHostileGroup(t *testing.T, proto hostileProtocol, token string, i int, cases []hostileCase) {
	root := t.TempDir()
	ana := newPerson(t, root, "ana", token, proto.stores(i))
	ben := newPerson(t, root, "ben", token, proto.stores(i))
	round := proto.round(i)
	ana.ok(round...) // mounts her (empty) folder
	ben.ok(round...)
	anaDir, benDir := proto.folder(ana), proto.folder(ben)
	for _, c := range cases {
		if c.other != "" {
			writeRaw(t, benDir, c.other, []byte("ben's file below\n"))
		}
	}
	if slices.ContainsFunc(cases, func(c hostileCase) bool { return c.other != "" }) {
		ben.ok(round...)
	}
	for _, c := range cases {
		if c.link {
			outside := filepath.Join(root, "outside.txt")
			require.NoError(t, os.WriteFile(outside, []byte(c.content), 0o644))
			require.NoError(t, os.Symlink(outside, filepath.Join(anaDir, c.file)))
		} else {
			writeRaw(t, anaDir, c.file, []byte(c.content))
		}
	}
	writeRaw(t, anaDir, "ordinary.md", []byte("an ordinary memory\n"))

	var said strings.Builder
	codes := []int{}
	check := func(round string) {
		t.Helper()
		for _, c := range cases {
			got, err := os.ReadFile(filepath.Join(anaDir, c.file))
			if assert.NoError(t, err, "%s: %s: Ana's file is gone", c.name, round) {
				assert.Equal(t, c.content, string(got), "%s: %s: Ana's file changed", c.name, round)
			}
		}
	}
	out, code := ana.run(round...)
	said.WriteString(out)
	codes = append(codes, code)
	check("her first round")
	out, code = ben.run(round...)
	benSaid := fmt.Sprintf("Ben's round (exit %d):\n%s", code, out)
	check("Ben's round")
	for n := range 2 {
		out, code2 := ana.run(round...)
		said.WriteString(out)
		codes = append(codes, code2)
		check(fmt.Sprintf("her round %d", n+2))
	}
	out, code = ben.run(round...)
	benSaid += fmt.Sprintf("Ben's last round (exit %d):\n%s", code, out)

	benFiles := memoryFiles(t, benDir)
	assert.Equal(t, "an ordinary memory\n", benFiles["ordinary.md"], "the ordinary file reaches Ben whatever the others are\nAna:\n%s\n%s", said.String(), benSaid)
	for _, o := range []string{said.String(), benSaid} {
		assert.NotContains(t, o, "\x1b", "the output holds an escape character")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkHostileCase(t, c, benFiles, said.String(), benSaid, codes)
		})
	}
}

// checkHostileCase checks one case after the rounds: carried exactly,
// or refused by a line that names it and a non-zero exit.
func checkHostileCase(t *testing.T, c hostileCase, benFiles map[string]string, said, benSaid string, codes []int) {
	if c.other != "" {
		assert.Equal(t, "ben's file below\n", benFiles[c.other], "Ben's own file stays")
	}
	if strings.ContainsAny(c.file, "\x1b\x07\t\n") {
		for _, o := range []string{said, benSaid} {
			assert.NotContains(t, o, c.file, "a name with control characters is printed raw")
		}
	}
	got, received := benFiles[c.file]
	if c.refused {
		assert.False(t, received, "a name that looks like another path reached Ben")
	}
	if c.link {
		assert.False(t, received, "a link's target outside the folder reached Ben: %q", got)
		received = false
	}
	if received && got == c.content {
		t.Logf("%s: carried exactly (Ana's exit codes %v)", c.name, codes)
		return
	}
	if received {
		t.Errorf("Ben received other bytes under %q: %q (want %q)", c.file, abbrev(got), abbrev(c.content))
	}
	named := false
	for _, l := range strings.Split(said, "\n") {
		if strings.Contains(l, "skipped") && (strings.Contains(l, c.file) || strings.Contains(l, quoteInner(c.file))) {
			named = true
			t.Logf("%s: refused: %s", c.name, l)
			if strings.ContainsAny(c.file, "\x1b\x07\n") {
				assert.NotContains(t, l, "(not_nfc:", "a name in NFC that holds a control character is refused for the character, not its form")
			}
			if want := bytesReason(c.file, c.content, c.link); want != nil {
				assert.True(t, slices.ContainsFunc(want, func(r string) bool { return strings.Contains(l, "("+r+":") }),
					"a plain name whose bytes cannot be carried is skipped for %v, as the guides print it: %s", want, l)
			}
		}
	}
	assert.True(t, named, "%q neither reached Ben nor was refused with a line naming it; Ana's output:\n%s", c.file, said)
	for _, code := range codes {
		assert.NotEqual(t, 0, code, "a round that refused a file exits 0")
	}
}

// bytesReason is the reason the guides print for a plainly named file
// whose content cannot be carried exactly (nil when the name or a link
// could be the reason instead).
func bytesReason(name, content string, link bool) []string {
	if link || !plainName.MatchString(name) {
		return nil
	}
	var why []string
	if !utf8.ValidString(content) {
		why = append(why, "not_utf8")
	}
	if strings.Contains(content, "\x00") {
		why = append(why, "nul_byte")
	}
	return why
}

var plainName = regexp.MustCompile(`^[a-z0-9_-]+\.md$`)

// quoteInner is s as Go quotes it, without the quotes.
func quoteInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func abbrev(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// A server upgraded onto a database that holds credentials from before
// it refused them redacts them when it starts, says so, and serves them
// to nobody: a teammate's sync pulls the redacted entry, and the Memory
// Stores API answers the redacted memory.
func TestServeRedactsCredentialsStoredBeforeTheRefusal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, token := syncTokens(t, dir)
	ghp := "ghp_" + strings.Repeat("aB3dE5", 6)
	db, err := sqlite.Open(filepath.Join(dir, "team.db"))
	require.NoError(t, err)
	ctx, now := context.Background(), time.Now()
	_, err = db.Put(ctx, teamserver.Repo{Tenant: "acme", Name: "acme/shop"}, teamserver.PutRequest{
		Entries: map[string]string{"key.md": "the deploy token is " + ghp + "\n", "ok.md": "fine\n"}, Author: "ana", Now: now})
	require.NoError(t, err)
	st, err := db.CreateMemStore(ctx, "acme", teamserver.MemStore{Name: "notes"}, teamserver.StoreLimits{}, now)
	require.NoError(t, err)
	content := "token " + ghp + "\n"
	m, err := db.CreateMemory(ctx, "acme", st.ID, teamserver.MemoryWrite{Path: "/key.md", Content: &content}, teamserver.StoreLimits{}, now)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	url, cmd := serveArgs(t, filepath.Join(dir, "team.db"), tokens)
	said := serverLogOf(t, cmd)
	assert.Contains(t, said, "redacted a credential stored before this server refused them: acme acme/shop key.md")
	assert.Contains(t, said, "redacted a credential stored before this server refused them: acme "+st.ID+" /key.md")
	assert.NotContains(t, said, ghp)

	ben := newPerson(t, t.TempDir(), "ben", token, "")
	ben.ok("team", "sync", "--server", url, "--repo", "acme/shop")
	files := memoryFiles(t, ben.team)
	assert.Equal(t, "the deploy token is [REDACTED]\n", files["key.md"])
	assert.Equal(t, "fine\n", files["ok.md"])
	code, _, body := storeHTTP(t, http.MethodGet, url+"/v1/memory_stores/"+st.ID+"/memories/"+m.ID, token, true, nil)
	require.Equal(t, http.StatusOK, code, "%s", body)
	assert.Contains(t, string(body), "token [REDACTED]")
	assert.NotContains(t, string(body), ghp)
	out, code2 := ben.run("team", "log", "--server", url, "--repo", "acme/shop")
	assert.Equal(t, 0, code2, out)
	assert.Contains(t, out, teamserver.ServerAuthor, "the log names the server as the writer")
}
