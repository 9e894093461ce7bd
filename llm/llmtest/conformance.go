package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
)

// Provider is an adapter under test, backed by a stand-in of its API.
type Provider struct {
	// New returns the adapter pointed at a stand-in that answers each call
	// with the next of replies (in the API's own shape) and a function that
	// returns what the stand-in was sent, read back from the API's shape
	// into llm.Requests (Purpose and MaxTokens may stay zero).
	New func(t *testing.T, replies []llm.Response) (llm.Model, func() []llm.Request)
}

// Conformance checks what every adapter must do the same way, through the
// adapter's own stand-in: text replies with usage and stop reasons, a
// tool call and the conversation after it (tool results answer their
// calls), structured output, and cancellation. The agent loop runs over
// the adapter as well.
func Conformance(t *testing.T, p Provider) {
	t.Run("text", func(t *testing.T) {
		want := llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Deploys freeze on Fridays.")}},
			StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 12, OutputTokens: 5}}
		m, sent := p.New(t, []llm.Response{want})
		req := llm.Request{System: "You keep memory.", Messages: []llm.Message{userText("When do deploys freeze?")}}
		got, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if got.Message.Text() != want.Message.Text() || got.StopReason != llm.StopEndTurn || got.Usage != want.Usage {
			t.Errorf("reply: got %q %s %+v, want %q end_turn %+v", got.Message.Text(), got.StopReason, got.Usage, want.Message.Text(), want.Usage)
		}
		if got.Message.Role != llm.RoleAssistant {
			t.Errorf("role %q, want assistant", got.Message.Role)
		}
		checkSent(t, sent(), req)
	})
	t.Run("tool call and history", func(t *testing.T) {
		call := llm.ToolUseBlock("call_2", "Write", json.RawMessage(`{"file_path":"/m/deploy.md","content":"x"}`))
		m, sent := p.New(t, []llm.Response{{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{call}}, StopReason: llm.StopToolUse}})
		req := llm.Request{
			Tools: []llm.ToolSpec{{Name: "Read", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)}},
			Messages: []llm.Message{
				userText("Save what matters."),
				{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Reading first."), llm.ToolUseBlock("call_1", "Read", json.RawMessage(`{"file_path":"/m/MEMORY.md"}`))}},
				{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("call_1", "- [Deploys](deploy.md)", false)}},
			}}
		got, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		uses := got.Message.ToolUses()
		if got.StopReason != llm.StopToolUse || len(uses) != 1 || uses[0].ToolUseID != "call_2" || uses[0].ToolName != "Write" || !jsonEqual(uses[0].Input, call.Input) {
			t.Errorf("tool call: got %s %+v", got.StopReason, uses)
		}
		checkSent(t, sent(), req)
	})
	t.Run("structured output", func(t *testing.T) {
		answer := `{"selected_memories":["deploy.md"]}`
		m, _ := p.New(t, []llm.Response{{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(answer)}}, StopReason: llm.StopEndTurn}})
		got, err := m.Generate(context.Background(), llm.Request{Purpose: llm.PurposeMemoryRelevance, Messages: []llm.Message{userText("Which?")},
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"selected_memories":{"type":"array","items":{"type":"string"}}},"required":["selected_memories"]}`)})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if !jsonEqual(json.RawMessage(got.Message.Text()), json.RawMessage(answer)) {
			t.Errorf("structured reply %q, want %s", got.Message.Text(), answer)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		m, _ := p.New(t, []llm.Response{{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("late")}}}})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{userText("x")}}); !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled call returned %v, want context.Canceled", err)
		}
	})
	t.Run("agent loop", func(t *testing.T) {
		m, sent := p.New(t, []llm.Response{
			{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("call_1", "echo", json.RawMessage(`{"s":"hi"}`))}}, StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 3, OutputTokens: 2}},
			{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("said hi")}}, StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 5, OutputTokens: 1}},
		})
		echo := llm.Tool{Spec: llm.ToolSpec{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`)},
			Call: func(_ context.Context, in json.RawMessage) (string, error) { return "echo: " + string(in), nil }}
		res, err := llm.RunAgent(context.Background(), m, llm.Task{Prompt: "say hi", Tools: []llm.Tool{echo}, MaxTurns: 3})
		if err != nil {
			t.Fatalf("RunAgent: %v", err)
		}
		if res.Final != "said hi" || res.Turns != 2 || res.Usage != (llm.Usage{InputTokens: 8, OutputTokens: 3}) {
			t.Errorf("agent result: %q, %d turns, %+v", res.Final, res.Turns, res.Usage)
		}
		reqs := sent()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		last := reqs[1].Messages[len(reqs[1].Messages)-1]
		if len(last.Content) == 0 || last.Content[0].Type != llm.BlockToolResult || last.Content[0].ToolUseID != "call_1" || last.Content[0].Text != `echo: {"s":"hi"}` {
			t.Errorf("the tool result did not go back as the answer to call_1: %+v", last)
		}
	})
}

func userText(s string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(s)}}
}

// checkSent compares the one request the stand-in saw with req: system,
// roles, blocks (tool inputs as JSON values) and tool names.
func checkSent(t *testing.T, sent []llm.Request, req llm.Request) {
	t.Helper()
	if len(sent) != 1 {
		t.Fatalf("the stand-in saw %d requests, want 1", len(sent))
	}
	got := sent[0]
	if got.System != req.System {
		t.Errorf("system %q, want %q", got.System, req.System)
	}
	if len(got.Messages) != len(req.Messages) {
		t.Fatalf("%d messages sent, want %d: %+v", len(got.Messages), len(req.Messages), got.Messages)
	}
	for i := range req.Messages {
		g, w := got.Messages[i], req.Messages[i]
		if g.Role != w.Role || len(g.Content) != len(w.Content) {
			t.Errorf("message %d: got %s %+v, want %s %+v", i, g.Role, g.Content, w.Role, w.Content)
			continue
		}
		for j := range w.Content {
			gb, wb := g.Content[j], w.Content[j]
			if gb.Type != wb.Type || gb.Text != wb.Text || gb.ToolUseID != wb.ToolUseID || gb.ToolName != wb.ToolName || gb.IsError != wb.IsError ||
				(len(wb.Input) > 0 && !jsonEqual(gb.Input, wb.Input)) {
				t.Errorf("message %d block %d: got %+v, want %+v", i, j, gb, wb)
			}
		}
	}
	var names, want []string
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
	}
	for _, tool := range req.Tools {
		want = append(want, tool.Name)
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(bytes.TrimSpace(a), &x) != nil || json.Unmarshal(bytes.TrimSpace(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
