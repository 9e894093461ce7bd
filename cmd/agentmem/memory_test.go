package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var undoRe = regexp.MustCompile(`undo with: agentmem rewind (\S+) --session (\S+)`)

// TestNewShowRmOnAFreshProject starts where a newcomer does: a project
// with no memory directory. new creates it with the memory and its index
// pointer (body from standard input or --body); ls, lint, prompt and
// recall then work; show prints a memory by file or name; rm removes one
// and the rewind it prints brings it back.
func TestNewShowRmOnAFreshProject(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "shop")
	require.NoError(t, os.MkdirAll(project, 0o755))
	cfg := filepath.Join(root, "cfg")
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", "CLAUDE_CONFIG_DIR=" + cfg}
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runBinary(t, project, env, stdin, args...)
	}
	for _, args := range [][]string{{"ls"}, {"lint"}, {"prompt"}, {"recall", "how do we test?"}} {
		_, errOut, code := run("", args...)
		assert.Equal(t, exitError, code, "%v", args)
		assert.Contains(t, errOut, "agentmem new", "%v: the error says how to start", args)
	}

	out, errOut, code := run("Run the integration tests against a real database, never mocks.\n",
		"new", "--type", "feedback", "--name", "Testing policy", "--description", "how we test: a real database, no mocks")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "saved feedback memory testing_policy.md")
	pathOut, _, code := run("", "path")
	require.Equal(t, 0, code)
	dir := strings.TrimSpace(strings.TrimPrefix(strings.Split(pathOut, "\n")[0], "auto memory"))
	data, err := os.ReadFile(filepath.Join(dir, "testing_policy.md"))
	require.NoError(t, err, "new made the memory directory")
	assert.Contains(t, string(data), "type: feedback")
	assert.Contains(t, string(data), "Run the integration tests against a real database, never mocks.")
	_, errOut, code = run("", "new", "--type", "project", "--name", "Deploy freeze", "--description", "no deploys on Fridays",
		"--body", "No deploys on Fridays.", "--why", "weekend on-call is thin")
	require.Equal(t, 0, code, errOut)
	index, err := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	require.NoError(t, err)
	assert.Equal(t, "- [Testing policy](testing_policy.md) — how we test: a real database, no mocks\n"+
		"- [Deploy freeze](deploy_freeze.md) — no deploys on Fridays\n", string(index))

	out, errOut, code = run("", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "testing_policy.md")
	out, errOut, code = run("", "lint")
	assert.Equal(t, 0, code, "what new writes lints clean: %s%s", out, errOut)
	out, _, code = run("", "prompt")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "deploy_freeze.md")
	out, _, code = run("", "recall", "can we deploy on friday?")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "No deploys on Fridays.")

	for _, target := range []string{"deploy_freeze.md", "Deploy freeze", "deploy-freeze"} {
		out, errOut, code = run("", "show", target)
		require.Equal(t, 0, code, "%s: %s", target, errOut)
		assert.Contains(t, out, "**Why:** weekend on-call is thin", target)
	}

	out, errOut, code = run("", "rm", "Deploy freeze")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "removed deploy_freeze.md and its pointer in MEMORY.md")
	assert.NoFileExists(t, filepath.Join(dir, "deploy_freeze.md"))
	index, _ = os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	assert.NotContains(t, string(index), "deploy_freeze.md")
	m := undoRe.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	_, errOut, code = run("", "rewind", m[1], "--session", m[2])
	require.Equal(t, 0, code, errOut)
	assert.FileExists(t, filepath.Join(dir, "deploy_freeze.md"), "rewind undid rm")
	index, _ = os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	assert.Contains(t, string(index), "- [Deploy freeze](deploy_freeze.md) — no deploys on Fridays")

	out, _, _ = run("", "rm", "--help")
	assert.Contains(t, out, "agentmem rewind", "the help says how to undo")
}

