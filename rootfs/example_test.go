package rootfs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/rootfs"
	"github.com/spf13/afero"
)

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "rootfs")
	defer os.RemoveAll(dir)
	team := filepath.Join(dir, "team")
	_ = os.MkdirAll(team, 0o755)
	_ = os.Symlink(dir, filepath.Join(team, "out")) // a link planted to lead out

	fsys, _ := rootfs.New(team)
	defer fsys.Close()
	fmt.Println(afero.WriteFile(fsys, "notes.md", []byte("ok"), 0o644))
	fmt.Println(afero.WriteFile(fsys, "out/escape.md", []byte("x"), 0o644) != nil)
	// Output:
	// <nil>
	// true
}
