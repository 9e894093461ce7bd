package extract_test

import (
	"context"
	"fmt"

	"github.com/agentmem-sdk/agentmem/extract"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

func ExampleExtractor() {
	fsys := afero.NewMemMapFs()
	model := llmtest.New( // the host's llm.Model; scripted here
		llmtest.ToolUse("1", "Write", map[string]string{"file_path": "/mem/user_style.md",
			"content": "---\nname: Answer style\ndescription: prefers short answers\ntype: user\n---\nKeep answers short.\n"}),
		llmtest.Text("Saved the answer style."),
	)
	dir, _ := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	ex, _ := extract.New(dir, model, extract.Options{Observer: func(e extract.Event) {
		if e.Kind == extract.EventFinished {
			fmt.Println("memory updated:", e.Files)
		}
	}})
	defer ex.Close()

	conversation := []llm.Message{
		{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("please keep your answers short from now on")}},
		{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Will do.")}},
	}
	ex.OnTurnEnd(context.Background(), conversation, extract.TurnInfo{})
	_ = ex.Drain(context.Background())
	fmt.Println("cursor:", ex.Cursor())
	// Output:
	// memory updated: [/mem/user_style.md]
	// cursor: a1
}
