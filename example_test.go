package agentmem_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// A host gives its agent memory with one constructor; here offline, with
// no model, so the jobs that need one are left out.
func ExampleNew() {
	root, _ := os.MkdirTemp("", "agentmem-example-")
	defer os.RemoveAll(root)
	project := filepath.Join(root, "shop")
	_ = os.MkdirAll(project, 0o755)

	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{
		ProjectRoot: project, ConfigHome: filepath.Join(root, ".claude"),
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mem.Close()
	ctx := context.Background()
	section, _ := mem.SystemPrompt(ctx)
	fmt.Println(strings.Contains(section, mem.Dir()))

	_ = os.WriteFile(filepath.Join(mem.Dir(), "deploys.md"),
		[]byte("---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nNever deploy on Fridays.\n"), 0o644)
	msg := mem.UserMessage(ctx, "can I deploy on Friday?") // the prompt, then the memories as their own block
	fmt.Println(strings.Contains(msg.Content[1].Text, "Never deploy on Fridays."))
	fmt.Println(len(mem.Tools()) > 0)
	// Output:
	// true
	// true
	// true
}

// One turn through the front door: the host sends the user's message with
// what memory adds, runs its model, and ends the turn; the extraction job
// then saves what the turn taught, here with a scripted model.
func ExampleMemory_TurnEnded() {
	root, _ := os.MkdirTemp("", "agentmem-example-")
	defer os.RemoveAll(root)
	project := filepath.Join(root, "shop")
	_ = os.MkdirAll(project, 0o755)
	config := filepath.Join(root, ".claude")
	dir := filepath.Join(config, "projects", memdir.SanitizePath(project), "memory")

	// The extraction model's script: write one memory, then stop.
	model := llmtest.New(
		llmtest.ToolUse("t1", memdir.ToolWrite, map[string]any{
			"file_path": filepath.Join(dir, "deploy_days.md"),
			"content":   "---\nname: Deploy days\ndescription: deploys happen on Tuesdays\ntype: project\n---\nWe deploy on Tuesdays.\n",
		}),
		llmtest.Text("Saved the deploy day."),
	)
	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{
		ProjectRoot: project, ConfigHome: config,
		Disable: agentmem.SessionSummary | agentmem.Consolidation,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mem.Close()
	ctx := context.Background()

	user := mem.UserMessage(ctx, "Remember: we deploy on Tuesdays.")
	reply := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Noted.")}} // the host's model answers
	mem.TurnEnded(ctx, agentmem.Turn{Messages: []llm.Message{user, reply}})
	_ = mem.Drain(ctx) // the background extraction has finished

	headers, _ := memdir.ScanMemoryFiles(ctx, afero.NewOsFs(), mem.Dir(), memdir.ScanOptions{})
	for _, h := range headers {
		fmt.Println(h.Filename, h.Type, h.Description)
	}
	// Output:
	// deploy_days.md project deploys happen on Tuesdays
}
