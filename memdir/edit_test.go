package memdir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/secrets"
)

func TestApplyEdits(t *testing.T) {
	got, err := ApplyEdits("a b a", []Edit{{Old: "b", New: "c"}, {Old: "a", New: "x", All: true}})
	require.NoError(t, err)
	assert.Equal(t, "x c x", got, "each edit sees the text the ones before it left")

	_, err = ApplyEdits("a b a", []Edit{{Old: "b", New: "c"}, {Old: "a", New: "x"}})
	var ee *EditError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, EditError{Index: 1, Count: 2}, *ee, "ambiguous without All")
	_, err = ApplyEdits("a", []Edit{{Old: "z", New: "y"}})
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, EditError{Index: 0, Count: 0}, *ee)
	_, err = ApplyEdits("a", []Edit{{Old: "", New: "y"}})
	assert.ErrorAs(t, err, &ee, "an empty old_string never applies")
}

// WrittenTexts is what a guard scans: the file as the call would leave
// it, so a secret split over two edits is seen whole.
func TestWrittenTexts(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/m/a.md", []byte("one two three"), 0o644))
	call := func(name string, input map[string]any) llm.ToolCall {
		return llm.ToolCall{Name: name, Input: js(input)}
	}

	assert.Equal(t, []string{"new"}, WrittenTexts(fsys, "/m/a.md", call("Write", map[string]any{"file_path": "/m/a.md", "content": "new"})))
	assert.Equal(t, []string{"cell"}, WrittenTexts(fsys, "/m/a.ipynb", call("NotebookEdit", map[string]any{"new_source": "cell"})))
	assert.Equal(t, []string{"one 2 three"}, WrittenTexts(fsys, "/m/a.md", call("Edit", map[string]any{"old_string": "two", "new_string": "2"})))
	multi := call("MultiEdit", map[string]any{"edits": []any{
		map[string]any{"old_string": "one", "new_string": "gh"},
		map[string]any{"old_string": " two", "new_string": "p_"},
	}})
	assert.Equal(t, []string{"ghp_ three"}, WrittenTexts(fsys, "/m/a.md", multi))
	assert.Equal(t, []string{"x"}, WrittenTexts(fsys, "/m/a.md", call("Edit", map[string]any{"old_string": "absent", "new_string": "x"})),
		"edits that do not apply: every new string on its own")
	assert.Equal(t, []string{"x"}, WrittenTexts(fsys, "/m/missing.md", call("Edit", map[string]any{"old_string": "a", "new_string": "x"})))
	assert.Nil(t, WrittenTexts(fsys, "/m/a.md", call("Read", map[string]any{"file_path": "/m/a.md"})))
}

func TestCheckToolCall(t *testing.T) {
	mem, outside := diskMemory(t)
	require.NoError(t, os.Symlink(outside, filepath.Join(mem, "out")))
	d, err := NewDir(afero.NewOsFs(), mem, DirOptions{})
	require.NoError(t, err)
	write := func(path, content string) llm.ToolCall {
		return llm.ToolCall{Name: "Write", Input: js(map[string]any{"file_path": path, "content": content})}
	}
	var pte *PathTraversalError
	assert.NoError(t, d.CheckToolCall(write("/elsewhere/x.go", fakeToken())), "not the memory directory: the host's business")
	assert.NoError(t, d.CheckToolCall(write(filepath.Join(mem, "notes.md"), fakeToken())), "private memory that is not synced")
	assert.ErrorAs(t, d.CheckToolCall(write(mem+"/../outside/x.md", "x")), &pte, "names the directory, leaves it")
	assert.ErrorAs(t, d.CheckToolCall(write(filepath.Join(mem, "out", "x.md"), "x")), &pte, "a link out")
	assert.ErrorIs(t, d.CheckToolCall(write(filepath.Join(mem, TeamDirName, "ci.md"), fakeToken())), secrets.ErrFound)
	assert.ErrorAs(t, d.CheckToolCall(write(filepath.Join(mem, "team-evil", "ci.md"), "x")), &pte, "a lookalike of the team directory")
	assert.ErrorAs(t, d.CheckToolCall(write(filepath.Join(mem, "team.bak", "ci.md"), "x")), &pte)
	assert.NoError(t, d.CheckToolCall(write(filepath.Join(mem, "teamwork.md"), "x")), "a file whose name starts like it is not a folder")
	assert.NoError(t, d.CheckToolCall(llm.ToolCall{Name: "Read", Input: js(map[string]any{"file_path": filepath.Join(mem, "out", "x.md")})}), "only writes are checked")

	require.NoError(t, os.WriteFile(filepath.Join(mem, TeamDirName, "ci.md"), []byte("CI token: TBD later"), 0o644))
	half := len(fakeToken()) / 2
	split := llm.ToolCall{Name: "MultiEdit", Input: js(map[string]any{"file_path": filepath.Join(mem, TeamDirName, "ci.md"), "edits": []any{
		map[string]any{"old_string": "TBD", "new_string": fakeToken()[:half]},
		map[string]any{"old_string": " later", "new_string": fakeToken()[half:]},
	}})}
	assert.ErrorIs(t, d.CheckToolCall(split), secrets.ErrFound, "a token split over two edits is seen whole")

	synced, err := NewDir(afero.NewOsFs(), mem, DirOptions{Synced: true})
	require.NoError(t, err)
	assert.ErrorIs(t, synced.CheckToolCall(write(filepath.Join(mem, "notes.md"), fakeToken())), secrets.ErrFound)
}

// js is a tool input as a model sends it.
func js(in map[string]any) json.RawMessage {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return b
}
