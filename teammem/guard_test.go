package teammem

import (
	"errors"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteGuard(t *testing.T) {
	fsys := afero.NewMemMapFs()
	g := NewWriteGuard("/m/team/")
	token := fakeGitHubToken()

	err := g.Check(fsys, call("Write", "file_path", "/m/team/ci.md", "content", "use token "+token))
	var se *SecretError
	require.ErrorAs(t, err, &se)
	assert.True(t, errors.Is(err, ErrSecret))
	assert.Equal(t, "github-pat", se.RuleID)
	assert.Contains(t, err.Error(), "GitHub PAT")
	assert.NotContains(t, err.Error(), token)

	err = g.Check(fsys, call("Edit", "file_path", "/m/team/ci.md", "old_string", token, "new_string", "removed"))
	assert.NoError(t, err, "an edit that removes a secret is fine")
	err = g.Check(fsys, call("Edit", "file_path", "/m/team/ci.md", "old_string", "x", "new_string", token))
	assert.ErrorIs(t, err, ErrSecret)
	err = g.Check(fsys, call("NotebookEdit", "notebook_path", "/m/team/n.ipynb", "new_source", token))
	assert.ErrorIs(t, err, ErrSecret)

	// Outside the team dir the guard stays out of the way.
	assert.NoError(t, g.Check(fsys, call("Write", "file_path", "/m/private.md", "content", token)))
	// A team write with a hostile path is refused before scanning.
	err = g.Check(fsys, call("Write", "file_path", "/m/team/../team-evil/x.md", "content", "x"))
	assert.NoError(t, err, "not a team path at all once cleaned")
	err = g.Check(errFs{afero.NewMemMapFs()}, call("Write", "file_path", "/m/team/x.md", "content", "x"))
	var pte *PathTraversalError
	assert.ErrorAs(t, err, &pte)
}

// fakeGitHubToken is a made-up token in GitHub's PAT format, built at run
// time so that no scanner flags this file.
func fakeGitHubToken() string {
	const alnum = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	return "gh" + "p_" + alnum[:36]
}
