package memdir

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"
)

// settle dates every folder below dir an hour back, as if the last save
// or sync was long ago, so its listing may be kept.
func settle(t *testing.T, dir string) {
	t.Helper()
	past := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chtimes(p, past, past)
		}
		return err
	}))
}

func TestTeamListingSeesEveryChangeOnDisk(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewOsFs()
	team := filepath.Join(t.TempDir(), "team")
	write := func(rel string) {
		p := filepath.Join(team, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	list := func() []string {
		names, err := teamFileNames(ctx, fsys, team)
		require.NoError(t, err)
		return append([]string(nil), names...)
	}
	write("a.md")
	write("sub/b.md")
	settle(t, team)
	require.Equal(t, []string{"a.md", "sub/b.md"}, list())
	require.True(t, cached(team), "a settled listing is kept")
	require.Equal(t, []string{"a.md", "sub/b.md"}, list(), "served from the cache")

	write("c.md") // the folder's mtime moves to now
	require.Equal(t, []string{"a.md", "c.md", "sub/b.md"}, list())
	require.False(t, cached(team), "a folder changed this second is not kept")
	write("d.md") // same second: the fresh folder was not kept, so this shows too
	require.Equal(t, []string{"a.md", "c.md", "d.md", "sub/b.md"}, list())

	settle(t, team)
	list()
	write("sub/e.md") // a change below a subfolder
	require.Equal(t, []string{"a.md", "c.md", "d.md", "sub/b.md", "sub/e.md"}, list())

	settle(t, team)
	list()
	require.NoError(t, os.Remove(filepath.Join(team, "a.md")))
	require.Equal(t, []string{"c.md", "d.md", "sub/b.md", "sub/e.md"}, list())

	// A subfolder swapped for another one, dated the same: a new folder.
	settle(t, team)
	list()
	other := filepath.Join(filepath.Dir(team), "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "z.md"), []byte("x"), 0o644))
	info, err := os.Stat(filepath.Join(team, "sub"))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(team, "sub")))
	require.NoError(t, os.Rename(other, filepath.Join(team, "sub")))
	for _, d := range []string{team, filepath.Join(team, "sub")} {
		require.NoError(t, os.Chtimes(d, info.ModTime(), info.ModTime()))
	}
	require.Equal(t, []string{"c.md", "d.md", "sub/z.md"}, list())

	// A team folder that goes away lists nothing and is not an error to
	// the prompt.
	require.NoError(t, os.RemoveAll(team))
	_, err = teamFileNames(ctx, fsys, team)
	require.Error(t, err)
}

func TestTeamListingIsSortedWithFoldersAndDashes(t *testing.T) {
	for _, fsys := range []afero.Fs{afero.NewOsFs(), afero.NewMemMapFs()} {
		team := filepath.Join(t.TempDir(), "team")
		for _, rel := range []string{"a/x.md", "a-b.md", "b.md"} {
			require.NoError(t, fsys.MkdirAll(filepath.Dir(filepath.Join(team, rel)), 0o755))
			require.NoError(t, afero.WriteFile(fsys, filepath.Join(team, rel), []byte("x"), 0o644))
		}
		if _, disk := fsys.(*afero.OsFs); disk {
			settle(t, team)
		}
		for range 2 {
			names, err := teamFileNames(context.Background(), fsys, team)
			require.NoError(t, err)
			require.Equal(t, []string{"a-b.md", "a/x.md", "b.md"}, names)
		}
	}
}

func cached(dir string) bool {
	listingCache.Lock()
	defer listingCache.Unlock()
	c, ok := listingCache.byDir[dir]
	return ok && c.unchanged()
}
