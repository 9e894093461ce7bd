package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
)

func ExampleRunAgent() {
	// A tool the agent may call, and a rule that refuses some calls.
	shout := llm.Tool{
		Spec: llm.ToolSpec{Name: "shout", Description: "Upper-cases text",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		Call: func(_ context.Context, in json.RawMessage) (string, error) {
			var v struct{ Text string }
			if err := json.Unmarshal(in, &v); err != nil {
				return "", err
			}
			return strings.ToUpper(v.Text), nil
		},
	}
	noSecrets := func(_ context.Context, c llm.ToolCall) llm.Decision {
		if strings.Contains(string(c.Input), "password") {
			return llm.Deny("never handle passwords")
		}
		return llm.Allow()
	}
	model := llmtest.New( // any llm.Model: a host's own client, or llm/anthropic
		llmtest.ToolUse("1", "shout", map[string]string{"text": "my password"}),
		llmtest.ToolUse("2", "shout", map[string]string{"text": "hello"}),
		llmtest.Text("done"),
	)
	res, err := llm.RunAgent(context.Background(), model, llm.Task{
		Purpose: llm.PurposeExtractMemories, Prompt: "shout hello", Tools: []llm.Tool{shout}, Permission: noSecrets, MaxTurns: 5,
	})
	fmt.Println(err, res.Turns, res.Final)
	for _, c := range res.ToolCalls {
		fmt.Printf("%s denied=%v output=%q\n", c.Name, c.Denied, c.Output)
	}
	// Output:
	// <nil> 3 done
	// shout denied=true output="Permission denied: never handle passwords"
	// shout denied=false output="HELLO"
}
