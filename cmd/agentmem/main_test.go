package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/cmd")

const fixedNow = "2026-03-20T12:00:00Z"

var fixtureAges = map[string]time.Duration{
	"testing_policy.md": 2 * time.Hour, "user_role.md": 30 * time.Hour, "release_freeze.md": 10 * 24 * time.Hour,
	"ci_dashboard.md": 3 * time.Hour, "legacy_note.md": 90 * 24 * time.Hour,
	"team/build_invariants.md": time.Hour, "team/ci_alerts.md": 5 * 24 * time.Hour,
}

// copyTree copies src into dst on the real disk.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		return os.WriteFile(target, data, 0o644)
	}))
}

// fixture copies the Claude-Code-shaped tree into a temp home, with the
// project at $ROOT/work/acme/api (a real directory outside any git
// checkout, so the result cannot depend on where the tests run) and
// deterministic mtimes, and returns the temp root.
func fixture(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	copyTree(t, filepath.Join("..", "..", "testdata", "claude-home"), filepath.Join(root, "home"))
	project := filepath.Join(root, "work", "acme", "api")
	require.NoError(t, os.MkdirAll(project, 0o755))
	projects := filepath.Join(root, "home", ".claude", "projects")
	require.NoError(t, os.Rename(filepath.Join(projects, "-work-acme-api"), filepath.Join(projects, memdir.SanitizePath(project))))
	mem := filepath.Join(projects, memdir.SanitizePath(project), "memory")
	now, _ := time.Parse(time.RFC3339, fixedNow)
	for rel, age := range fixtureAges {
		mt := now.Add(-age)
		require.NoError(t, os.Chtimes(filepath.Join(mem, filepath.FromSlash(rel)), mt, mt))
	}
	return root
}

func runCmd(t *testing.T, root string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" },
		home: filepath.Join(root, "home"), cwd: root, fs: afero.NewOsFs()}
	code := run(args, e)
	clean := func(s string) string {
		s = strings.ReplaceAll(s, root, "$ROOT")
		return strings.ReplaceAll(s, memdir.SanitizePath(root), "$ROOTKEY")
	}
	return clean(out.String()), clean(errOut.String()), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("..", "..", "testdata", "golden", "cmd", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./cmd/agentmem -update to create %s", p)
	assert.Equal(t, string(want), got, "golden %s", name)
}