// TestNewRefusesWhatItShouldNot: bad input writes nothing and says what to do.
func TestNewRefusesWhatItShouldNot(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", "CLAUDE_CONFIG_DIR=" + filepath.Join(t.TempDir(), "cfg")}
	before, err := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	require.NoError(t, err)
	secret := "ghp_" + strings.Repeat("a", 36)
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"--name", "x", "--description", "d", "--body", "b"}, "--type is required"},
		{"", []string{"--type", "opinion", "--name", "x", "--description", "d", "--body", "b"}, `"opinion" is not a memory type`},
		{"", []string{"--type", "user", "--description", "d", "--body", "b"}, "--name is required"},
		{"", []string{"--type", "user", "--name", "x", "--body", "b"}, "--description is required"},
		{"  \n", []string{"--type", "user", "--name", "x", "--description", "d"}, "no body"},
		{"", []string{"--type", "project", "--name", "Deploy days", "--file", "deploys.md", "--description", "d", "--body", "b"}, "deploys.md exists already: pass --replace"},
		{"", []string{"--type", "user", "--name", "x", "--file", "../outside.md", "--description", "d", "--body", "b"}, "invalid memory"},
		{"", []string{"--type", "reference", "--name", "CI token", "--file", "team/ci.md", "--description", "d", "--body", "token " + secret}, "GitHub"},
	} {
		_, errOut, code := runWithInput(t, env, c.stdin, append([]string{"new", "--dir", dir}, c.args...)...)
		assert.Equal(t, exitError, code, "%v", c.args)
		assert.Contains(t, errOut, c.want, "%v", c.args)
		assert.NotContains(t, errOut, secret, "an error never repeats the secret")
	}
	after, err := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.NoFileExists(t, filepath.Join(dir, "team", "ci.md"))
	assert.NoFileExists(t, filepath.Join(filepath.Dir(dir), "outside.md"))
	data, _ := os.ReadFile(filepath.Join(dir, "deploys.md"))
	assert.Contains(t, string(data), "Never deploy on Fridays.", "the existing memory is kept")

	out, errOut, code := runWithInput(t, env, "", "new", "--dir", dir, "--type", "project", "--name", "Deploy days", "--file", "deploys.md",
		"--description", "deploys only Monday to Thursday", "--body", "Deploy Monday to Thursday.", "--replace")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "undo with: agentmem rewind")
	data, _ = os.ReadFile(filepath.Join(dir, "deploys.md"))
	assert.Contains(t, string(data), "Deploy Monday to Thursday.")

	_, errOut, code = runWithInput(t, env, "", "show", "--dir", dir, "nothing-like-it")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "agentmem ls")
	_, errOut, code = runWithInput(t, env, "", "rm", "--dir", dir)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "which memory?")
	_, errOut, code = runWithInput(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1"}, "", "new", "--dir", dir, "--type", "user", "--name", "x", "--description", "d", "--body", "b")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "disabled")
}

// TestREADMEFirstMemories runs the README's first-memories lines verbatim
// in a fresh project, then the undo command rm printed.
func TestREADMEFirstMemories(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "shop")
	require.NoError(t, os.MkdirAll(project, 0o755))
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", "CLAUDE_CONFIG_DIR=" + filepath.Join(root, "cfg")}
	sh := newShell(t, project, env)
	out, _ := sh.run(readmeBlock(t, "say to start with `agentmem new`"))
	assert.Contains(t, out, "saved feedback memory testing_policy.md")
	assert.Contains(t, out, "saved project memory deploy_days.md")
	assert.Contains(t, out, "We deploy on Tuesdays and Thursdays.", "show printed the memory")
	assert.Contains(t, out, "removed deploy_days.md and its pointer in MEMORY.md")
	m := undoRe.FindAllStringSubmatch(out, -1)
	require.Len(t, m, 3, out)
	rm := m[2]
	out, _ = sh.run([]string{"agentmem rewind " + rm[1] + " --session " + rm[2], "agentmem show deploy_days.md"})
	assert.Contains(t, out, "We deploy on Tuesdays and Thursdays.", "the rewind rm printed brought it back")
}

