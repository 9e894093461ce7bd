package fswalk

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWalk(t *testing.T) {
	disk := t.TempDir()
	for name, fsys := range map[string]afero.Fs{"mem": afero.NewMemMapFs(), "os": afero.NewOsFs()} {
		t.Run(name, func(t *testing.T) {
			root := "/r"
			if name == "os" {
				root = filepath.Join(disk, "r")
			}
			for _, p := range []string{"b/x.md", "a.md", "b/c/y.md"} {
				require.NoError(t, fsys.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
				require.NoError(t, afero.WriteFile(fsys, filepath.Join(root, p), []byte("x"), 0o644))
			}
			if name == "os" {
				require.NoError(t, os.Symlink(disk, filepath.Join(root, "link")))
			}
			var got []string
			err := Walk(context.Background(), fsys, root, func(e Entry) error {
				assert.Equal(t, filepath.Join(root, e.Rel), e.Abs)
				suffix := ""
				switch {
				case e.Type.IsDir():
					suffix = "/"
				case e.Type&os.ModeSymlink != 0:
					suffix = "@"
				}
				got = append(got, e.Rel+suffix)
				return nil
			})
			require.NoError(t, err)
			want := []string{"a.md", "b/", "b/c/", "b/c/y.md", "b/x.md"}
			if name == "os" {
				want = append(want, "link@")
			}
			assert.Equal(t, want, got)

			// WalkAnyOrder meets the same entries, each below its folder.
			var seen []string
			require.NoError(t, WalkAnyOrder(context.Background(), fsys, root, func(e Entry) error {
				assert.Equal(t, filepath.Join(root, e.Rel), e.Abs)
				if e.Type.IsDir() {
					seen = append(seen, e.Rel+"/")
				} else if e.Type&os.ModeSymlink != 0 {
					seen = append(seen, e.Rel+"@")
				} else {
					if dir := path.Dir(e.Rel); dir != "." {
						assert.Contains(t, seen, dir+"/", "a folder's entries come after it")
					}
					seen = append(seen, e.Rel)
				}
				return nil
			}))
			assert.ElementsMatch(t, want, seen)
		})
	}
	stop := errors.New("stop")
	err := Walk(context.Background(), afero.NewOsFs(), disk, func(Entry) error { return stop })
	assert.ErrorIs(t, err, stop)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, Walk(ctx, afero.NewOsFs(), disk, func(Entry) error { return nil }), context.Canceled)
	assert.Error(t, Walk(context.Background(), afero.NewMemMapFs(), "/missing", func(Entry) error { return nil }))
}
