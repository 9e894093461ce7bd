package transcript_test

import (
	"context"
	"fmt"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/transcript"
)

// A host records each turn of its loop in Claude Code's JSONL layout,
// then lists, searches and resumes the session after a restart.
func ExampleNewRecorder() {
	ctx := context.Background()
	fsys := afero.NewMemMapFs() // afero.NewOsFs() on the real disk
	dir := transcript.ProjectDir("/home/you/.claude", "/home/you/shop")
	store, err := transcript.NewJSONLStore(fsys, dir, transcript.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	rec, _ := transcript.NewRecorder(store, transcript.Stamp{Cwd: "/home/you/shop", GitBranch: "main"})
	conversation := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Why is the checkout test flaky?")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("It races the payment mock's timer.")}},
	}
	_ = rec.Record(ctx, conversation...) // after every turn: writes what is new
	_ = store.Flush(ctx)

	infos, _ := store.List(ctx)
	fmt.Println(len(infos), infos[0].Title, infos[0].GitBranch)
	hits, _ := transcript.Search(ctx, store, "payment timer", 10)
	fmt.Println(len(hits), hits[0].SessionID == infos[0].SessionID)

	r, _ := transcript.Resume(ctx, store, infos[0].SessionID)
	for _, m := range transcript.ToLLM(r.Messages) {
		fmt.Println(m.Role, m.Content[0].Text)
	}
	// Output:
	// 1 Why is the checkout test flaky? main
	// 1 true
	// user Why is the checkout test flaky?
	// assistant It races the payment mock's timer.
}
