package teammem

import (
	"errors"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/secrets"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteGuard(t *testing.T) {
	fsys := afero.NewMemMapFs()
	g := NewWriteGuard("/m/team/")
	token := fakeGitHubToken()

	err := g.Check(fsys, call("Write", "file_path", "/m/team/ci.md", "content", "use token "+token))
	var se *secrets.Error
	require.ErrorAs(t, err, &se)
	assert.True(t, errors.Is(err, secrets.ErrFound))
	assert.Equal(t, "github-pat", se.RuleID)
	assert.Contains(t, err.Error(), "GitHub PAT")
	assert.NotContains(t, err.Error(), token)

	err = g.Check(fsys, call("Edit", "file_path", "/m/team/ci.md", "old_string", token, "new_string", "removed"))
	assert.NoError(t, err, "an edit that removes a secret is fine")
	err = g.Check(fsys, call("Edit", "file_path", "/m/team/ci.md", "old_string", "x", "new_string", token))
	assert.ErrorIs(t, err, secrets.ErrFound)
	err = g.Check(fsys, call("NotebookEdit", "notebook_path", "/m/team/n.ipynb", "new_source", token))
	assert.ErrorIs(t, err, secrets.ErrFound)

	// Outside the team dir the guard stays out of the way.
	assert.NoError(t, g.Check(fsys, call("Write", "file_path", "/m/private.md", "content", token)))
	// A team write with a hostile path is refused before scanning.
	var pte *PathTraversalError
	for _, p := range []string{"/m/team/../team-evil/x.md", "/m/team/../../../../root/.bashrc", "/m/team-evil/x.md", "/m/team.bak/x.md", "/m/team/../x.md"} {
		err = g.Check(fsys, call("Write", "file_path", p, "content", "x"))
		assert.ErrorAs(t, err, &pte, "%s names the team directory and leaves it", p)
	}
	for _, p := range []string{"/m/teammates.md", "/m/team_notes.md", "/elsewhere/team/x.md", "/m/notes/team-x/y.md"} {
		assert.NoError(t, g.Check(fsys, call("Write", "file_path", p, "content", "x")), "%s is not the team directory", p)
	}
	err = g.Check(errFs{afero.NewMemMapFs()}, call("Write", "file_path", "/m/team/x.md", "content", "x"))
	assert.ErrorAs(t, err, &pte)
}

// fakeGitHubToken is a made-up token in GitHub's PAT format, built at run
// time so that no scanner flags this file.
func fakeGitHubToken() string {
	const alnum = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	return "gh" + "p_" + alnum[:36]
}

func TestWriteGuardMultiEditAndFinalContent(t *testing.T) {
	fsys := afero.NewMemMapFs()
	g := NewWriteGuard("/m/team/")
	token := fakeGitHubToken()
	multi := func(edits ...map[string]any) llm.ToolCall {
		list := make([]any, len(edits))
		for i, e := range edits {
			list[i] = e
		}
		return llm.ToolCall{Name: "MultiEdit", Input: js(map[string]any{"file_path": "/m/team/ci.md", "edits": list})}
	}
	err := g.Check(fsys, multi(map[string]any{"old_string": "a", "new_string": "b"}, map[string]any{"old_string": "c", "new_string": "key " + token}))
	assert.ErrorIs(t, err, secrets.ErrFound, "MultiEdit is a write tool by default")

	// A token split over two edits only exists in the final content.
	require.NoError(t, afero.WriteFile(fsys, "/m/team/ci.md", []byte("token: HEAD-TAIL\n"), 0o644))
	half := len(token) / 2
	err = g.Check(fsys, multi(map[string]any{"old_string": "HEAD", "new_string": token[:half]}, map[string]any{"old_string": "-TAIL", "new_string": token[half:]}))
	assert.ErrorIs(t, err, secrets.ErrFound, "the file after the edits holds a token")
	err = g.Check(fsys, call("Edit", "file_path", "/m/team/ci.md", "old_string", "HEAD-", "new_string", token[:half]))
	assert.NoError(t, err, "half a token is no token")

	// An edit that removes a secret already in the file passes.
	require.NoError(t, afero.WriteFile(fsys, "/m/team/old.md", []byte("key "+token+"\n"), 0o644))
	assert.NoError(t, g.Check(fsys, call("Edit", "file_path", "/m/team/old.md", "old_string", token, "new_string", "[rotated]")))

	// Host tool names are configurable.
	custom := &WriteGuard{Detector: ToolDetector{TeamDir: "/m/team/", Names: ToolNames{Write: []string{"create_file"}, Edit: []string{"str_replace"}}}}
	assert.ErrorIs(t, custom.Check(fsys, call("create_file", "file_path", "/m/team/x.md", "content", token)), secrets.ErrFound)
	assert.NoError(t, custom.Check(fsys, call("Write", "file_path", "/m/team/x.md", "content", token)), "not a write tool of this host")
}