func TestGoldenSubcommands(t *testing.T) {
	t.Parallel()
	root := fixture(t)
	proj := []string{"--project", filepath.Join(root, "work", "acme", "api"), "--now", fixedNow}
	// A worktree checkout built on disk: it must share the main checkout's memory.
	w := func(p, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(content), 0o644))
	}
	w("src/main/.git/worktrees/feature/commondir", "../..\n")
	w("src/main/.git/worktrees/feature/gitdir", filepath.Join(root, "src/feature/.git")+"\n")
	w("src/feature/.git", "gitdir: "+filepath.Join(root, "src/main/.git/worktrees/feature")+"\n")
	// A project whose index is over the line limit.
	var big strings.Builder
	for i := 0; i < 230; i++ {
		big.WriteString("- [Note](note.md) — entry\n")
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "work", "big"), 0o755))
	w("home/.claude/projects/"+memdir.SanitizePath(filepath.Join(root, "work", "big"))+"/memory/MEMORY.md", big.String())

	cases := []struct {
		name string
		args []string
		code int
	}{
		{"path.txt", append([]string{"path"}, proj...), 0},
		{"path_worktree.txt", []string{"path", "--project", filepath.Join(root, "src/feature")}, 0},
		{"prompt.txt", append([]string{"prompt"}, proj...), 0},
		{"prompt_team.txt", append([]string{"prompt", "--team"}, proj...), 0},
		{"prompt_skip_index.txt", append([]string{"prompt", "--skip-index"}, proj...), 0},
		{"prompt_truncated.txt", []string{"prompt", "--project", filepath.Join(root, "work", "big")}, 0},
		{"ls.txt", append([]string{"ls"}, proj...), 0},
		{"ls_json.txt", append([]string{"ls", "--json"}, proj...), 0},
		{"lint.txt", append([]string{"lint"}, proj...), 1},
		{"recall.txt", append([]string{"recall", "--explain"}, append(proj, "should I mock postgres in integration tests?")...), 0},
		{"recall_none.txt", append([]string{"recall"}, append(proj, "write a haiku about autumn")...), 0},
		{"recall_none_explained.txt", append([]string{"recall", "--explain", "--embedder", "zero"}, append(proj, "write a haiku about autumn")...), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runCmd(t, root, c.args...)
			assert.Equal(t, c.code, code, "stderr: %s", errOut)
			golden(t, c.name, out)
		})
	}
	// A project without a memory directory is an error, and the prompt
	// creates nothing for it.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "work", "fresh"), 0o755))
	_, errOut, code := runCmd(t, root, "prompt", "--project", filepath.Join(root, "work", "fresh"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no memory directory at")
	_, err := os.Stat(filepath.Join(root, "home/.claude/projects", memdir.SanitizePath(filepath.Join(root, "work", "fresh"))))
	assert.True(t, os.IsNotExist(err))
}

func TestUsageAndErrors(t *testing.T) {
	t.Parallel()
	root := fixture(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: agentmem COMMAND"},
		{[]string{"--help"}, 0, "usage: agentmem COMMAND"},
		{[]string{"ls", "--help"}, 0, "usage: agentmem ls [--json]"},
		{[]string{"lint", "-h"}, 0, "--fix"},
		{[]string{"sessions", "ls", "--help"}, 0, "usage: agentmem sessions ls [--all-projects] [--json]"},
		{[]string{"team", "restore", "--help"}, 0, "the version to write back"},
		{[]string{"team", "log", "--help"}, 0, "usage: agentmem team log --server URL"},
		{[]string{"team", "sync", "--help"}, 0, "The token comes from $AGENTMEM_TEAM_TOKEN."},
	} {
		out, _, code := runCmd(t, root, c.args...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Contains(t, out, c.want)
	}
	logHelp, _, _ := runCmd(t, root, "team", "log", "--help")
	assert.NotContains(t, logHelp, "-version", "team log shows its own flags, not restore's")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"ls", "--nope"}, "flag provided but not defined"},
		{[]string{"recall"}, "give the message to recall for"},
		{[]string{"ls", "--now", "yesterday", "--project", filepath.Join(root, "work", "acme", "api")}, "--now: want an RFC 3339 time"},
		{[]string{"path", "extra"}, `unexpected argument "extra"`},
	} {
		_, errOut, code := runCmd(t, root, c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, errOut, c.want)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one-line errors: %q", errOut)
	}
}

