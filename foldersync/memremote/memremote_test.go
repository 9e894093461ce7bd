package memremote_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// control drives a memremote.Remote as a teammate would.
type control struct{ r *memremote.Remote }

func (c control) Write(_ testing.TB, p string, content []byte) { c.r.Write(p, content) }
func (c control) Remove(_ testing.TB, p string)                { c.r.Remove(p) }
func (c control) Read(_ testing.TB, p string) ([]byte, bool)   { return c.r.Read(p) }
func (c control) Lose(_ testing.TB, p string)                  { c.r.Lose(p) }
func (c control) Backup(testing.TB) func() {
	s := c.r.Snapshot()
	return func() { c.r.Restore(s) }
}
func (c control) Replace(_ testing.TB, files map[string][]byte) { c.r.Replace("another-store", files) }

func factory(t *testing.T) (foldersync.Remote, remotetest.Control) {
	r := memremote.New("store-" + t.Name())
	return r, control{r}
}

func TestConformance(t *testing.T) { remotetest.Run(t, factory) }

func TestEngine(t *testing.T) { remotetest.RunEngine(t, factory) }

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
