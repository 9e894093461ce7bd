package sessionmem_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/sessionmem"
	"github.com/spf13/afero"
)

func ExampleSummarizer() {
	fsys := afero.NewMemMapFs()
	const session = "7f3e2a10-5c4b-4d8e-9a61-0b2c3d4e5f60" // a UUID, as Claude Code names sessions
	path := sessionmem.SummaryPath("/home/u/.claude", "/work/shop", session)
	model := llmtest.New( // the host's llm.Model; scripted here
		llmtest.ToolUse("1", "Edit", map[string]string{"file_path": path,
			"old_string": "_A short title for what this session is about._\n",
			"new_string": "_A short title for what this session is about._\nRetry refunds on timeout\n"}),
		llmtest.Text("Notes updated."),
	)
	tr, _ := sessionmem.New(fsys, model, sessionmem.Options{ConfigHome: "/home/u/.claude", Cwd: "/work/shop", SessionID: session})
	defer tr.Close()

	conversation := []llm.Message{{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Done.")}}}
	fmt.Println(tr.Observe(context.Background(), sessionmem.Observation{ContextTokens: 9_000, Messages: conversation}))
	fmt.Println(tr.Observe(context.Background(), sessionmem.Observation{ContextTokens: 10_500, Messages: conversation}))
	tr.WaitForUpdate(context.Background())
	summary, _ := tr.Summary()
	fmt.Println(strings.SplitN(summary, "\n", 4)[2])
	// Output:
	// false
	// true
	// Retry refunds on timeout
}
