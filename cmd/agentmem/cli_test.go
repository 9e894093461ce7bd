package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memTree makes a memory directory with one memory and returns it.
func memTree(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "mem")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploys.md"),
		[]byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte("- [Deploy days](deploys.md) — never deploy on Fridays\n"), 0o644))
	return dir
}

func TestFlagsAfterTheArgument(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}
	out, errOut, code := runWithInput(t, env, "", "recall", "can we deploy on friday?", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Never deploy on Fridays.", "the --dir after the message is used")
	_, errOut, code = runWithInput(t, env, "", "recall", "deploy friday", "--no-such-flag")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "flag provided but not defined")
	out, _, code = runWithInput(t, env, "", "recall", "--dir", dir, "--", "--explain")
	assert.Equal(t, 0, code, "-- ends the flags")
	assert.NotContains(t, out, "tokens:", "--explain after -- is the message, not the flag")
}

func TestMissingThingsAreErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	missing := filepath.Join(root, "nope", "mem")
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", TokenEnv + "=x"}
	for _, args := range [][]string{
		{"ls", "--dir", missing},
		{"lint", "--dir", missing},
		{"prompt", "--dir", missing},
		{"recall", "deploy friday", "--dir", missing},
		{"ls", "--project", filepath.Join(root, "no-such-project"), "--config-dir", filepath.Join(root, "cfg")},
		{"team", "sync", "--server", "http://127.0.0.1:1", "--repo", "acme/shop", "--dir", filepath.Join(missing, "team")},
		{"team", "push", "--server", "http://127.0.0.1:1", "--repo", "acme/shop", "--dir", filepath.Join(root, "team")},
	} {
		_, errOut, code := runWithInput(t, env, "", args...)
		assert.Equal(t, exitError, code, "%v: %s", args, errOut)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	}
	entries, _ := os.ReadDir(root)
	assert.Empty(t, entries, "nothing was created")
}

func TestEveryCommandHonoursTheEnableChain(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	off := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1", TokenEnv + "=x"}
	for _, args := range [][]string{
		{"ls", "--dir", dir},
		{"lint", "--dir", dir},
		{"prompt", "--dir", dir},
		{"recall", "deploy friday", "--dir", dir},
		{"mcp", "--dir", dir},
		{"team", "pull", "--server", "http://127.0.0.1:1", "--repo", "acme/shop", "--dir", filepath.Join(dir, "team")},
	} {
		_, errOut, code := runWithInput(t, off, "", args...)
		assert.Equal(t, exitError, code, "%v", args)
		assert.Contains(t, errOut, "disabled", "%v", args)
	}
	out, _, code := runWithInput(t, off, "", "path", "--dir", dir)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "enabled      no")
	assert.NoDirExists(t, filepath.Join(dir, "team"))
}

func TestLintUsesThePromptsEntryLimit(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	long := "- [Deploy days](deploys.md) — " + strings.Repeat("x", 140) + "\n" // 170 characters: over 150, under 200
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(long), 0o644))
	problems, code := lintKinds(t, dir)
	assert.Equal(t, 1, code)
	var kinds []string
	for _, p := range problems {
		kinds = append(kinds, p.Kind)
	}
	assert.Contains(t, kinds, kindLongEntry)
}

func TestLintSaysWhyFrontmatterFails(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.md"), []byte("---\nname: caf\xe9\ndescription: d\n---\nbody\n"), 0o644))
	out, _, code := runWithInput(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "", "lint", "--dir", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "bad.md:2: bad-frontmatter: the frontmatter is not valid UTF-8")
}

func TestTeamServeOnABusyPortCreatesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, tokens := makeToken(t, root)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "first"), 0o755))
	srv, _, _ := startTeamServer(t, filepath.Join(root, "first"))
	db := filepath.Join(root, "second.db")
	_, errOut, code := runWithInput(t, nil, "", "team", "serve", "--addr", srv.addr, "--db", db, "--tokens", tokens)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "address already in use")
	assert.NoFileExists(t, db)
}

