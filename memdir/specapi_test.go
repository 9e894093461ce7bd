package memdir_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/memdir"
)

// TestFixedEntryPointsMatchTheirGeneralForm: the two entry points the
// spec fixes give what their general forms give.
func TestFixedEntryPointsMatchTheirGeneralForm(t *testing.T) {
	long := strings.Repeat("- [a](a.md) — a hook\n", 250)
	assert.Equal(t, memdir.IndexLimits{}.Truncate(long), memdir.TruncateEntrypointContent(long))
	cut := memdir.TruncateEntrypointContent(long)
	assert.True(t, cut.WasLineTruncated)
	assert.Equal(t, 250, cut.LineCount)

	fsys := afero.NewMemMapFs()
	auto := "/home/u/.claude/projects/p/memory/"
	require.NoError(t, afero.WriteFile(fsys, auto+"MEMORY.md", []byte("- [Mine](mine.md) — private\n"), 0o644))
	require.NoError(t, afero.WriteFile(fsys, auto+"team/MEMORY.md", []byte("- [Ours](ours.md) — shared\n"), 0o644))
	req := memdir.LoadPromptRequest{Enabled: true, TeamActive: true, AutoDir: auto,
		IndividualMemoryFiles: []memdir.InstructionFile{{Path: "/p/CLAUDE.md", Content: "be terse"}}}
	ctx := context.Background()
	got, err := memdir.BuildCombinedMemoryPrompt(ctx, fsys, req)
	require.NoError(t, err)
	want, err := memdir.LoadMemoryPrompt(ctx, fsys, req)
	require.NoError(t, err)
	assert.Equal(t, want.Text, got)
	assert.Contains(t, got, "Ours")
	assert.Contains(t, got, "Mine")

	_, err = memdir.BuildCombinedMemoryPrompt(ctx, fsys, memdir.LoadPromptRequest{})
	assert.ErrorIs(t, err, memdir.ErrNoMemoryDir)
}
