package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
)

// A self-hosted server keeps team memory in one SQLite file.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "team-db")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(filepath.Join(dir, "team.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	_, _ = store.Put(context.Background(), repo, teamserver.PutRequest{Entries: map[string]string{"ci.md": "CI runs nightly"}})
	got, _ := store.Get(context.Background(), repo, true)
	fmt.Println(got.Entries["ci.md"])
	// Output: CI runs nightly
}
