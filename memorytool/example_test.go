package memorytool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentmem-sdk/agentmem/memdir"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/memorytool"
)

func ExampleHandler_Call() {
	dir, _ := memdir.NewDir(afero.NewMemMapFs(), "/home/you/.claude/projects/-shop/memory", memdir.DirOptions{})
	h, _ := memorytool.New(dir)
	for _, in := range []map[string]any{
		{"command": "create", "path": "/memories/tabs.md", "file_text": "---\nname: Tabs\ndescription: Go style\n---\nTabs, not spaces.\n"},
		{"command": "view", "path": "/memories/tabs.md", "view_range": []int{5, 5}},
		{"command": "view", "path": "/memories/../secrets"},
	} {
		raw, _ := json.Marshal(in)
		out, err := h.Call(context.Background(), raw)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(out)
	}
	// Output:
	// File created successfully at: /memories/tabs.md
	// Here's the content of /memories/tabs.md with line numbers:
	//      5	Tabs, not spaces.
	// error: Path /memories/../secrets would escape /memories directory
}