func TestTeamTokenAdd(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens.json")
	token1, errOut, code := runWithInput(t, nil, "", "team", "token", "--org", "acme", "--repo", "acme/*", "--name", "alice", "--add", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "added alice")
	token2, _, code := runWithInput(t, nil, "", "team", "token", "--org", "acme", "--repo", "acme/shop", "--name", "bob", "--add", file)
	require.Equal(t, 0, code)
	assert.NotEqual(t, token1, token2)
	assert.Equal(t, 1, strings.Count(token1, "\n"), "only the token on stdout")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var grants []map[string]any
	require.NoError(t, json.Unmarshal(data, &grants))
	require.Len(t, grants, 2)
	assert.Equal(t, "alice", grants[0]["name"])
	assert.Equal(t, "bob", grants[1]["name"])
	assert.NotContains(t, string(data), strings.TrimSpace(token1), "only hashes are kept")
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	_, errOut, code = runWithInput(t, nil, "", "team", "token", "--org", "acme", "--repo", "acme/*", "--name", "alice", "--add", file)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "already has a token named \"alice\"")
	require.NoError(t, os.WriteFile(file+".bad", []byte("not json"), 0o600))
	_, _, code = runWithInput(t, nil, "", "team", "token", "--org", "acme", "--repo", "acme/*", "--add", file+".bad")
	assert.Equal(t, exitError, code)
	bad, _ := os.ReadFile(file + ".bad")
	assert.Equal(t, "not json", string(bad), "an unparsable file is left as it is")
	after, _ := os.ReadFile(file)
	assert.Equal(t, data, after)

	// The server takes the file as it is.
	db := filepath.Join(t.TempDir(), "team.db")
	srv := &teamServer{t: t, addr: freeAddr(t), db: db, toks: file}
	srv.start()
	srv.kill()
}

func TestLintRefusesAnIndexLinkOutAndPromptDoesNotReadIt(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	outside := filepath.Join(t.TempDir(), "hostname")
	require.NoError(t, os.WriteFile(outside, []byte("OUTSIDE-HOST\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "team"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "team", "MEMORY.md")))
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}
	out, errOut, code := runWithInput(t, env, "", "prompt", "--team", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "OUTSIDE-HOST")
	out, _, code = runWithInput(t, env, "", "lint", "--dir", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "team/MEMORY.md: index-link-out: is a link that leads out of the memory directory")
	out, _, code = runWithInput(t, env, "", "lint", "--fix", "--dir", dir)
	assert.Equal(t, 1, code, "--fix cannot mend a link out, and says so again")
	assert.Contains(t, out, "index-link-out")
	data, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "OUTSIDE-HOST\n", string(data), "--fix wrote nothing through the link")
}

func TestLintFixSkipsBrokenFiles(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "blob.md"), []byte("\x00\x01\x02\xffbinary"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad\xffname.md"), []byte("---\nname: b\ndescription: bee\ntype: user\n---\nB\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "good.md"), []byte("---\nname: Good\ndescription: a good one\ntype: user\n---\nG\n"), 0o644))
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}
	out, _, code := runWithInput(t, env, "", "lint", "--fix", "--dir", dir)
	assert.Equal(t, 1, code, "the broken files are still problems after --fix:\n%s", out)
	assert.Contains(t, out, "fixed: MEMORY.md: added pointer")
	assert.Contains(t, out, "blob.md: bad-frontmatter: the file is not UTF-8 text")
	assert.Contains(t, out, "bad-file-name")
	assert.NotContains(t, out, "no problems found")
	index, err := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	require.NoError(t, err)
	assert.True(t, utf8.Valid(index), "no invalid name reaches the index")
	assert.Contains(t, string(index), "(good.md)")
	assert.NotContains(t, string(index), "blob.md")
	assert.NotContains(t, string(index), "name.md")
}

func TestLsReadsTheTypeClaudeCodeWritesUnderMetadata(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy-freeze-q3.md"), []byte("---\nname: deploy-freeze-q3\ndescription: No deploys after the cut\nmetadata:\n  node_type: memory\n  type: reference\n  originSessionId: 5d0c2a1e\n  modified: 2026-12-01T19:02:17.192Z\n---\nbody\n"), 0o644))
	out, errOut, code := runWithInput(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "", "ls", "--json", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"file": "deploy-freeze-q3.md",
    "type": "reference"`)
}

func TestLintListsUnresolvedLinksAsInformation(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "freeze.md"), []byte("---\nname: release-freeze\ndescription: no deploys after the cut\nmetadata:\n  type: project\n---\nSee [[deploys]], [[Deploy days]] and [[on-call-rota]].\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte("- [Deploy days](deploys.md) — never deploy on Fridays\n- [Freeze](freeze.md) — no deploys after the cut\n"), 0o644))
	out, _, code := runWithInput(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "", "lint", "--dir", dir)
	assert.Equal(t, 0, code, "a link to a memory not written yet is allowed:\n%s", out)
	assert.Contains(t, out, "no problems found")
	assert.Contains(t, out, "info: freeze.md: [[on-call-rota]] links to no memory yet (allowed)")
	assert.NotContains(t, out, "[[deploys]]", "a file name resolves")
	assert.NotContains(t, out, "[[Deploy days]]", "a name resolves")
}
