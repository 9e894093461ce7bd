package storesync_test

import (
	"fmt"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
)

// A host reads the stores from CLAUDE_MEMORY_STORES, as Claude Code does,
// and opens one client per mount on its folder under the auto-memory
// directory; client.Sync(ctx) then runs a round, storesync.Watch keeps it
// running.
func ExampleParseMounts() {
	mounts, err := storesync.ParseMounts(`[
		{"path": "/v1/code/memory/team-store", "mount": "proj"},
		{"path": "/v1/code/memory/handbook", "mode": "ro"},
		{"path": "/v1/code/memory/me", "scope": "user"}]`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range mounts {
		folder, err := memdir.NewDir(afero.NewOsFs(), m.Dir("/home/you/.claude/projects/-home-you-shop/memory"), memdir.DirOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		c, err := storesync.New(folder, storesync.Options{BaseURL: "http://127.0.0.1:8787", Token: "amt_...", Mount: m})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(m.Name, m.Scope, m.ReadOnly(), c.Dir())
	}
	_, err = storesync.ParseMounts(`["team-store"]`)
	fmt.Println(err != nil)
	// Output:
	// proj team false /home/you/.claude/projects/-home-you-shop/memory/team/proj
	// handbook team true /home/you/.claude/projects/-home-you-shop/memory/team/handbook
	// me user false /home/you/.claude/projects/-home-you-shop/memory
	// true
}
