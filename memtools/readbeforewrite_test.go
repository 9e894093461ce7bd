package memtools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/memdir"
)

func TestReadBeforeWrite(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			a := filepath.Join(e.mem, "a.md")
			edit := m{"file_path": a, "old_string": "alpha", "new_string": "gamma"}

			_, err := run(t, e.ts, memdir.ToolEdit, edit)
			assert.ErrorContains(t, err, "has not been read yet")
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "x\n"})
			assert.ErrorContains(t, err, "has not been read yet")
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "new.md"), "content": "x\n"})
			assert.NoError(t, err, "creating a file overwrites nothing")

			// Part of the file: Edit may go on, Write may not.
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": a, "offset": 2, "limit": 1})
			require.NoError(t, err)
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "x\n"})
			assert.ErrorContains(t, err, "has not been read yet")
			_, err = run(t, e.ts, memdir.ToolEdit, edit)
			require.NoError(t, err)
			// Its own write counts as read.
			_, err = run(t, e.ts, memdir.ToolEdit, m{"file_path": a, "old_string": "gamma", "new_string": "delta"})
			require.NoError(t, err)

			// Someone else changes the file: refused, nothing lost.
			require.NoError(t, afero.WriteFile(e.fs, a, []byte("the user's version\n"), 0o644))
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "mine\n"})
			assert.ErrorContains(t, err, "has been modified since you read it")
			data, _ := afero.ReadFile(e.fs, a)
			assert.Equal(t, "the user's version\n", string(data))

			// A full read whose content still matches passes, whatever the mtime.
			_, err = run(t, e.ts, memdir.ToolRead, m{"file_path": a})
			require.NoError(t, err)
			future := time.Now().Add(time.Hour)
			require.NoError(t, e.fs.Chtimes(a, future, future))
			_, err = run(t, e.ts, memdir.ToolWrite, m{"file_path": a, "content": "mine\n"})
			assert.NoError(t, err)
		})
	}
}

func TestBlindWritesOption(t *testing.T) {
	e := envs(t)[1]
	ts, err := New(dirAt(e.fs, e.mem), Options{BlindWrites: true})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "a.md"), "content": "x\n"})
	assert.NoError(t, err)
}

// TestConcurrentWritersOneWins is the main agent's Edit and a background
// job's Write to the same memory file at the same moment, on the real
// disk: exactly one lands, the other is told "modified since read", and
// the file holds the winner's content in full.
func TestConcurrentWritersOneWins(t *testing.T) {
	e := envs(t)[1]
	a := filepath.Join(e.mem, "a.md")
	wins := map[string]int{}
	for i := range 200 {
		base := fmt.Sprintf("round %d\nshared line\n", i)
		require.NoError(t, os.WriteFile(a, []byte(base), 0o644))
		main, err := New(dirAt(e.fs, e.mem), Options{})
		require.NoError(t, err)
		job, err := New(dirAt(e.fs, e.mem), Options{})
		require.NoError(t, err)
		for _, ts := range []*Toolset{main, job} {
			_, err := run(t, ts, memdir.ToolRead, m{"file_path": a})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		var editErr, writeErr error
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, editErr = callTool(main, memdir.ToolEdit, m{"file_path": a, "old_string": "shared line", "new_string": "main agent's line"})
		}()
		go func() {
			defer wg.Done()
			<-start
			_, writeErr = callTool(job, memdir.ToolWrite, m{"file_path": a, "content": base + "background job's line\n"})
		}()
		close(start)
		wg.Wait()
		data, err := os.ReadFile(a)
		require.NoError(t, err)
		switch {
		case editErr == nil && writeErr != nil:
			assert.ErrorContains(t, writeErr, "modified since you read it")
			assert.Equal(t, fmt.Sprintf("round %d\nmain agent's line\n", i), string(data))
			wins["edit"]++
		case writeErr == nil && editErr != nil:
			assert.ErrorContains(t, editErr, "modified since you read it")
			assert.Equal(t, base+"background job's line\n", string(data))
			wins["write"]++
		default:
			t.Fatalf("round %d: edit error %v, write error %v: exactly one must win", i, editErr, writeErr)
		}
	}
	t.Logf("wins over 200 rounds: %v", wins)
}

func callTool(ts *Toolset, name string, input m) (string, error) {
	raw, _ := json.Marshal(input)
	for _, tool := range ts.Tools() {
		if tool.Spec.Name == name {
			return tool.Call(context.Background(), raw)
		}
	}
	return "", fmt.Errorf("no tool %s", name)
}

func TestChangedFiles(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			n := filepath.Join(e.mem, "note.md")
			gone := filepath.Join(e.mem, "gone.md")
			for _, p := range []string{n, gone} {
				_, err := run(t, e.ts, memdir.ToolWrite, m{"file_path": p, "content": "mine\n"})
				require.NoError(t, err)
			}
			assert.Empty(t, e.ts.ChangedFiles())
			require.NoError(t, afero.WriteFile(e.fs, n, []byte("theirs\n"), 0o644))
			require.NoError(t, e.fs.Remove(gone))
			ch := e.ts.ChangedFiles()
			require.Len(t, ch, 2)
			byPath := map[string]filehistory.Change{}
			for _, c := range ch {
				byPath[c.Path] = c
			}
			assert.Equal(t, "theirs\n", string(byPath[n].Content))
			assert.True(t, byPath[gone].Deleted)
			assert.Empty(t, e.ts.ChangedFiles(), "each change is reported once")
			// The model was told: it may edit the new content.
			_, err := run(t, e.ts, memdir.ToolEdit, m{"file_path": n, "old_string": "theirs", "new_string": "ours"})
			assert.NoError(t, err)
		})
	}
}

func TestToolsetTrackerRewindsToolWrites(t *testing.T) {
	ctx := context.Background()
	e := envs(t)[1]
	home := filepath.Join(filepath.Dir(e.mem), "home")
	tr, err := filehistory.NewTracker(e.fs, home, "s1", filehistory.Options{})
	require.NoError(t, err)
	ts, err := New(dirAt(e.fs, e.mem).WithHistory(tr), Options{})
	require.NoError(t, err)
	a := filepath.Join(e.mem, "a.md")
	before, _ := os.ReadFile(a)

	require.NoError(t, tr.MakeSnapshot(ctx, "m1"))
	_, err = run(t, ts, memdir.ToolRead, m{"file_path": a})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolEdit, m{"file_path": a, "old_string": "alpha", "new_string": "wrong"})
	require.NoError(t, err)
	_, err = run(t, ts, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "bad.md"), "content": "a wrong memory\n"})
	require.NoError(t, err)

	st, err := tr.Rewind(ctx, "m1", filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.Len(t, st.FilesChanged, 2)
	after, _ := os.ReadFile(a)
	assert.Equal(t, string(before), string(after))
	_, err = os.Stat(filepath.Join(e.mem, "bad.md"))
	assert.True(t, os.IsNotExist(err))

	// Without a snapshot the tracker refuses, and so does the write.
	tr2, _ := filehistory.NewTracker(e.fs, home, "s2", filehistory.Options{})
	ts2, _ := New(dirAt(e.fs, e.mem).WithHistory(tr2), Options{})
	_, err = run(t, ts2, memdir.ToolWrite, m{"file_path": filepath.Join(e.mem, "x.md"), "content": "x"})
	assert.ErrorContains(t, err, "could not be saved for undo")
	assert.False(t, strings.Contains(err.Error(), home), "no host path of the backup store")
}
