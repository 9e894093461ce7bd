package anthropic_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
)

// A host routes the cheap relevance job to a small model and everything
// else to the default one.
func ExampleNew() {
	model, err := anthropic.New(anthropic.Options{
		APIKey: os.Getenv("ANTHROPIC_API_KEY"),
		Models: map[llm.Purpose]string{llm.PurposeMemoryRelevance: "claude-haiku-4-5"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = model.Generate(context.Background(), llm.Request{
		Purpose:  llm.PurposeMemoryRelevance,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Which memories matter for: how do we test?")}}},
	})
}