func lintKinds(t *testing.T, dir string, extra ...string) ([]problem, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append([]string{"lint", "--json", "--dir", dir}, extra...), env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }, fs: afero.NewOsFs()})
	var res struct {
		Problems []problem `json:"problems"`
		Fixed    []string  `json:"fixed"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), "stderr %s", errOut.String())
	return res.Problems, code
}

func TestLintFixtures(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"dangling-pointer": kindDanglingPointer, "missing-pointer": kindMissingPointer, "index-too-long": kindIndexTooLong,
		"index-too-large": kindIndexTooLarge, "long-entry": kindLongEntry, "bad-frontmatter": kindBadFrontmatter,
		"no-frontmatter": kindBadFrontmatter, "missing-name": kindMissingName, "missing-description": kindMissingDescription,
		"unknown-type": kindUnknownType, "duplicate-name": kindDuplicateName, "similar-description": kindSimilarDescription,
	}
	for fixtureName, kind := range want {
		t.Run(fixtureName, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mem")
			copyTree(t, filepath.Join("..", "..", "testdata", "lint", fixtureName), dir)
			problems, code := lintKinds(t, dir)
			assert.Equal(t, exitProblems, code)
			require.NotEmpty(t, problems)
			for _, p := range problems {
				if p.Kind != kindLongEntry || kind != kindIndexTooLarge {
					assert.Equal(t, kind, p.Kind, "only the fixture's own problem: %v", p)
				}
			}
		})
	}
	t.Run("clean", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mem")
		copyTree(t, filepath.Join("..", "..", "testdata", "lint", "clean"), dir)
		problems, code := lintKinds(t, dir)
		assert.Equal(t, exitOK, code)
		assert.Empty(t, problems)
	})
	t.Run("secret", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mem")
		copyTree(t, filepath.Join("..", "..", "testdata", "lint", "clean"), dir)
		token := "gh" + "p_" + strings.Repeat("aB3dE5fG7h", 3) + "aB3dE5"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"),
			[]byte("---\nname: Alpha\ndescription: first clean memory about alpha things\ntype: project\n---\n\nuse "+token+"\n"), 0o644))
		problems, code := lintKinds(t, dir)
		assert.Equal(t, exitProblems, code)
		require.Len(t, problems, 1)
		assert.Equal(t, kindSecret, problems[0].Kind)
		assert.Contains(t, problems[0].Message, "GitHub PAT")
		assert.NotContains(t, problems[0].Message, token)
	})
}

func TestLintFix(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "mem")
	copyTree(t, filepath.Join("..", "..", "testdata", "lint", "missing-pointer"), dir)
	copyTree(t, filepath.Join("..", "..", "testdata", "lint", "dangling-pointer"), filepath.Join(t.TempDir(), "unused"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte("# Index\n- [Alpha](a.md) — alpha\n- [Gone](gone.md) — deleted long ago\n"), 0o644))
	before := listFiles(t, dir)

	var out bytes.Buffer
	code := run([]string{"lint", "--fix", "--dir", dir}, env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }, fs: afero.NewOsFs()})
	assert.Equal(t, exitOK, code, out.String())
	assert.Contains(t, out.String(), `fixed: MEMORY.md:3: removed dangling pointer "- [Gone](gone.md) — deleted long ago"`)
	assert.Contains(t, out.String(), `fixed: MEMORY.md: added pointer "- [Beta](b.md) — beta memory there"`)
	assert.Contains(t, out.String(), `fixed: team/MEMORY.md: added pointer "- [Team note](t.md) — shared team note text"`)
	index, err := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	require.NoError(t, err)
	assert.Equal(t, "# Index\n- [Alpha](a.md) — alpha\n- [Beta](b.md) — beta memory there\n", string(index))

	after := listFiles(t, dir)
	for f := range before {
		assert.True(t, after[f], "--fix never deletes a file: %s", f)
	}
	// Idempotent: a second run finds and changes nothing.
	snapshot := readAll(t, dir)
	out.Reset()
	code = run([]string{"lint", "--fix", "--dir", dir}, env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }, fs: afero.NewOsFs()})
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "no problems found\n", out.String())
	assert.Equal(t, snapshot, readAll(t, dir))
}

func listFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out[rel] = true
		}
		return err
	}))
	return out
}

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for f := range listFiles(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		out[f] = string(data)
	}
	return out
}

func TestBinary(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	root := fixture(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"path", "--config-dir", filepath.Join(root, "home", ".claude"), "--project", filepath.Join(root, "work", "acme", "api")}, 0},
		{[]string{"lint", "--config-dir", filepath.Join(root, "home", ".claude"), "--project", filepath.Join(root, "work", "acme", "api")}, 1},
		{[]string{"ls", "--help"}, 0},
		{[]string{"bogus"}, 2},
		{nil, 2},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = append(os.Environ(), "HOME="+filepath.Join(root, "home"))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, c.code, code, "%v: %s", c.args, out)
	}
}

func TestConfigHomeSources(t *testing.T) {
	t.Parallel()
	root := fixture(t)
	project := filepath.Join(root, "work", "acme", "api")
	run1 := func(getenv func(string) string, home string, args ...string) string {
		var out, errOut bytes.Buffer
		code := run(args, env{stdout: &out, stderr: &errOut, getenv: getenv, home: home, cwd: project, fs: afero.NewOsFs()})
		require.Equal(t, 0, code, errOut.String())
		return strings.SplitN(out.String(), "\n", 2)[0]
	}
	none := func(string) string { return "" }
	// --config-dir wins, then CLAUDE_CONFIG_DIR, then <home>/.claude; --project defaults to the cwd.
	assert.Contains(t, run1(none, "/nowhere", "path", "--config-dir", filepath.Join(root, "home", ".claude")), filepath.Join(root, "home", ".claude", "projects"))
	viaEnv := func(k string) string {
		if k == "CLAUDE_CONFIG_DIR" {
			return filepath.Join(root, "cfg")
		}
		return ""
	}
	assert.Contains(t, run1(viaEnv, filepath.Join(root, "home"), "path"), filepath.Join(root, "cfg", "projects"))
	assert.Contains(t, run1(none, filepath.Join(root, "home"), "path"), filepath.Join(root, "home", ".claude", "projects", memdir.SanitizePath(project)))
	// A project setting cannot move memory; the note says so.
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"autoMemoryDirectory":"~/.ssh"}`), 0o644))
	var out bytes.Buffer
	run([]string{"path"}, env{stdout: &out, stderr: &out, getenv: none, home: filepath.Join(root, "home"), cwd: project, fs: afero.NewOsFs()})
	assert.Contains(t, out.String(), "project settings set autoMemoryDirectory (ignored")
	assert.NotContains(t, out.String(), ".ssh")
	// A trusted local setting does.
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(`{"autoMemoryDirectory":"~/notes/mem"}`), 0o644))
	out.Reset()
	run([]string{"path"}, env{stdout: &out, stderr: &out, getenv: none, home: filepath.Join(root, "home"), cwd: project, fs: afero.NewOsFs()})
	assert.Contains(t, out.String(), "auto memory  "+filepath.Join(root, "home", "notes", "mem")+"/")
	assert.Contains(t, out.String(), "autoMemoryDirectory in local settings")
}

