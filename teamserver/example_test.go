package teamserver_test

import (
	"context"
	"fmt"
	"github.com/agentmem-sdk/agentmem/memdir"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
)

// A server and two clients in one process: what the team's second
// contributor sees after the first one pushes.
func ExampleNewHandler() {
	token, grant, _ := teamserver.NewToken("acme", []string{"acme/*"})
	h, _ := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	srv := httptest.NewServer(h)
	defer srv.Close()

	tmp, _ := os.MkdirTemp("", "team")
	defer os.RemoveAll(tmp)
	alice, bob := filepath.Join(tmp, "alice"), filepath.Join(tmp, "bob")
	_ = os.MkdirAll(alice, 0o755)
	_ = os.WriteFile(filepath.Join(alice, "testing.md"), []byte("Integration tests hit a real database."), 0o644)

	client := func(dir string) *teammem.Client {
		c, _ := teammem.New(teamDirAt(afero.NewOsFs(), dir), teammem.Options{BaseURL: srv.URL, Repo: "acme/shop", Token: token})
		return c
	}
	pushed, _ := client(alice).Sync(context.Background(), &teammem.SyncState{})
	pulled, _ := client(bob).Sync(context.Background(), &teammem.SyncState{})
	content, _ := os.ReadFile(filepath.Join(bob, "testing.md"))
	fmt.Println(pushed.Pushed, pulled.Pulled)
	fmt.Println(string(content))
	// Output:
	// [testing.md] [testing.md]
	// Integration tests hit a real database.
}

// teamDirAt is a team directory on its own at dir, for a sync client.
func teamDirAt(fsys afero.Fs, dir string) *memdir.Dir {
	d, err := memdir.NewDir(fsys, dir, memdir.DirOptions{Team: true})
	if err != nil {
		panic(err)
	}
	return d
}
