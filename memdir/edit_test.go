package memdir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/secrets"
)

// writtenTexts is what CheckToolCall scans: the file as the call would
// leave it, so a secret split over two edits is seen whole.
func TestWrittenTexts(t *testing.T) {
	writtenTexts := func(fsys afero.Fs, abs string, call llm.ToolCall) []string {
		in, err := decodeCall(call)
		require.NoError(t, err)
		return in.writtenTexts(fsys, abs)
	}
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/m/a.md", []byte("one two three"), 0o644))
	call := func(name string, input map[string]any) llm.ToolCall {
		return llm.ToolCall{Name: name, Input: js(input)}
	}

	assert.Equal(t, []string{"new"}, writtenTexts(fsys, "/m/a.md", call("Write", map[string]any{"file_path": "/m/a.md", "content": "new"})))
	assert.Equal(t, []string{"cell"}, writtenTexts(fsys, "/m/a.ipynb", call("NotebookEdit", map[string]any{"new_source": "cell"})))
	assert.Equal(t, []string{"one 2 three"}, writtenTexts(fsys, "/m/a.md", call("Edit", map[string]any{"old_string": "two", "new_string": "2"})))
	multi := call("MultiEdit", map[string]any{"edits": []any{
		map[string]any{"old_string": "one", "new_string": "gh"},
		map[string]any{"old_string": " two", "new_string": "p_"},
	}})
	assert.Equal(t, []string{"ghp_ three"}, writtenTexts(fsys, "/m/a.md", multi))
	assert.Equal(t, []string{"x"}, writtenTexts(fsys, "/m/a.md", call("Edit", map[string]any{"old_string": "absent", "new_string": "x"})),
		"edits that do not apply: every new string on its own")
	assert.Equal(t, []string{"x"}, writtenTexts(fsys, "/m/missing.md", call("Edit", map[string]any{"old_string": "a", "new_string": "x"})))
	assert.Nil(t, writtenTexts(fsys, "/m/a.md", call("Read", map[string]any{"file_path": "/m/a.md"})))
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

// teamOnlyHandles are the two handles a host that syncs only the team
// directory checks its tool calls on: the team view of its memory
// directory, and a Dir made on the team directory itself.
func teamOnlyHandles(t *testing.T, fsys afero.Fs) map[string]*Dir {
	t.Helper()
	whole, err := NewDir(fsys, "/m", DirOptions{})
	require.NoError(t, err)
	view, err := whole.Sub(TeamDirName)
	require.NoError(t, err)
	own, err := NewDir(fsys, "/m/team", DirOptions{Team: true})
	require.NoError(t, err)
	return map[string]*Dir{"view": view, "own": own}
}

// TestCheckToolCallTeamOnly: a host that syncs only the team directory
// puts CheckToolCall in front of its own Write, Edit, MultiEdit and
// NotebookEdit tools, on the team view or a team Dir; a credential or a
// path that names the team directory and leaves it is refused, and what
// does not name the team directory passes.
func TestCheckToolCallTeamOnly(t *testing.T) {
	for name, d := range teamOnlyHandles(t, afero.NewMemMapFs()) {
		t.Run(name, func(t *testing.T) {
			call := func(tool string, kv ...string) llm.ToolCall {
				in := map[string]any{}
				for i := 0; i+1 < len(kv); i += 2 {
					in[kv[i]] = kv[i+1]
				}
				return llm.ToolCall{Name: tool, Input: js(in)}
			}
			token := fakeToken()
			err := d.CheckToolCall(call("Write", "file_path", "/m/team/ci.md", "content", "use token "+token))
			var se *secrets.Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "github-pat", se.RuleID)
			assert.Contains(t, err.Error(), "GitHub PAT")
			assert.NotContains(t, err.Error(), token)

			assert.NoError(t, d.CheckToolCall(call("Edit", "file_path", "/m/team/ci.md", "old_string", token, "new_string", "removed")), "an edit that removes a secret is fine")
			assert.ErrorIs(t, d.CheckToolCall(call("Edit", "file_path", "/m/team/ci.md", "old_string", "x", "new_string", token)), secrets.ErrFound)
			assert.ErrorIs(t, d.CheckToolCall(call("NotebookEdit", "notebook_path", "/m/team/n.ipynb", "new_source", token)), secrets.ErrFound)

			assert.NoError(t, d.CheckToolCall(call("Write", "file_path", "/m/private.md", "content", token)), "outside the team directory: the host's business")
			var pte *PathTraversalError
			for _, p := range []string{"/m/team/../team-evil/x.md", "/m/team/../../../../root/.bashrc", "/m/team-evil/x.md", "/m/team.bak/x.md", "/m/team/../x.md"} {
				assert.ErrorAs(t, d.CheckToolCall(call("Write", "file_path", p, "content", "x")), &pte, "%s names the team directory and leaves it", p)
			}
			for _, p := range []string{"/m/teammates.md", "/m/team_notes.md", "/elsewhere/team/x.md", "/m/notes/team-x/y.md"} {
				assert.NoError(t, d.CheckToolCall(call("Write", "file_path", p, "content", "x")), "%s is not the team directory", p)
			}
		})
	}
	// A filesystem that cannot say where a path leads refuses: the view
	// cannot be made, and the team Dir refuses the write.
	broken := errFs{afero.NewMemMapFs()}
	whole, err := NewDir(broken, "/m", DirOptions{})
	require.NoError(t, err)
	var pte *PathTraversalError
	_, err = whole.Sub(TeamDirName)
	assert.ErrorAs(t, err, &pte)
	own, err := NewDir(broken, "/m/team", DirOptions{Team: true})
	require.NoError(t, err)
	err = own.CheckToolCall(llm.ToolCall{Name: "Write", Input: js(map[string]any{"file_path": "/m/team/x.md", "content": "x"})})
	assert.ErrorAs(t, err, &pte)
}

