package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/memdir"
)

// Claude Code writes a memory the way its model asks (a title as name, a
// top-level type) and rewrites the header into 2.1.328's layout; agentmem
// reads its type, slug and links, in the API, `ls` and the manifest.
func TestClaudeCodeWritesAMemoryAgentmemReadsIt(t *testing.T) {
	p := newCCProject(t)
	file := filepath.Join(p.auto, "deploy_freeze.md")
	p.stub.script("remember", []ccCall{{Name: "Write", Input: map[string]string{"file_path": file,
		"content": "---\nname: Deploy Freeze Q3\ndescription: No deploys to prod after 2026-12-04\ntype: project\n---\nThe mobile release cut. See [[release-train]].\n"}}})
	p.claude("step:remember the deploy freeze")

	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	t.Logf("Claude Code wrote:\n%s", raw)
	require.Contains(t, string(raw), "metadata:", "Claude Code rewrites the header into its layout")

	h := scanOne(t, p.auto, "deploy_freeze.md")
	assert.Equal(t, memdir.TypeProject, h.Type)
	assert.Equal(t, "deploy-freeze-q3", h.Name)
	assert.Equal(t, "No deploys to prod after 2026-12-04", h.Description)
	assert.Equal(t, []string{"release-train"}, h.Links)
	assert.Equal(t, "memory", h.Metadata["node_type"])
	assert.NotEmpty(t, h.Metadata["originSessionId"])

	out, errOut, code := p.agentmem("ls", "--json")
	require.Equal(t, 0, code, errOut)
	var listed []struct {
		File, Type, Name string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed, 1)
	assert.Equal(t, "project", listed[0].Type, out)

	out, errOut, code = p.agentmem("lint")
	assert.Contains(t, out+errOut, "release-train", "lint names the link that matches no memory")
	assert.NotContains(t, out+errOut, "error", "a dangling link is information, not an error")
	_ = code
}

// A memory agentmem writes reaches Claude Code's next request, through the
// index in the first user message; when Claude Code then edits the file,
// the header keeps the type and agentmem still reads it.
func TestAgentmemWritesAMemoryClaudeCodeReadsAndEditsIt(t *testing.T) {
	p := newCCProject(t)
	d, err := memdir.NewDir(afero.NewOsFs(), p.auto, memdir.DirOptions{SessionID: "agentmem-host-session"})
	require.NoError(t, err)
	_, err = d.Save(context.Background(), memdir.Memory{File: "testing_policy.md", Name: "Testing policy", Description: "integration tests hit a real database",
		Type: memdir.TypeFeedback, Body: "Never mock the database in integration tests.\n\n**Why:** a mocked migration hid a broken one.\n"})
	require.NoError(t, err)
	index, err := os.ReadFile(filepath.Join(p.auto, "MEMORY.md"))
	require.NoError(t, err)
	require.Contains(t, string(index), "testing_policy.md")

	file := filepath.Join(p.auto, "testing_policy.md")
	p.stub.script("edit", []ccCall{
		{Name: "Read", Input: map[string]string{"file_path": file}},
		{Name: "Edit", Input: map[string]any{"file_path": file, "old_string": "Never mock the database", "new_string": "Never, ever mock the database"}},
	})
	p.claude("step:edit the testing memory")

	first := p.firstUserText("step:edit")
	assert.Contains(t, first, "Contents of "+filepath.Join(p.auto, "MEMORY.md"), "the index reaches Claude Code in the first user message")
	assert.Contains(t, first, "testing_policy.md")
	assert.NotContains(t, p.systemText("step:edit"), "integration tests hit a real database", "2.1.328 keeps the index out of the system prompt")
	ours, err := memdir.BuildIndexContext(context.Background(), afero.NewOsFs(), memdir.LoadPromptRequest{AutoDir: p.auto})
	require.NoError(t, err)
	part := func(s string) string {
		i, j := strings.Index(s, "Contents of "), strings.Index(s, "</system-reminder>")
		require.True(t, i >= 0 && j > i, s)
		return s[i:j]
	}
	assert.Equal(t, part(first), part(ours), "agentmem's index block holds what Claude Code's does")

	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	t.Logf("after Claude Code's edit:\n%s", raw)
	require.Contains(t, string(raw), "Never, ever mock", "Claude Code's edit landed")
	h := scanOne(t, p.auto, "testing_policy.md")
	assert.Equal(t, memdir.TypeFeedback, h.Type, "the type survives Claude Code's rewrite")
	assert.Equal(t, "testing-policy", h.Name)
	assert.Equal(t, "agentmem-host-session", h.Metadata["originSessionId"], "Claude Code keeps the session that first wrote the file")

	// agentmem's own rewrite keeps what Claude Code added.
	before := h.Metadata
	_, err = d.Save(context.Background(), memdir.Memory{File: "testing_policy.md", Name: "testing-policy", Description: h.Description, Type: memdir.TypeFeedback,
		Body: "Never, ever mock the database in integration tests.\n"})
	require.NoError(t, err)
	after := scanOne(t, p.auto, "testing_policy.md")
	assert.Equal(t, before["node_type"], after.Metadata["node_type"])
	assert.Equal(t, before["originSessionId"], after.Metadata["originSessionId"])
}

