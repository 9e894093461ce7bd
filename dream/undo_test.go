package dream

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/racefs"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// TestAcceptUndoRestoresWhatTheAcceptReplaced: a write that lands while
// an accepted consolidation records a file is either replaced by the
// accept (and is what a rewind puts back) or comes after it; a rewind
// never puts back a version the accept did not replace.
func TestAcceptUndoRestoresWhatTheAcceptReplaced(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := tree(t, 1, now0.Add(-time.Hour))
	target := autoDir + "/ci.md"
	require.NoError(t, afero.WriteFile(fsys, target, []byte("---\nname: CI\ndescription: c\ntype: project\n---\nGreen.\n"), 0o644))
	rfs := racefs.New(fsys, target, func() error {
		_, err := mustDir(t, fsys, autoDir).Gate().WriteFile(context.Background(), target, []byte("a user's edit\n"), 0o644)
		return err
	})
	history, err := filehistory.NewTracker(rfs, cfgHome, "dream-runs", filehistory.Options{})
	require.NoError(t, err)
	const stage = "/c/projects/-work-shop/stage"
	model := llmtest.New(
		llmtest.ToolUse("1", "Read", map[string]any{"file_path": stage + "/ci.md"}),
		llmtest.ToolUse("2", "Write", map[string]any{"file_path": stage + "/ci.md", "content": "---\nname: CI\ndescription: c\ntype: project\n---\nGreen, always.\n"}),
		llmtest.Text("Done."),
	)
	dir, err := memdir.NewDir(fsys, autoDir, memdir.DirOptions{})
	require.NoError(t, err)
	d, err := New(dir, model, Options{ConfigHome: cfgHome, OriginalCwd: cwd, SessionID: current, History: history,
		Now: clock.Now, Lock: LockOptions{PID: 4242, Alive: func(int) bool { return true }}})
	require.NoError(t, err)
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stage})
	require.NoError(t, err)
	require.Len(t, st.Changes, 1)
	require.NoError(t, st.Accept(ctx))
	require.True(t, rfs.Ran(), "the concurrent write ran")
	require.NoError(t, rfs.Wait())

	read := func() string { b, _ := afero.ReadFile(fsys, target); return string(b) }
	replaced := "---\nname: CI\ndescription: c\ntype: project\n---\nGreen.\n"
	if read() != "a user's edit\n" {
		replaced = "a user's edit\n" // it landed first: the accept replaced it
	}
	_, err = history.Rewind(ctx, st.Checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, replaced, read(), "the rewind puts back exactly what the accept replaced")
}