// TestUndoTouchesOnlyItsOwnEdit: the undo new and rm print touches only
// the files that edit changed, never a memory saved or edited after it;
// where a later change is in the way it refuses and changes nothing, and
// with --force it keeps the current versions as a rewind of their own.
func TestUndoTouchesOnlyItsOwnEdit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "shop")
	require.NoError(t, os.MkdirAll(project, 0o755))
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", "CLAUDE_CONFIG_DIR=" + filepath.Join(root, "cfg")}
	run := func(args ...string) (string, int) {
		t.Helper()
		out, errOut, code := runBinary(t, project, env, "", args...)
		return out + errOut, code
	}
	undo := func(out string) []string {
		t.Helper()
		m := undoRe.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		return []string{"rewind", m[1], "--session", m[2]}
	}
	newMemory := func(name string) string {
		t.Helper()
		out, code := run("new", "--type", "project", "--name", name, "--description", name+" facts", "--body", name+" body.")
		require.Equal(t, 0, code, out)
		return out
	}
	newMemory("Alpha")
	pathOut, _ := run("path")
	dir := strings.TrimSpace(strings.TrimPrefix(strings.Split(pathOut, "\n")[0], "auto memory"))
	alpha, err := os.ReadFile(filepath.Join(dir, "alpha.md"))
	require.NoError(t, err)

	out, code := run("rm", "alpha.md")
	require.Equal(t, 0, code, out)
	undoRm := undo(out)
	newGamma := undo(newMemory("Gamma"))
	gammaPath := filepath.Join(dir, "gamma.md")
	edited := readFile(t, dir, "gamma.md") + "A line added by hand.\n"
	require.NoError(t, os.WriteFile(gammaPath, []byte(edited), 0o644))
	indexBefore := readFile(t, dir, "MEMORY.md")

	// The rm's undo would put back the index as it was before Gamma:
	// refused, nothing changed.
	out, code = run(append(undoRm, "--dry-run")...)
	assert.Equal(t, exitError, code, out)
	out, code = run(undoRm...)
	assert.Equal(t, exitError, code, out)
	assert.Contains(t, out, "MEMORY.md changed since")
	assert.Contains(t, out, "--force")
	assert.NoFileExists(t, filepath.Join(dir, "alpha.md"))
	assert.Equal(t, edited, readFile(t, dir, "gamma.md"), "a later memory is never touched")
	assert.Equal(t, indexBefore, readFile(t, dir, "MEMORY.md"))

	// Gamma's undo refuses too: the file was edited by hand since.
	out, code = run(newGamma...)
	assert.Equal(t, exitError, code, out)
	assert.Contains(t, out, "gamma.md")
	assert.Equal(t, edited, readFile(t, dir, "gamma.md"))

	// --force undoes the rm, and says how to undo that.
	out, code = run(append(undoRm, "--force")...)
	require.Equal(t, 0, code, out)
	assert.Equal(t, string(alpha), readFile(t, dir, "alpha.md"))
	assert.Equal(t, edited, readFile(t, dir, "gamma.md"), "the rm's history never held gamma.md")
	back := regexp.MustCompile(`undo this rewind with: agentmem rewind (\S+) --session (\S+)`).FindStringSubmatch(out)
	require.NotNil(t, back, out)
	out, code = run("rewind", back[1], "--session", back[2])
	require.Equal(t, 0, code, out)
	assert.Equal(t, indexBefore, readFile(t, dir, "MEMORY.md"), "the forced rewind is itself undone")

	// An undo run right away is clean, and its dry run says what it removes.
	out = newMemory("Delta")
	out2, code := run(append(undo(out), "--dry-run")...)
	require.Equal(t, 0, code, out2)
	assert.Contains(t, out2, "would remove "+filepath.Join(dir, "delta.md"))
	out2, code = run(undo(out)...)
	require.Equal(t, 0, code, out2)
	assert.Contains(t, out2, "removed "+filepath.Join(dir, "delta.md"))
	assert.NoFileExists(t, filepath.Join(dir, "delta.md"))
	assert.NotContains(t, readFile(t, dir, "MEMORY.md"), "delta.md")
	assert.Contains(t, readFile(t, dir, "MEMORY.md"), "gamma.md")
}

// TestNewNamesInAnyScript: new derives a file from a title in any script
// (NFC, so an NFD title names the same memory), and show and rm find it
// by that title in either form.
func TestNewNamesInAnyScript(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "shop")
	require.NoError(t, os.MkdirAll(project, 0o755))
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", "CLAUDE_CONFIG_DIR=" + filepath.Join(root, "cfg")}
	run := func(args ...string) (string, int) {
		t.Helper()
		out, errOut, code := runBinary(t, project, env, "", args...)
		return out + errOut, code
	}
	out, code := run("new", "--type", "project", "--name", "Café rules", "--description", "cafe", "--body", "x")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "saved project memory café_rules.md")
	out, code = run("new", "--type", "project", "--name", "Cafe\u0301 rules", "--description", "cafe", "--body", "y")
	assert.Equal(t, exitError, code, "the NFD title names the same file: %s", out)
	assert.Contains(t, out, "café_rules.md exists already")
	out, code = run("new", "--type", "project", "--name", "日本語のメモ", "--description", "jp", "--body", "z")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "saved project memory 日本語のメモ.md")
	for _, name := range []string{"Café rules", "Cafe\u0301 rules", "日本語のメモ"} {
		out, code = run("show", name)
		assert.Equal(t, 0, code, "%q: %s", name, out)
	}
	out, code = run("rm", "Cafe\u0301 rules")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "removed café_rules.md")
}