// TestMain gives the tests, and every process they start, a home of their
// own: a test never reads or writes the user's ~/.claude, and two tests
// that run the binary without a --config-dir share nothing from an
// earlier run. The Go tool keeps its caches where they were.
// machineCacheDir is the user's cache directory as it was before the
// tests set HOME to a folder of their own, so what is kept "once per
// machine" (the npm installs) outlives one run.
var machineCacheDir string

func TestMain(m *testing.M) {
	os.Exit(runIsolated(m))
}

func runIsolated(m *testing.M) int {
	out, err := exec.Command("go", "env", "GOCACHE", "GOPATH", "GOMODCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env:", err)
		return 2
	}
	vals := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, k := range []string{"GOCACHE", "GOPATH", "GOMODCACHE"} {
		if i < len(vals) {
			os.Setenv(k, vals[i])
		}
	}
	if machineCacheDir, err = os.UserCacheDir(); err != nil {
		machineCacheDir = os.TempDir()
	}
	home, err := os.MkdirTemp("", "agentmem-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(home)
	defer func() {
		if builtBin != "" {
			os.RemoveAll(filepath.Dir(builtBin))
		}
	}()
	os.Setenv("HOME", home)
	os.Unsetenv("CLAUDE_CONFIG_DIR")
	waitBound()
	return m.Run()
}

// waitBound runs six of this package's parallel tests at once on any
// machine, unless -parallel says otherwise: they spend most of their time
// waiting for the processes they start (the built binary, a server,
// Claude Code), so on two cores two at a time left a core idle.
func waitBound() {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(max(6, runtime.GOMAXPROCS(0))))
	}
}

// repoRoot is the repository's root, where README.md and docs/ are.
const repoRoot = "../.."

// readmeBlock returns the lines of the first ```sh block after marker in
// README.md or a guide under docs/ (docstest.Block).
func readmeBlock(t *testing.T, marker string) []string {
	t.Helper()
	return docstest.Block(t, repoRoot, marker)
}

