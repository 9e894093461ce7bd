package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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
	} {
		out, _, code := runCmd(t, root, c.args...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Contains(t, out, c.want)
	}
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
	bin := filepath.Join(t.TempDir(), "agentmem")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
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
