package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerWithoutASchemeSaysWhatToType: every --server (and mcp's
// --team-server) given as host:port says the address needs http:// or
// https:// and shows the fixed value, instead of Go's URL parse error.
func TestServerWithoutASchemeSaysWhatToType(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", TokenEnv + "=x", StoreTokenEnv + "=x", "CLAUDE_CONFIG_DIR=" + filepath.Join(root, "cfg")}
	for _, args := range [][]string{
		{"team", "pull", "--server", "127.0.0.1:8787", "--repo", "acme/shop", "--dir", filepath.Join(root, "team")},
		{"team", "sync", "--server", "127.0.0.1:8787", "--repo", "acme/shop", "--dir", filepath.Join(root, "team")},
		{"team", "log", "--server", "127.0.0.1:8787", "--repo", "acme/shop"},
		{"store", "sync", "--server", "127.0.0.1:8787", "--stores", `[{"path":"/v1/code/memory/team-store","mount":"proj"}]`},
		{"mcp", "--dir", filepath.Join(root, "mem"), "--team-server", "127.0.0.1:8787"},
	} {
		_, errOut, code := runBinary(t, root, env, "", args...)
		assert.Equal(t, exitError, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "127.0.0.1:8787: the server address needs http:// or https://", "%v", args)
		assert.Contains(t, errOut, "http://127.0.0.1:8787", "%v: the fixed value is shown", args)
		assert.NotContains(t, errOut, "first path segment", "%v: not Go's parse error", args)
	}
	_, errOut, code := runBinary(t, root, env, "", "team", "pull", "--server", "ftp://files.example.com", "--repo", "acme/shop", "--dir", filepath.Join(root, "team"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "want an http:// or https:// URL")
	entries, _ := os.ReadDir(root)
	assert.Empty(t, entries, "nothing was created")
}

// TestServeDBInAMissingFolderNamesIt: --db in a folder that does not exist
// names the path and says the folder is missing, not SQLite's
// "unable to open database file (14)".
func TestServeDBInAMissingFolderNamesIt(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, tokens := makeToken(t, root)
	db := filepath.Join(root, "no-such-folder", "team.db")
	_, errOut, code := runWithInput(t, nil, "", "team", "serve", "--addr", "127.0.0.1:0", "--db", db, "--tokens", tokens)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, db)
	assert.Contains(t, errOut, "the folder "+filepath.Dir(db)+" does not exist")
	assert.NotContains(t, errOut, "(14)")
	assert.NoDirExists(t, filepath.Dir(db))
}

// TestLintSaysTheFrontmatterIsNotClosed: a memory whose opening --- has no
// closing one is reported as such, with the line, not as a memory with no
// name.
func TestLintSaysTheFrontmatterIsNotClosed(t *testing.T) {
	t.Parallel()
	dir := memTree(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "open.md"), []byte("\n---\nname: Open\ndescription: never closed\ntype: user\n\nThe body.\n"), 0o644))
	index, err := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), append(index, "- [Open](open.md) — never closed\n"...), 0o644))
	out, _, code := runWithInput(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "", "lint", "--dir", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "open.md:2: bad-frontmatter: the frontmatter opened by the --- on line 2 is not closed")
	assert.NotContains(t, out, "missing-name")
	assert.Equal(t, 1, strings.Count(out, "open.md"), "one problem: %s", out)
}
