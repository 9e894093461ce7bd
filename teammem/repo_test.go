package teammem

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRepoRemote(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/acme/shop":       "acme/shop",
		"https://github.com/acme/shop.git":   "acme/shop",
		"https://github.com/acme/shop/":      "acme/shop",
		"git@github.com:acme/shop.git":       "acme/shop",
		"git@github.com:acme/shop":           "acme/shop",
		"ssh://git@github.com/acme/shop":     "acme/shop",
		"ssh://git@github.com/acme/shop.git": "acme/shop",
		"https://GitHub.com/Acme/my.repo":    "Acme/my.repo",
		"  https://github.com/a/b \n":        "a/b",
	} {
		got, err := ParseRepoRemote(in, nil)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{
		"https://gitlab.com/acme/shop", "git@gitlab.com:acme/shop.git", "https://github.com/acme", "https://github.com/acme/shop/tree/main",
		"https://user:pass@github.com/acme/shop", "file:///srv/git/shop", "/srv/git/shop", "https://github.com/../etc",
		"https://github.com/acme/shop?x=1", "ftp://github.com/acme/shop", "", "github.com/acme/shop", "git@github.com:acme/a/b",
	} {
		_, err := ParseRepoRemote(in, nil)
		assert.ErrorIs(t, err, ErrUnsupportedRemote, "%q", in)
	}
	got, err := ParseRepoRemote("git@git.example.com:team/app.git", []string{"git.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "team/app", got)
}

func TestRepoFromGitConfig(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "repo", ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "repo", "pkg"), 0o755))
	config := "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://github.com/other/x\n[remote \"origin\"]\n\turl = git@github.com:acme/shop.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "repo", ".git", "config"), []byte(config), 0o644))
	got, err := RepoFromGitConfig(afero.NewOsFs(), filepath.Join(root, "repo", "pkg"), nil)
	require.NoError(t, err)
	assert.Equal(t, "acme/shop", got)
	_, err = RepoFromGitConfig(afero.NewOsFs(), t.TempDir(), nil)
	assert.ErrorIs(t, err, ErrUnsupportedRemote)
}
