package sessionmem

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/racefs"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// TestUpdateUndoRestoresWhatTheUpdateReplaced: a write that lands while
// a summary update records the file is either replaced by the update
// (and is what a rewind puts back) or comes after it; a rewind never puts
// back a version the update did not replace.
func TestUpdateUndoRestoresWhatTheUpdateReplaced(t *testing.T) {
	model := llmtest.New()
	var history *filehistory.Tracker
	var rfs *racefs.Fs
	const elsewhere = "\nA note written elsewhere.\n"
	tr, fsys, events := newTracker(t, model, func(c *Options, fsys afero.Fs) {
		path := SummaryPath(c.ConfigHome, c.Cwd, c.SessionID)
		require.NoError(t, fsys.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, afero.WriteFile(fsys, path, []byte(defaultTemplate), 0o600))
		rfs = racefs.New(fsys, path, func() error {
			d, err := memdir.NewDir(fsys, filepath.Dir(path), memdir.DirOptions{})
			if err != nil {
				return err
			}
			_, err = d.Gate().WriteFile(context.Background(), path, []byte(defaultTemplate+elsewhere), 0o600)
			return err
		})
		var err error
		history, err = filehistory.NewTracker(rfs, "/history", "summary", filehistory.Options{})
		require.NoError(t, err)
		c.History = history
	})
	model.Add(
		editStep(tr.Path(), "_A short title for what this session is about._\n", "_A short title for what this session is about._\nRefund retries\n"),
		llmtest.Text("updated"),
	)
	conv := append(msgs(1, false), llm.Message{ID: "u2", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("retry refunds on timeout")}})
	conv = append(conv, llm.Message{ID: "a9", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}})
	require.True(t, tr.Observe(context.Background(), Observation{ContextTokens: 12_000, Messages: conv}))
	require.True(t, tr.WaitForUpdate(context.Background()))
	require.True(t, rfs.Ran(), "the concurrent write ran")
	require.NoError(t, rfs.Wait())

	var checkpoint string
	for _, ev := range *events {
		if ev.Kind == EventFinished {
			checkpoint = ev.Checkpoint
		}
	}
	require.NotEmpty(t, checkpoint)
	read := func() string { b, _ := afero.ReadFile(fsys, tr.Path()); return string(b) }
	replaced := defaultTemplate
	if read() != defaultTemplate+elsewhere {
		replaced = defaultTemplate + elsewhere // it landed first: the update replaced it
	}
	_, err := history.Rewind(context.Background(), checkpoint, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Equal(t, replaced, read(), "the rewind puts back exactly what the update replaced")
}