// errFs fails Lstat with an unexpected error, to check the fail-closed rule.
type errFs struct{ afero.Fs }

func (errFs) LstatIfPossible(string) (os.FileInfo, bool, error) {
	return nil, true, &os.PathError{Op: "lstat", Path: "/x", Err: errors.New("device on fire")}
}

func TestCheckToolCallTeamOnlyMultiEditAndFinalContent(t *testing.T) {
	fsys := afero.NewMemMapFs()
	token := fakeToken()
	multi := func(edits ...map[string]any) llm.ToolCall {
		list := make([]any, len(edits))
		for i, e := range edits {
			list[i] = e
		}
		return llm.ToolCall{Name: "MultiEdit", Input: js(map[string]any{"file_path": "/m/team/ci.md", "edits": list})}
	}
	edit := func(path, old, new string) llm.ToolCall {
		return llm.ToolCall{Name: "Edit", Input: js(map[string]any{"file_path": path, "old_string": old, "new_string": new})}
	}
	for name, d := range teamOnlyHandles(t, fsys) {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, fsys.RemoveAll("/m/team"))
			err := d.CheckToolCall(multi(map[string]any{"old_string": "a", "new_string": "b"}, map[string]any{"old_string": "c", "new_string": "key " + token}))
			assert.ErrorIs(t, err, secrets.ErrFound, "MultiEdit is a write tool")

			// A token split over two edits only exists in the final content.
			require.NoError(t, afero.WriteFile(fsys, "/m/team/ci.md", []byte("token: HEAD-TAIL\n"), 0o644))
			half := len(token) / 2
			err = d.CheckToolCall(multi(map[string]any{"old_string": "HEAD", "new_string": token[:half]}, map[string]any{"old_string": "-TAIL", "new_string": token[half:]}))
			assert.ErrorIs(t, err, secrets.ErrFound, "the file after the edits holds a token")
			assert.NoError(t, d.CheckToolCall(edit("/m/team/ci.md", "HEAD-", token[:half])), "half a token is no token")

			// An edit that removes a secret already in the file passes.
			require.NoError(t, afero.WriteFile(fsys, "/m/team/old.md", []byte("key "+token+"\n"), 0o644))
			assert.NoError(t, d.CheckToolCall(edit("/m/team/old.md", token, "[rotated]")))

			// A host whose tools have other names gives the call the name of
			// the Claude Code tool it stands for; under its own name it is not
			// a write this check knows.
			create := func(name string) llm.ToolCall {
				return llm.ToolCall{Name: name, Input: js(map[string]any{"file_path": "/m/team/x.md", "content": token})}
			}
			assert.NoError(t, d.CheckToolCall(create("create_file")))
			assert.ErrorIs(t, d.CheckToolCall(create("Write")), secrets.ErrFound)
		})
	}
}
