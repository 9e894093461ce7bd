package storesync

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFolderClashes(t *testing.T) {
	set := func(ps ...string) map[string]bool {
		out := map[string]bool{}
		for _, p := range ps {
			out[p] = true
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		paths map[string]bool
		local map[string]*localFile
		want  map[string]string
	}{
		{"no clash", set("/a.md", "/a.mdx/b.md", "/dir/b.md"), nil, map[string]string{}},
		{"both only in the store: both left", set("/clash.md", "/clash.md/inner.md"), nil,
			map[string]string{"/clash.md": "/clash.md/inner.md", "/clash.md/inner.md": "/clash.md"}},
		{"the file is here: the path below it is left", set("/clash.md", "/clash.md/inner.md"), map[string]*localFile{"/clash.md": {}},
			map[string]string{"/clash.md/inner.md": "/clash.md"}},
		{"the path below is here: the file is left", set("/clash.md", "/clash.md/inner.md"), map[string]*localFile{"/clash.md/inner.md": {}},
			map[string]string{"/clash.md": "/clash.md/inner.md"}},
		{"deeper", set("/a", "/a/b/c.md"), nil, map[string]string{"/a": "/a/b/c.md", "/a/b/c.md": "/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, folderClashes(tc.paths, tc.local))
		})
	}
}
