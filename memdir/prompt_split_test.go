package memdir

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildIndexContext(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	const auto = "/home/u/.claude/projects/-work/memory/"
	require.NoError(t, fsys.MkdirAll(auto, 0o755))

	got, err := BuildIndexContext(ctx, fsys, LoadPromptRequest{AutoDir: auto})
	require.NoError(t, err)
	assert.Empty(t, got, "no index, no block")
	require.NoError(t, afero.WriteFile(fsys, auto+"MEMORY.md", []byte("  \n\n"), 0o644))
	got, err = BuildIndexContext(ctx, fsys, LoadPromptRequest{AutoDir: auto})
	require.NoError(t, err)
	assert.Empty(t, got, "an empty index, no block")

	require.NoError(t, afero.WriteFile(fsys, auto+"MEMORY.md", []byte("- [Testing](testing.md) — real DB\u200b\x07\r\n"), 0o644))
	got, err = BuildIndexContext(ctx, fsys, LoadPromptRequest{AutoDir: auto})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got, "<system-reminder>\n"), got)
	assert.True(t, strings.HasSuffix(got, "\n</system-reminder>"), got)
	assert.Contains(t, got, "\n\nContents of "+auto+"MEMORY.md (user's auto-memory, persists across conversations):\n\n- [Testing](testing.md) — real DB\n</system-reminder>",
		"the label, a blank line and the cleaned index")

	require.NoError(t, afero.WriteFile(fsys, auto+"MEMORY.md", []byte(strings.Repeat("- [A](a.md) — x\n", 250)), 0o644))
	got, err = BuildIndexContext(ctx, fsys, LoadPromptRequest{AutoDir: auto})
	require.NoError(t, err)
	assert.Contains(t, got, "50 of 250 lines were cut off, starting at line 201", "the truncation warning goes with it")

	require.NoError(t, fsys.MkdirAll(auto+"team", 0o755))
	require.NoError(t, afero.WriteFile(fsys, auto+"team/MEMORY.md", []byte("- [CI](ci.md) — alerts\n"), 0o644))
	got, err = BuildIndexContext(ctx, fsys, LoadPromptRequest{AutoDir: auto, TeamActive: true})
	require.NoError(t, err)
	assert.Contains(t, got, "Contents of "+auto+"team/MEMORY.md")
	assert.Equal(t, 1, strings.Count(got, "<system-reminder>"), "one block for both indexes")
}

// With the index in the first user message, the system prompt does not
// change when the index does, so a cached prompt stays valid.
func TestSplitPromptKeepsTheSystemPromptStable(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	const auto = "/m/"
	require.NoError(t, fsys.MkdirAll(auto, 0o755))
	load := func(req LoadPromptRequest) MemoryPrompt {
		req.Enabled, req.AutoDir = true, auto
		p, err := LoadMemoryPrompt(ctx, fsys, req)
		require.NoError(t, err)
		return p
	}
	require.NoError(t, afero.WriteFile(fsys, auto+"MEMORY.md", []byte("- [One](one.md) — first\n"), 0o644))
	before := load(LoadPromptRequest{IndexInUserMessage: true})
	require.NoError(t, afero.WriteFile(fsys, auto+"MEMORY.md", []byte("- [One](one.md) — first\n- [Two](two.md) — second\n"), 0o644))
	after := load(LoadPromptRequest{IndexInUserMessage: true})
	assert.Equal(t, before.Text, after.Text)
	assert.NotContains(t, after.Text, "two.md")
	assert.Contains(t, after.IndexContext, "- [Two](two.md) — second")
	assert.Contains(t, after.Text, "`- [Title](file.md) — one-line hook`", "the index step is still taught")

	old := load(LoadPromptRequest{})
	assert.Contains(t, old.Text, "two.md", "without the option the index stays in the system prompt")
	assert.Empty(t, old.IndexContext)

	team := load(LoadPromptRequest{IndexInUserMessage: true, TeamActive: true})
	assert.Equal(t, PromptCombined, team.Mode)
	assert.NotContains(t, team.Text, "two.md")
	assert.Contains(t, team.IndexContext, "two.md")
}

func TestLeanPrompt(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	const auto = "/m/"
	require.NoError(t, fsys.MkdirAll(auto, 0o755))
	require.NoError(t, afero.WriteFile(fsys, auto+"MEMORY.md", []byte("- [One](one.md) — first\n"), 0o644))
	lean, err := LoadMemoryPrompt(ctx, fsys, LoadPromptRequest{Enabled: true, AutoDir: auto, Lean: true})
	require.NoError(t, err)
	long, err := LoadMemoryPrompt(ctx, fsys, LoadPromptRequest{Enabled: true, AutoDir: auto, IndexInUserMessage: true})
	require.NoError(t, err)
	assert.Equal(t, PromptLean, lean.Mode)
	assert.Less(t, len(lean.Text), 3000)
	assert.Less(t, float64(len(lean.Text))/float64(len(long.Text)), 0.5, "lean is the short one (%d against %d chars)", len(lean.Text), len(long.Text))
	for _, want := range []string{"`" + auto + "`", "metadata:\n  type:", "[[name]]", "`project`", "`reference`", "- [Title](file.md) — hook", "<system-reminder>"} {
		assert.Contains(t, lean.Text, want)
	}
	assert.NotContains(t, lean.Text, "one.md", "the lean prompt never holds the index")
	assert.Contains(t, lean.IndexContext, "one.md", "it goes with the first user message")
	assert.NotContains(t, lean.Text, "## ", "no sub-sections")

	skip, err := LoadMemoryPrompt(ctx, fsys, LoadPromptRequest{Enabled: true, AutoDir: auto, Lean: true, SkipIndex: true})
	require.NoError(t, err)
	assert.NotContains(t, skip.Text, "MEMORY.md", "with recall on, no index step")
	assert.Contains(t, skip.Text, "4 KB")
	assert.Empty(t, skip.IndexContext, "and no index is loaded")

	old, err := LoadMemoryPrompt(ctx, fsys, LoadPromptRequest{Enabled: true, AutoDir: auto, Lean: true, Layout: Layout2_1_88})
	require.NoError(t, err)
	assert.Contains(t, old.Text, "\ntype: <user, feedback, project or reference>\n", "the older layout is taught when asked for")
	assert.NotContains(t, old.Text, "metadata:")
}