// shell runs README lines verbatim with bash in dir, the built command
// first on PATH, after replacing the README's placeholders.
type shell struct {
	t       *testing.T
	dir     string
	env     []string
	replace *strings.Replacer
}

func newShell(t *testing.T, dir string, env []string, replace ...string) *shell {
	bin := filepath.Dir(binary(t))
	return &shell{t: t, dir: dir, env: append(env, "PATH="+bin+":"+os.Getenv("PATH")), replace: strings.NewReplacer(replace...)}
}

func (s *shell) script(lines []string) string {
	return "set -euo pipefail\n" + s.replace.Replace(strings.Join(lines, "\n")) + "\n"
}

// run runs lines and returns stdout and stderr; it fails the test on a
// non-zero exit unless allowed.
func (s *shell) run(lines []string) (string, string) {
	s.t.Helper()
	cmd := exec.Command("bash", "-c", s.script(lines))
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), s.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second // a background job that kept the output open cannot hang the test
	err := cmd.Run()
	require.NoError(s.t, err, "README lines failed:\n%s\nstdout:\n%s\nstderr:\n%s", s.script(lines), out.String(), errOut.String())
	return out.String(), errOut.String()
}

// start runs lines in the background (a watcher) and returns a function
// that stops it with SIGTERM and returns what it printed.
func (s *shell) start(lines []string) func() string {
	s.t.Helper()
	cmd := exec.Command("bash", "-c", s.script(lines))
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), s.env...)
	var mu sync.Mutex
	var out bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // bash and what it starts, stopped together
	require.NoError(s.t, cmd.Start())
	s.t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// clone makes a checkout of github.com/acme/shop for who, with its own
// home, and the token in the environment.
func clone(t *testing.T, root, who string) (string, []string) {
	project := filepath.Join(root, who, "src", "shop")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".git", "config"), []byte("[remote \"origin\"]\n\turl = git@github.com:acme/shop.git\n"), 0o644))
	home := filepath.Join(root, who, "home")
	return project, []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")}
}

func projectTeamDir(t *testing.T, project string, env []string) string {
	out, _, code := runIn(t, project, env, "path")
	require.Equal(t, 0, code)
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "team" {
			return f[1]
		}
	}
	t.Fatalf("no team line in %q", out)
	return ""
}

// TestREADMETwoTeammatesVerbatim runs the README's two-teammate session
// as written, on a fresh setup: Ana's watcher, then Ben's lines.
func TestREADMETwoTeammatesVerbatim(t *testing.T) {
	t.Parallel()
	lines := readmeBlock(t, "A session with two\nteammates, Ana and Ben")
	split := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "# Ben") {
			split = i
		}
	}
	require.Greater(t, split, 0, "the block has Ana's part, then Ben's")
	root := t.TempDir()
	_, url, token := startTeamServer(t, root)
	replace := []string{"http://host:8787", url, "amt_...", token}
	ana, anaEnv := clone(t, root, "ana")
	ben, benEnv := clone(t, root, "ben")
	anaTeam := projectTeamDir(t, ana, anaEnv)

	watcher := newShell(t, ana, anaEnv, replace...).start(lines[:split])
	time.Sleep(time.Second)
	// Ben's part runs in one shell, as a reader types it; where the
	// README says Ana's watcher has pulled, the shell waits until it has
	// and lints Ana's tree.
	lintOut := filepath.Join(root, "ana-lint.out")
	var benLines []string
	waits := 0
	for _, l := range lines[split:] {
		if strings.Contains(l, "within 5 s") {
			waits++
			l = fmt.Sprintf(`for i in $(seq 100); do [ -f %q ] && break; sleep 0.1; done; (cd %q && env %s agentmem lint > %q 2>&1 || true)`,
				filepath.Join(anaTeam, "testing.md"), ana, strings.Join(anaEnv, " "), lintOut)
		}
		benLines = append(benLines, l)
	}
	require.Equal(t, 1, waits)
	out, _ := newShell(t, ben, benEnv, replace...).run(benLines)
	assert.Contains(t, out, "pushed  testing.md")
	assert.Contains(t, out, "pushed  MEMORY.md")
	assert.Contains(t, out, "removed testing.md on the server")
	lint, err := os.ReadFile(lintOut)
	require.NoError(t, err)
	assert.Equal(t, "no problems found\n", string(lint), "the README's example memory is a clean one on Ana's side too")
	assert.Contains(t, watcher(), "wrote   testing.md")
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(anaTeam, "testing.md")); return os.IsNotExist(err) })
	waitFor(t, func() bool { return strings.Contains(watcher(), "deleted testing.md") })
	time.Sleep(6 * time.Second) // past an idle --interval 5s round
	log := watcher()
	assert.Equal(t, strings.Count(log, "checkpoint "), strings.Count(log, "done ("), "a line only for a round that changed something:\n%s", log)
}

