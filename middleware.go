package agentmem

import (
	"context"
	"sync"

	"github.com/agentmem-sdk/agentmem/llm"
)

// Model wraps the host's main model with the memory's hooks, for a loop
// that has no place of its own for them: before each call the memory
// section (built once per conversation, so it stays byte for byte the
// same) joins the system prompt, and each new user message becomes what
// UserMessage makes of it: the index (the session's first), the changed
// files and the memories recalled for it around the host's own blocks
// (the same blocks on every later call, so the prompt cache holds) and,
// with Options.History, the ID of the turn's checkpoint (rewinding the
// session's file history to it undoes the memory writes of that turn);
// the tool calls whose results come back are reported (ToolCalled); a
// conversation that got shorter was compacted (Compacted); a reply with no
// tool call ends the turn (TurnEnded, with the messages as the model saw
// them and the request's prefix). The host still offers Tools and wraps
// its permissions with Guard. Background jobs' calls (Request.Purpose set)
// pass through untouched.
//
// Recall, the embedder and the index are read without holding the
// wrapper's lock, so a slow recall does not hold up a concurrent call.
func (m *Memory) Model(next llm.Model) llm.Model {
	return &memoryModel{m: m, next: next, made: map[int]llm.Message{}}
}

type memoryModel struct {
	m    *Memory
	next llm.Model

	mu       sync.Mutex
	section  *string             // the memory section, built once per conversation
	epoch    int                 // counts compactions: a result made before one is dropped
	seen     int                 // messages of the conversation already handled
	made     map[int]llm.Message // what UserMessage made of the user message at an index
	reported map[string]bool     // tool calls already reported
}

func (w *memoryModel) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	if !w.m.enabled || req.Purpose != "" {
		return w.next.Generate(ctx, req)
	}
	host := req.Messages

	// Under the lock: what is new in this call. The memory's own work
	// (recall, the embedder, the index, the checkpoint) runs after.
	w.mu.Lock()
	if len(host) < w.seen {
		w.m.Compacted()
		w.seen, w.made, w.reported, w.section = 0, map[int]llm.Message{}, nil, nil
		w.epoch++
	}
	if w.reported == nil {
		w.reported = map[string]bool{}
	}
	epoch := w.epoch
	var called []llm.ToolCall
	calls := map[string]llm.Block{}
	var fresh []int // user messages not handled yet
	for i, msg := range host {
		for _, b := range msg.Content {
			switch {
			case b.Type == llm.BlockToolUse:
				calls[b.ToolUseID] = b
			case b.Type == llm.BlockToolResult && !w.reported[b.ToolUseID]:
				if use, ok := calls[b.ToolUseID]; ok && !b.IsError {
					called = append(called, llm.ToolCall{ID: use.ToolUseID, Name: use.ToolName, Input: use.Input})
				}
				w.reported[b.ToolUseID] = true
			}
		}
		if _, done := w.made[i]; i >= w.seen && !done && msg.Role == llm.RoleUser && msg.Text() != "" {
			fresh = append(fresh, i)
		}
	}
	if len(host) > w.seen {
		w.seen = len(host)
	}
	w.mu.Unlock()

	for _, c := range called {
		w.m.ToolCalled(c)
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
	made := make(map[int]llm.Message, len(fresh))
	for _, i := range fresh {
		made[i] = w.m.UserMessage(ctx, host[i].Text())
	}

	w.mu.Lock()
	if w.epoch == epoch {
		for i, msg := range made {
			if _, done := w.made[i]; !done { // a concurrent call's is kept
				w.made[i] = msg
			}
		}
		made = w.made
	}
	out := make([]llm.Message, len(host))
	for i, msg := range host {
		out[i] = msg
		if mm, ok := made[i]; ok {
			out[i] = withMemory(msg, mm)
		}
	}
	w.mu.Unlock()

	req.Messages = out
	resp, err := w.next.Generate(ctx, req)
	if err == nil && len(resp.Message.ToolUses()) == 0 {
		specs := append([]llm.ToolSpec(nil), req.Tools...)
		w.m.TurnEnded(ctx, Turn{Messages: append(append([]llm.Message(nil), out...), resp.Message),
			ContextTokens: resp.Usage.InputTokens, Prefix: &llm.Prefix{System: req.System, Tools: specs}})
	}
	return resp, err
}

// withMemory returns the host's user message with every block UserMessage
// made for it in UserMessage's order (the host's own blocks where
// UserMessage put the text) and, when made has one, the checkpoint's ID.
func withMemory(host, made llm.Message) llm.Message {
	out := llm.Message{ID: host.ID, Role: host.Role}
	if made.ID != "" {
		out.ID = made.ID
	}
	placed := false
	for _, b := range made.Content {
		if !b.Meta && b.Type == llm.BlockText {
			if !placed {
				out.Content = append(out.Content, host.Content...)
				placed = true
			}
			continue
		}
		out.Content = append(out.Content, b)
	}
	if !placed {
		out.Content = append(out.Content, host.Content...)
	}
	return out
}

// systemSection returns the memory section, built on the conversation's
// first call and kept until a compaction, so the system prompt stays the
// same byte for byte (a prompt cache holds) while memories are saved. It
// is built without holding the lock; of two built at once, the first kept
// wins.
func (w *memoryModel) systemSection(ctx context.Context) (string, error) {
	w.mu.Lock()
	if w.section != nil {
		s := *w.section
		w.mu.Unlock()
		return s, nil
	}
	w.mu.Unlock()
	s, err := w.m.SystemPrompt(ctx)
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.section == nil {
		w.section = &s
	}
	return *w.section, nil
}
