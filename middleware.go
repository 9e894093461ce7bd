package agentmem

import (
	"context"
	"sync"

	"github.com/agentmem/agentmem/llm"
)

// Model wraps the host's main model with the memory's hooks, for a loop
// that has no place of its own for them: before each call the memory
// section (built once per conversation, so it stays byte for byte the
// same) joins the system prompt, and each new user message gains the
// index (the session's first) and the memories recalled for it (the same
// blocks on every later call, so the prompt cache holds); the tool calls
// whose results come back are reported (ToolCalled); a conversation that
// got shorter was compacted (Compacted); a reply with no tool call ends
// the turn (TurnEnded, with the request's prefix). The host still offers
// Tools and wraps its permissions with Guard. Background jobs' calls
// (Request.Purpose set) pass through untouched.
func (m *Memory) Model(next llm.Model) llm.Model {
	return &memoryModel{m: m, next: next, extra: map[int][]llm.Block{}}
}

type memoryModel struct {
	m    *Memory
	next llm.Model

	mu       sync.Mutex
	section  *string             // the memory section, built once per conversation
	seen     int                 // messages of the conversation already handled
	extra    map[int][]llm.Block // blocks added to the user message at an index
	reported map[string]bool     // tool calls already reported
}

func (w *memoryModel) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	if !w.m.enabled || req.Purpose != "" {
		return w.next.Generate(ctx, req)
	}
	section, err := w.systemSection(ctx)
	if err != nil {
		return llm.Response{}, err
	}
	if section != "" {
		if req.System != "" {
			req.System += "\n\n"
		}
		req.System += section
	}
	w.mu.Lock()
	if len(req.Messages) < w.seen {
		w.m.Compacted()
		w.seen, w.extra, w.reported, w.section = 0, map[int][]llm.Block{}, nil, nil
	}
	if w.reported == nil {
		w.reported = map[string]bool{}
	}
	host := req.Messages
	out := make([]llm.Message, len(host))
	calls := map[string]llm.Block{}
	for i, msg := range host {
		for _, b := range msg.Content {
			switch {
			case b.Type == llm.BlockToolUse:
				calls[b.ToolUseID] = b
			case b.Type == llm.BlockToolResult && !w.reported[b.ToolUseID]:
				if use, ok := calls[b.ToolUseID]; ok && !b.IsError {
					w.m.ToolCalled(llm.ToolCall{ID: use.ToolUseID, Name: use.ToolName, Input: use.Input})
				}
				w.reported[b.ToolUseID] = true
			}
		}
		out[i] = msg
		if msg.Role != llm.RoleUser || msg.Text() == "" {
			continue
		}
		if i >= w.seen {
			made := w.m.UserMessage(ctx, msg.Text())
			var added []llm.Block
			for _, b := range made.Content {
				if b.Meta {
					added = append(added, b)
				}
			}
			w.extra[i] = added
		}
		if added := w.extra[i]; len(added) > 0 {
			out[i].Content = append(append([]llm.Block(nil), msg.Content...), added...)
		}
	}
	w.seen = len(host)
	w.mu.Unlock()
	req.Messages = out
	resp, err := w.next.Generate(ctx, req)
	if err == nil && len(resp.Message.ToolUses()) == 0 {
		specs := append([]llm.ToolSpec(nil), req.Tools...)
		w.m.TurnEnded(ctx, Turn{Messages: append(append([]llm.Message(nil), host...), resp.Message),
			ContextTokens: resp.Usage.InputTokens, Prefix: &llm.Prefix{System: req.System, Tools: specs}})
	}
	return resp, err
}

// systemSection returns the memory section, built on the conversation's
// first call and kept until a compaction, so the system prompt stays the
// same byte for byte (a prompt cache holds) while memories are saved.
func (w *memoryModel) systemSection(ctx context.Context) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.section != nil {
		return *w.section, nil
	}
	s, err := w.m.SystemPrompt(ctx)
	if err != nil {
		return "", err
	}
	w.section = &s
	return s, nil
}
