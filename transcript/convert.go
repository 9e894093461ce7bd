package transcript

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/llm"
)

// Recorder writes a host's own conversation into a session, one call per
// turn: Record(ctx, messages...) appends what it has not written yet (by
// llm.Message.ID) in Claude Code's shape — a user prompt as one entry, each
// tool result as its own entry answering the assistant entry that called
// the tool, an assistant reply as one entry per content block sharing one
// API message id — chained by parentUuid, and flushes. Safe for concurrent
// use.
type Recorder struct {
	store Store
	stamp Stamp
	now   func() time.Time

	mu       sync.Mutex
	last     string            // the uuid of the chain's tip
	prompt   string            // the session's last prompt, for last-prompt lines
	recorded map[string]bool   // llm message ids already written
	toolUse  map[string]string // tool_use id → the assistant entry's uuid
}

// NewRecorder returns a Recorder for the session stamp.SessionID (a new
// one when empty).
func NewRecorder(s Store, stamp Stamp) (*Recorder, error) {
	if s == nil {
		return nil, errors.New("transcript: NewRecorder needs a Store")
	}
	if stamp.SessionID == "" {
		stamp.SessionID = NewUUID()
	}
	if !IsSessionID(stamp.SessionID) {
		return nil, ErrInvalidSessionID
	}
	return &Recorder{store: s, stamp: stamp.withDefaults(), now: time.Now, recorded: map[string]bool{}, toolUse: map[string]string{}}, nil
}

// ContinueRecorder returns a Recorder that appends to a resumed session
// after the entry it continues from (Resumed.LeafUUID, the leaf Claude
// Code continues from too; the synthetic messages of resume are not in
// the file and are not continued from).
func ContinueRecorder(s Store, r *Resumed, stamp Stamp) (*Recorder, error) {
	stamp.SessionID = r.SessionID
	stamp.Cwd = cmp.Or(stamp.Cwd, r.Cwd)
	rec, err := NewRecorder(s, stamp)
	if err != nil {
		return nil, err
	}
	for _, m := range r.Messages {
		if m.Synthetic {
			continue
		}
		rec.last = m.UUID
		rec.recorded[m.UUID] = true
		if m.Type == TypeUser && !m.IsMeta && !m.IsCompactSummary && !m.isToolResult() {
			rec.prompt = lastPromptText(m.Text())
		}
		for _, b := range m.Blocks() {
			if b.Type == "tool_use" {
				rec.toolUse[b.ID] = m.UUID
			}
		}
	}
	if r.LeafUUID != "" {
		rec.last = r.LeafUUID
	}
	for _, m := range ToLLM(r.Messages) {
		rec.recorded[m.ID] = true
	}
	return rec, nil
}

// lastPromptText is a prompt as a last-prompt line holds it: on one line,
// at most 200 characters and an ellipsis.
func lastPromptText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// SessionID returns the session being recorded.
func (r *Recorder) SessionID() string { return r.stamp.SessionID }

// Record appends the messages not recorded yet, then a last-prompt line
// naming the new tip as the leaf to continue from, and flushes.
func (r *Recorder) Record(ctx context.Context, msgs ...llm.Message) error {
	r.mu.Lock()
	var entries []Entry
	for _, m := range msgs {
		if m.ID != "" && r.recorded[m.ID] {
			continue
		}
		entries = append(entries, r.entriesFor(m)...)
		if m.ID != "" {
			r.recorded[m.ID] = true
		}
	}
	if len(entries) > 0 {
		entries = append(entries, lastPromptEntry(r.stamp.SessionID, r.prompt, r.last))
	}
	r.mu.Unlock()
	if len(entries) == 0 {
		return nil
	}
	if err := r.store.Append(ctx, r.stamp.SessionID, entries...); err != nil {
		return err
	}
	return r.store.Flush(ctx)
}

func (r *Recorder) entriesFor(m llm.Message) []Entry {
	now := r.now()
	var out []Entry
	add := func(me MessageEntry) {
		me.Parent = cmp.Or(me.Parent, r.last)
		me.Time = now
		e := me.Encode(r.stamp)
		r.last = e.UUID
		out = append(out, e)
	}
	switch m.Role {
	case llm.RoleAssistant:
		id := "msg_" + strings.ReplaceAll(NewUUID(), "-", "")
		for _, b := range m.Content {
			var blk Block
			switch b.Type {
			case llm.BlockText:
				blk = Block{Type: "text", Text: b.Text}
			case llm.BlockToolUse:
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage(`{}`)
				}
				blk = Block{Type: "tool_use", ID: b.ToolUseID, Name: b.ToolName, Input: input}
			default:
				continue
			}
			add(MessageEntry{Type: TypeAssistant, Message: Message{ID: id, Role: "assistant", Content: mustJSON([]Block{blk})}})
			if b.Type == llm.BlockToolUse {
				r.toolUse[b.ToolUseID] = r.last
			}
		}
	default:
		// What was added for the model is not the user's prompt: the meta
		// blocks before the text and those after it are entries of their
		// own, in the order they were sent.
		var before, texts, after []string
		for _, b := range m.Content {
			switch {
			case b.Type != llm.BlockText || b.Text == "":
			case b.Meta && len(texts) == 0:
				before = append(before, b.Text)
			case b.Meta:
				after = append(after, b.Text)
			default:
				texts = append(texts, b.Text)
			}
		}
		meta := func(parts []string) {
			if len(parts) > 0 {
				add(MessageEntry{Type: TypeUser, IsMeta: true, Message: Message{Role: "user", Content: mustJSON(strings.Join(parts, "\n"))}})
			}
		}
		meta(before)
		if len(texts) > 0 {
			text := strings.Join(texts, "\n")
			add(MessageEntry{Type: TypeUser, Message: Message{Role: "user", Content: mustJSON(text)}})
			r.prompt = lastPromptText(text)
		}
		meta(after)
		for _, b := range m.Content {
			if b.Type != llm.BlockToolResult {
				continue
			}
			src := r.toolUse[b.ToolUseID]
			add(MessageEntry{Type: TypeUser, Parent: src, SourceToolAssistantUUID: src, Message: Message{Role: "user",
				Content: mustJSON([]Block{{Type: "tool_result", ToolUseID: b.ToolUseID, Content: mustJSON(b.Text), IsError: b.IsError}})}})
		}
	}
	return out
}