// TestREADMEMovingOrRestoringAServer runs the README's "Moving or
// restoring a server" commands as written: a backup restored under
// memories written after it, then a move from SQLite to PostgreSQL.
func TestREADMEMovingOrRestoringAServer(t *testing.T) {
	t.Parallel()
	pg := os.Getenv("AGENTMEM_TEST_POSTGRES_DSN")
	if pg == "" && os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
		t.Fatal("AGENTMEM_REQUIRE_POSTGRES is set but AGENTMEM_TEST_POSTGRES_DSN is not")
	}
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" { // CI installs sqlite3 beside PostgreSQL
			t.Fatal("sqlite3 is not installed")
		}
		t.Skip("sqlite3 is not installed (.ci/run installs it)")
	}
	lines := readmeBlock(t, "### Moving or restoring a server")
	var restore, move []string
	for i, l := range lines {
		if strings.HasPrefix(l, "# Move to PostgreSQL") {
			restore, move = lines[:i], lines[i:]
		}
	}
	require.NotEmpty(t, move)

	root := t.TempDir()
	token, tokens := makeToken(t, root)
	require.NoError(t, os.Rename(tokens, filepath.Join(root, "tokens.json")))
	addr := freeAddr(t)
	url := "http://" + addr
	ana, anaEnv := clone(t, root, "ana")
	anaEnv = append(anaEnv, "AGENTMEM_TEAM_TOKEN="+token, "PG_URL="+pg)
	anaTeam := projectTeamDir(t, ana, anaEnv)
	sh := newShell(t, root, anaEnv, "127.0.0.1:8787", addr)
	t.Cleanup(func() {
		sh.run([]string{`[ -f team.pid ] && kill -KILL "$(cat team.pid)" 2>/dev/null || true`})
	})
	writeMemory := func(key, text string) {
		require.NoError(t, os.MkdirAll(anaTeam, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(anaTeam, key), []byte(text), 0o644))
	}
	inProject := func(cmd string) (string, string) {
		s := newShell(t, ana, anaEnv, "127.0.0.1:8787", addr)
		return s.run([]string{cmd})
	}

	// A running server, as the README starts it, and a first sync.
	sh.run([]string{"agentmem team serve --addr 127.0.0.1:8787 --db team.db --tokens tokens.json >>team.log 2>&1 & echo $! > team.pid"})
	writeMemory("early.md", "before the backup\n")
	inProject("agentmem team sync --server http://127.0.0.1:8787")

	// The backup line, then a memory written after it.
	sh.run(restore[:2])
	writeMemory("late.md", "after the backup\n")
	out, _ := inProject("agentmem team sync --server http://127.0.0.1:8787")
	require.Contains(t, out, "pushed  late.md")

	// Stop, put the copy back, start: the README's lines (the sync among
	// them runs in the project).
	var serverLines []string
	for _, l := range restore[2:] {
		if strings.HasPrefix(l, "agentmem team sync") {
			continue
		}
		serverLines = append(serverLines, l)
	}
	sh.run(serverLines)
	out, errOut := inProject(syncLine(restore))
	assert.Contains(t, errOut, "restored from a backup")
	assert.Contains(t, out, "pushed  late.md")
	assert.NotContains(t, out, "deleted")
	ben, benEnv := clone(t, root, "ben")
	benEnv = append(benEnv, "AGENTMEM_TEAM_TOKEN="+token)
	_, errOut, code := runIn(t, ben, benEnv, "team", "pull", "--server", url)
	require.Equal(t, 0, code, errOut)
	benTeam := projectTeamDir(t, ben, benEnv)
	for _, k := range []string{"early.md", "late.md"} {
		assert.FileExists(t, filepath.Join(benTeam, k), "the restored server has %s back", k)
	}

	if pg == "" {
		t.Log("AGENTMEM_TEST_POSTGRES_DSN is not set: the move to PostgreSQL is not run")
		return
	}
	// Move to PostgreSQL: a fresh schema, then the README's lines.
	schemaDSN := freshPostgresSchema(t, pg)
	sh = newShell(t, root, append(anaEnv, "PG_URL="+schemaDSN), "127.0.0.1:8787", addr)
	var moveServer []string
	for _, l := range move {
		if !strings.HasPrefix(l, "agentmem team sync") {
			moveServer = append(moveServer, l)
		}
	}
	sh.run(moveServer)
	out, errOut = inProject(syncLine(move))
	assert.Contains(t, errOut, "another identity")
	assert.Contains(t, out, "pushed  early.md")
	assert.Contains(t, out, "pushed  late.md")
	assert.NotContains(t, out, "deleted")
	carl, carlEnv := clone(t, root, "carl")
	carlEnv = append(carlEnv, "AGENTMEM_TEAM_TOKEN="+token)
	_, errOut, code = runIn(t, carl, carlEnv, "team", "pull", "--server", url)
	require.Equal(t, 0, code, errOut)
	carlTeam := projectTeamDir(t, carl, carlEnv)
	for _, k := range []string{"early.md", "late.md"} {
		assert.FileExists(t, filepath.Join(carlTeam, k), "the PostgreSQL store has %s", k)
	}
}

