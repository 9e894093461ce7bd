package dream

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
)

// mergeIn scripts a consolidation of dir: it merges two memories into one
// (reading both first), points the index at it, and writes a new one.
func mergeIn(dir string) *llmtest.Model {
	return llmtest.New(
		llmtest.ToolUse("1", "Read", map[string]any{"file_path": dir + "/deploys.md"}),
		llmtest.ToolUse("2", "Edit", map[string]any{"file_path": dir + "/deploys.md", "old_string": "Tuesdays.", "new_string": "Tuesdays and Thursdays."}),
		llmtest.ToolUse("3", "Read", map[string]any{"file_path": dir + "/MEMORY.md"}),
		llmtest.ToolUse("4", "Write", map[string]any{"file_path": dir + "/MEMORY.md", "content": "- [Deploys](deploys.md) — Tuesdays and Thursdays\n- [Ports](ports.md) — staging 8443\n"}),
		llmtest.ToolUse("5", "Write", map[string]any{"file_path": dir + "/ports.md", "content": "---\nname: Ports\ndescription: staging 8443\ntype: project\n---\nStaging listens on 8443.\n"}),
		llmtest.Text("Merged."),
	)
}

func seeded(t *testing.T) afero.Fs {
	fsys := tree(t, 1, now0.Add(-time.Hour))
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/MEMORY.md", []byte("- [Deploys](deploys.md) — Tuesdays\n"), 0o644))
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/deploys.md", []byte("---\nname: Deploys\ndescription: Tuesdays\ntype: project\n---\nDeploys on Tuesdays.\n"), 0o644))
	return fsys
}

func memoryTree(t *testing.T, fsys afero.Fs) map[string][]byte {
	m, err := snapshotTree(context.Background(), fsys, autoDir)
	require.NoError(t, err)
	return m
}

// TestStagedAcceptEqualsInPlace: accepting a staged consolidation leaves
// the memory directory exactly as the same consolidation in place does,
// and the directory is untouched until then.
func TestStagedAcceptEqualsInPlace(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}

	inPlace := seeded(t)
	out := newDreamer(t, inPlace, mergeIn(autoDir), clock, nil).Force(ctx)
	require.NoError(t, out.Err)
	want := memoryTree(t, inPlace)

	fsys := seeded(t)
	original := memoryTree(t, fsys)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	st, err := newDreamer(t, fsys, mergeIn(stageDir), clock, nil).ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Outcome.Err)
	assert.Equal(t, original, memoryTree(t, fsys), "nothing changes before Accept")
	kinds := map[string]ChangeKind{}
	for _, c := range st.Changes {
		kinds[c.Rel] = c.Kind
	}
	assert.Equal(t, map[string]ChangeKind{"MEMORY.md": Changed, "deploys.md": Changed, "ports.md": Added}, kinds)

	require.NoError(t, st.Accept(ctx))
	assert.Equal(t, want, memoryTree(t, fsys), "accept = in place")
	exists, _ := afero.Exists(fsys, stageDir)
	assert.False(t, exists, "the copy is removed")
}

func TestStagedDiscardChangesNothing(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	original := memoryTree(t, fsys)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	d := newDreamer(t, fsys, mergeIn(stageDir), clock, nil)
	before, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	clock.Advance(48 * time.Hour)
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.Len(t, st.Changes, 3)
	stamped, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.NotEqual(t, before.Unix(), stamped.Unix(), "the run stamps the lock while the stage waits")
	require.NoError(t, st.Discard())
	assert.Equal(t, original, memoryTree(t, fsys))
	exists, _ := afero.Exists(fsys, stageDir)
	assert.False(t, exists)
	last, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.Equal(t, before.Unix(), last.Unix(), "a rejected consolidation does not count: the lock is rolled back")
}

func TestStagedAcceptKeepsTheLockStamp(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	d := newDreamer(t, fsys, mergeIn(stageDir), clock, nil)
	clock.Advance(48 * time.Hour)
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Accept(ctx))
	require.NoError(t, st.Discard(), "a second call after Accept changes nothing")
	last, err := d.Lock().LastConsolidation()
	require.NoError(t, err)
	assert.Equal(t, clock.Now().Unix(), last.Unix(), "an accepted consolidation counts")
}

func TestStagedAcceptRefusesAStaleStage(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	st, err := newDreamer(t, fsys, mergeIn(stageDir), clock, nil).ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	// The user edits a memory while the stage waits for review.
	require.NoError(t, afero.WriteFile(fsys, autoDir+"/deploys.md", []byte("the user's edit\n"), 0o644))
	before := memoryTree(t, fsys)
	assert.ErrorIs(t, st.Accept(ctx), ErrStageStale)
	assert.Equal(t, before, memoryTree(t, fsys), "nothing applied")
	require.NoError(t, st.Discard())
}

func TestStagedAcceptCanBeRewound(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	original := memoryTree(t, fsys)
	history, err := filehistory.NewTracker(fsys, "/history", "dream", filehistory.Options{})
	require.NoError(t, err)
	stageDir := "/c/projects/-work-shop/.memory-staged"
	d := newDreamer(t, fsys, mergeIn(stageDir), clock, func(c *Options) { c.History = history })
	st, err := d.ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Accept(ctx))
	snaps := history.Snapshots()
	require.Len(t, snaps, 1, "one checkpoint, for the accept (the copy needs none)")
	_, err = history.Rewind(ctx, snaps[0].MessageID, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, original, memoryTree(t, fsys))
}

// TestStagedAcceptKeepsModes: a memory the consolidation changed keeps
// its mode, as the in-place Edit keeps it.
func TestStagedAcceptKeepsModes(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: now0}
	fsys := seeded(t)
	require.NoError(t, fsys.Chmod(autoDir+"/deploys.md", 0o600))
	stageDir := "/c/projects/-work-shop/.memory-staged"
	st, err := newDreamer(t, fsys, mergeIn(stageDir), clock, nil).ForceStaged(ctx, StageOptions{Dir: stageDir})
	require.NoError(t, err)
	require.NoError(t, st.Accept(ctx))
	info, err := fsys.Stat(autoDir + "/deploys.md")
	require.NoError(t, err)
	assert.Equal(t, "-rw-------", info.Mode().Perm().String())
}
