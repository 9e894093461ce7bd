package extract

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
)

// TestHistoryUndoesARun: a run writes a wrong memory and points the index
// at it; rewinding to the run's checkpoint restores the directory.
func TestHistoryUndoesARun(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "memory")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	index := "- [Testing policy](testing_policy.md) — no DB mocks\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(index), 0o644))
	history, err := filehistory.NewTracker(afero.NewOsFs(), filepath.Join(root, "config"), "extract", filehistory.Options{})
	require.NoError(t, err)

	model := llmtest.New(
		llmtest.ToolUse("t1", "Read", map[string]any{"file_path": dir + "/MEMORY.md"}),
		llmtest.ToolUse("t2", "Write", map[string]any{"file_path": dir + "/deploy_friday.md",
			"content": "---\nname: Deploys\ndescription: deploy on Fridays\ntype: feedback\n---\nAlways deploy on Friday evening.\n"}),
		llmtest.ToolUse("t3", "Edit", map[string]any{"file_path": dir + "/MEMORY.md", "old_string": "no DB mocks\n",
			"new_string": "no DB mocks\n- [Deploys](deploy_friday.md) — deploy on Fridays\n"}),
		llmtest.Text("Saved."),
	)
	rec := &recorder{}
	e, err := New(mustDir(t, afero.NewOsFs(), dir), model, Options{Observer: rec.observe, History: history})
	require.NoError(t, err)
	defer e.Close()
	e.OnTurnEnd(context.Background(), convo, TurnInfo{})
	require.NoError(t, e.Drain(ctx))

	var done Event
	for _, ev := range rec.events {
		if ev.Kind == EventFinished {
			done = ev
		}
	}
	require.NotEmpty(t, done.Checkpoint, "events: %v", rec.kinds())
	assert.Len(t, done.Files, 2)
	_, err = os.Stat(filepath.Join(dir, "deploy_friday.md"))
	require.NoError(t, err, "the run wrote the memory")

	st, err := history.Rewind(ctx, done.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Len(t, st.FilesChanged, 2)
	got, _ := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	assert.Equal(t, index, string(got))
	_, err = os.Stat(filepath.Join(dir, "deploy_friday.md"))
	assert.True(t, os.IsNotExist(err), "the wrong memory is gone")
}