func syncLine(lines []string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, "agentmem team sync") {
			return l
		}
	}
	return "false"
}

// TestGuideSelfHostingOnOneMachine runs the team server guide's first
// three commands: the build at the repository's root (into a GOPATH of
// the test's own), then a token added to the token file and the server,
// here on a free loopback port; a teammate syncs with the token.
func TestGuideSelfHostingOnOneMachine(t *testing.T) {
	t.Parallel()
	lines := docstest.Block(t, repoRoot, "Self-hosting on one machine takes three\ncommands:")
	require.Len(t, lines, 3)
	require.True(t, strings.HasPrefix(lines[0], "go build "), lines[0])
	// The binary put in place below would hide a build to elsewhere.
	require.Contains(t, lines[0], `-o "$(go env GOPATH)/bin/agentmem" ./cmd/agentmem`)
	root := t.TempDir()
	gopath := filepath.Join(root, "go")
	// The binary the other tests built from the same sources is put where
	// the guide builds to: its build finds it up to date and neither
	// compiles nor links, while a command that does not build still fails.
	built, err := os.ReadFile(binary(t))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(gopath, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gopath, "bin", "agentmem"), built, 0o755))
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	build := newShell(t, repoRoot, []string{"GOPATH=" + gopath, "GOMODCACHE=" + strings.TrimSpace(string(modcache))})
	build.run(lines[:1])
	version, err := exec.Command(filepath.Join(gopath, "bin", "agentmem"), "version").CombinedOutput()
	require.NoError(t, err, "%s", version)
	assert.True(t, strings.HasPrefix(string(version), "agentmem "), "%s", version)

	addr := freeAddr(t)
	sh := newShell(t, root, nil, "0.0.0.0:8787", addr)
	sh.run(lines[1:2])
	token, err := os.ReadFile(filepath.Join(root, "ana.token"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(token), "amt_"), "ana.token holds the token only: %q", token)
	grants, err := os.ReadFile(filepath.Join(root, "tokens.json"))
	require.NoError(t, err)
	assert.Regexp(t, `"name":\s*"ana"`, string(grants))
	assert.NotContains(t, string(grants), strings.TrimSpace(string(token)), "the token file holds a hash")

	sh.start(lines[2:3])
	url := "http://" + addr
	waitFor(t, func() bool { return getStatus(http.DefaultClient, url+"/readyz") == http.StatusOK })
	ana, env := clone(t, root, "ana")
	env = append(env, "AGENTMEM_TEAM_TOKEN="+strings.TrimSpace(string(token)))
	require.NoError(t, os.MkdirAll(projectTeamDir(t, ana, env), 0o755))
	_, errOut, code := runIn(t, ana, env, "team", "sync", "--server", url)
	require.Equal(t, 0, code, errOut)

	// Ana's token, a person's, signs in to the console the guide names.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(url + "/console/signin")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, m, "%s", page)
	resp, err = browser.PostForm(url+"/console/signin", neturl.Values{"csrf": {html.UnescapeString(string(m[1]))}, "token": {strings.TrimSpace(string(token))}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "the guide's token signs in to the console")
}

