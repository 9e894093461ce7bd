package memremote_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// A folder kept in step with an in-memory remote: a teammate's memory
// arrives, the folder's own goes out.
func Example() {
	dir, _ := os.MkdirTemp("", "memremote-example")
	defer os.RemoveAll(dir)
	remote := memremote.New("store-1")
	remote.Write("team.md", []byte("from a teammate\n"))
	_ = os.WriteFile(dir+"/mine.md", []byte("from this folder\n"), 0o644)

	d, _ := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	e, _ := foldersync.New(d, dir, remote, foldersync.Options{})
	res, err := e.Round(context.Background())
	fmt.Println(res.Pulled, res.Pushed, err)
	got, _ := remote.Read("mine.md")
	fmt.Print(string(got))
	// Output:
	// [team.md] [mine.md] <nil>
	// from this folder
}