// scanOne returns the scanned header of one memory file.
func scanOne(t *testing.T, dir, file string) memdir.MemoryHeader {
	t.Helper()
	hs, err := memdir.ScanMemoryFiles(context.Background(), afero.NewOsFs(), dir, memdir.ScanOptions{})
	require.NoError(t, err)
	for _, h := range hs {
		if h.Filename == file {
			return h
		}
	}
	var names []string
	for _, h := range hs {
		names = append(names, h.Filename)
	}
	t.Fatalf("%s not scanned in %s (found %s)", file, dir, strings.Join(names, ", "))
	return memdir.MemoryHeader{}
}

// ccCommentedIndex is a MEMORY.md with HTML comments in every place the
// Markdown grammar treats differently: blocks of their own (one line,
// several lines, indented, after a paragraph, a list or a quote, with
// text after them), comments in list items, quotes, text, code and other
// HTML blocks, unclosed ones, and link definitions.
const ccCommentedIndex = "<!-- maintained by the team: one line per memory -->\n" +
	"# Memory index\n" +
	"<!-- single comment line -->\n" +
	"- [A](a.md) — first\n" +
	"   <!-- indented inside the item -->\n" +
	"- [B](b.md) — second <!-- trailing comment -->\n" +
	"<!-- multi\nline\ncomment -->\n" +
	"<!-- one --> text after\n" +
	"before <!-- mid --> after\n" +
	"a paragraph line\n" +
	"<!-- right after a paragraph -->\n" +
	"  <!-- two spaces in -->\n" +
	"\n\n" +
	"    <!-- indented code -->\n" +
	"\n" +
	"> a quote <!-- in the quote -->\n" +
	"> <!-- quoted comment -->\n" +
	"<!-- after the quote -->\n" +
	"10. [D](d.md) — ordered\n" +
	"  <!-- under an ordered item -->\n" +
	"\n" +
	"[ref]: https://example.com/x\n" +
	"[other]: <https://example.com/y> \"title\"\n" +
	"<!-- a --><!-- b -->\n" +
	"<!-->\n" +
	"```\n<!-- in a fence -->\n```\n" +
	"~~~md\n<!-- in a tilde fence -->\n~~~\n" +
	"<div>html</div>\n" +
	"<!-- inside the div block -->\n" +
	"\n" +
	"<!-- after the div -->\n" +
	"- [E](e.md)\n" +
	"\n" +
	"<!-- after a blank line under a list -->\n" +
	"end line\n" +
	"<!-- unclosed at the end\n" +
	"last line\n"

// Claude Code drops the comment blocks of MEMORY.md before it sends the
// index and keeps link definitions; agentmem's index block holds exactly
// what Claude Code's does.
func TestClaudeCodeDropsIndexCommentsAsAgentmemDoes(t *testing.T) {
	p := newCCProject(t)
	require.NoError(t, os.MkdirAll(p.auto, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p.auto, "MEMORY.md"), []byte(ccCommentedIndex), 0o644))
	p.claude("step:look at the index")
	first := p.firstUserText("step:look")
	ours, err := memdir.BuildIndexContext(context.Background(), afero.NewOsFs(), memdir.LoadPromptRequest{AutoDir: p.auto})
	require.NoError(t, err)
	part := func(s string) string {
		i, j := strings.Index(s, "Contents of "), strings.Index(s, "</system-reminder>")
		require.True(t, i >= 0 && j > i, s)
		return s[i:j]
	}
	t.Logf("Claude Code sent:\n%s", part(first))
	assert.NotContains(t, part(first), "single comment line", "Claude Code drops a comment block")
	want := part(ours)
	if versionLess(claudeVersion(t, p.bin), "2.1.330") {
		// Before 2.1.330 Claude Code also dropped link definitions;
		// agentmem sends what the newer versions send.
		want = regexp.MustCompile(`(?m)^\[[^\]]+\]:.*\n`).ReplaceAllString(want, "")
	} else {
		assert.Contains(t, part(first), "[ref]: https://example.com/x", "Claude Code keeps a link definition")
	}
	assert.Equal(t, part(first), want, "agentmem's index block holds what Claude Code's does")
}

// Claude Code's memory prompt and agentmem's ask for the same header: a
// kebab-case name and the type under metadata; a memory written that way
// through Claude Code's Write tool is read with its type and name.
func TestClaudeCodeAndAgentmemAskForTheSameHeader(t *testing.T) {
	p := newCCProject(t)
	require.NoError(t, os.MkdirAll(p.auto, 0o755))
	file := filepath.Join(p.auto, "release_train.md")
	p.stub.script("header", []ccCall{{Name: "Write", Input: map[string]string{"file_path": file,
		"content": "---\nname: release-train\ndescription: Releases leave every second Tuesday\nmetadata:\n  type: project\n---\nThe train leaves every second Tuesday.\n"}}})
	p.claude("step:header write the release train")
	sys := p.systemText("step:header")
	require.Contains(t, sys, "metadata:\n  type:", "Claude Code asks for the type under metadata")
	require.Regexp(t, `(?m)^name: <[^>]*kebab[^>]*>$`, sys, "and a kebab-case name")
	require.NotRegexp(t, `(?m)^type:`, sys, "and no top-level type")

	out, errOut, code := p.agentmem("prompt")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "metadata:\n     type: <user, feedback, project or reference>", "agentmem's prompt asks for the same layout")
	assert.Regexp(t, `(?m)^\s*name: <a short name in lower-case words joined by hyphens`, out)
	assert.NotRegexp(t, `(?m)^   type:`, out, "no top-level type in agentmem's template")

	h := scanOne(t, p.auto, "release_train.md")
	assert.Equal(t, memdir.TypeProject, h.Type)
	assert.Equal(t, "release-train", h.Name)
}