// TestGuideRunningItForATeam runs the guide's "Running it for a team"
// commands (a token, then the server with TLS and metrics, on free
// loopback ports with a certificate for 127.0.0.1), then its history
// commands against that server: the log, one key's log, and a restore of
// version 12 of a memory written thirteen times.
func TestGuideRunningItForATeam(t *testing.T) {
	t.Parallel()
	lines := docstest.Block(t, repoRoot, "### Running it for a team")
	root := t.TempDir()
	cert, _ := selfSigned(t, root)
	addr, metrics := freeAddr(t), freeAddr(t)
	sh := newShell(t, root, nil, "0.0.0.0:8443", addr, "127.0.0.1:9187", metrics)
	out, _ := sh.run(lines[:1])
	printed := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, printed, 2, "a token, then its grant: %s", out)
	require.NoError(t, os.WriteFile(filepath.Join(root, "tokens.json"), []byte("["+printed[1]+"]"), 0o600))
	sh.start(lines[1:])

	pem, err := os.ReadFile(cert)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr
	waitFor(t, func() bool { return getStatus(tlsClient, url+"/readyz") == http.StatusOK })
	// The history commands, against this server (the client trusts its
	// certificate through SSL_CERT_FILE).
	history := docstest.Block(t, repoRoot, "the time and the content:")
	require.Len(t, history, 3)
	alice, env := clone(t, root, "alice")
	env = append(env, "AGENTMEM_TEAM_TOKEN="+printed[0], "SSL_CERT_FILE="+cert)
	team := projectTeamDir(t, alice, env)
	require.NoError(t, os.MkdirAll(team, 0o755))
	for v := 1; v <= 13; v++ {
		require.NoError(t, os.WriteFile(filepath.Join(team, "deploy.md"), []byte(fmt.Sprintf("Deploy rule, take %d.\n", v)), 0o644))
		_, errOut, code := runIn(t, alice, env, "team", "push", "--server", url)
		require.Equal(t, 0, code, errOut)
	}
	inProject := newShell(t, alice, env, "https://host:8443", url)
	out, _ = inProject.run(history[:1])
	assert.Contains(t, out, "deploy.md")
	out, _ = inProject.run(history[1:2])
	assert.Regexp(t, `(?m)^\s*13 .*alice`, out)
	assert.Regexp(t, `(?m)^\s*12 .*alice`, out)
	out, _ = inProject.run(history[2:3])
	assert.Contains(t, out, "restored deploy.md from version 12 as version 14")
	_, errOut, code := runIn(t, alice, env, "team", "pull", "--server", url)
	require.Equal(t, 0, code, errOut)
	got, err := os.ReadFile(filepath.Join(team, "deploy.md"))
	require.NoError(t, err)
	assert.Equal(t, "Deploy rule, take 12.\n", string(got))

	resp, err := http.Get("http://" + metrics + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "agentmem_team_requests_total", "the metrics address serves the server's metrics")
}

// getStatus returns the status of a GET, or 0 when it fails.
func getStatus(c *http.Client, url string) int {
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
