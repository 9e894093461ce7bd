package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/mcpserver"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// A host serves a memory directory over MCP; here an MCP client on the
// in-memory transport saves a memory and recalls it. Over HTTP, mount
// mcpserver.HTTPHandler(srv) on the host's mux instead.
func ExampleNew() {
	ctx := context.Background()
	dir, err := memdir.NewDir(afero.NewMemMapFs(), "/mem", memdir.DirOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := mcpserver.New(dir, mcpserver.Options{Version: "1.0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverSide, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_save", Arguments: map[string]any{
		"name": "Deploy days", "description": "when we ship", "type": "project", "body": "We deploy on Tuesdays."}})
	var saved mcpserver.SaveOutput
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &saved)
	fmt.Println(saved.IndexLine)

	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_recall", Arguments: map[string]any{"query": "which day do we deploy?"}})
	var found mcpserver.ListOutput
	raw, _ = json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &found)
	for _, m := range found.Memories {
		fmt.Println(m.File, m.Type)
	}
	// Output:
	// - [Deploy days](deploy_days.md) — when we ship
	// deploy_days.md project
}