// ToLLM turns a resumed conversation into model messages: the entries of
// one assistant API message become one message, consecutive tool results
// one user message, a meta entry (context added for the model, as
// llm.MetaBlock) one message with the user's text next to it, in file
// order; system and attachment entries are left out. Each message's ID is
// its first entry's uuid.
func ToLLM(msgs []ResumedEntry) []llm.Message {
	var out []llm.Message
	lastAPI := ""
	for _, m := range msgs {
		if m.Type != TypeUser && m.Type != TypeAssistant {
			continue
		}
		var blocks []llm.Block
		for _, b := range m.Blocks() {
			switch b.Type {
			case "text":
				if m.IsMeta {
					blocks = append(blocks, llm.MetaBlock(b.Text))
				} else {
					blocks = append(blocks, llm.TextBlock(b.Text))
				}
			case "tool_use":
				blocks = append(blocks, llm.ToolUseBlock(b.ID, b.Name, b.Input))
			case "tool_result":
				blocks = append(blocks, llm.ToolResultBlock(b.ToolUseID, b.ResultText(), b.IsError))
			}
		}
		if len(blocks) == 0 {
			continue
		}
		role := llm.RoleUser
		apiID := ""
		if m.Type == TypeAssistant {
			role = llm.RoleAssistant
			if m.Message != nil {
				apiID = m.Message.ID
			}
		}
		if n := len(out); n > 0 {
			prev := &out[n-1]
			sameAPI := role == llm.RoleAssistant && prev.Role == llm.RoleAssistant && apiID != "" && apiID == lastAPI
			bothResults := role == llm.RoleUser && prev.Role == llm.RoleUser && allResults(blocks) && allResults(prev.Content)
			withMeta := role == llm.RoleUser && prev.Role == llm.RoleUser && (m.IsMeta || allMeta(prev.Content)) &&
				noResults(blocks) && noResults(prev.Content)
			if sameAPI || bothResults || withMeta {
				prev.Content = append(prev.Content, blocks...)
				continue
			}
		}
		out = append(out, llm.Message{ID: m.UUID, Role: role, Content: blocks})
		lastAPI = apiID
	}
	return out
}

// allMeta reports whether every block is context added for the model.
func allMeta(bs []llm.Block) bool {
	for _, b := range bs {
		if !b.Meta {
			return false
		}
	}
	return len(bs) > 0
}

// noResults reports whether no block is a tool result.
func noResults(bs []llm.Block) bool {
	for _, b := range bs {
		if b.Type == llm.BlockToolResult {
			return false
		}
	}
	return true
}

func allResults(bs []llm.Block) bool {
	for _, b := range bs {
		if b.Type != llm.BlockToolResult {
			return false
		}
	}
	return len(bs) > 0
}

// Flatten renders an entry's message as one line of text: its text
// blocks, each tool call as "[tool NAME input]" and each tool result as
// "[result text]" (both cut at 200 characters); thinking is left out.
func Flatten(e Entry) string {
	var parts []string
	cut := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if r := []rune(s); len(r) > 200 {
			return string(r[:200]) + "…"
		}
		return s
	}
	if e.Type == TypeSystem {
		var s string
		if json.Unmarshal(e.Content, &s) == nil && s != "" {
			parts = append(parts, s)
		} else if e.Subtype != "" {
			parts = append(parts, "["+e.Subtype+"]")
		}
	}
	for _, b := range e.Blocks() {
		switch b.Type {
		case "text":
			if t := strings.TrimSpace(b.Text); t != "" {
				parts = append(parts, t)
			}
		case "tool_use":
			parts = append(parts, "[tool "+b.Name+" "+cut(string(b.Input))+"]")
		case "tool_result":
			parts = append(parts, "[result "+cut(b.ResultText())+"]")
		}
	}
	return strings.Join(parts, "\n")
}
