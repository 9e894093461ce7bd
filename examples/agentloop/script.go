package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// scriptedModel plays every model the front door calls: the main agent
// (answers from what memory surfaced), extraction (saves the deploy rule as
// team memory), the session summary (titles the notes) and consolidation
// (touches up the memory it finds). Each call's step is the number of
// assistant turns in its request, so concurrent runs do not interfere.
type scriptedModel struct {
	mu    sync.Mutex
	calls map[llm.Purpose]int
}

func newScriptedModel() *scriptedModel { return &scriptedModel{calls: map[llm.Purpose]int{}} }

var (
	memoryDirRe = regexp.MustCompile(`Memory directory: (\S+)`)
	dreamDirRe  = regexp.MustCompile(`the Markdown files in (\S+) and their index`)
	notesRe     = regexp.MustCompile(`Edit tool on (\S+)\.$`)
)

// Calls reports how many model calls each purpose made.
func (m *scriptedModel) Calls(p llm.Purpose) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[p]
}

func (m *scriptedModel) Generate(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.calls[req.Purpose]++
	m.mu.Unlock()
	step := 0
	var all strings.Builder
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleAssistant {
			step++
		}
		all.WriteString(msg.Text())
	}
	use := func(name string, in map[string]any) (llm.Response, error) {
		raw, _ := json.Marshal(in)
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(fmt.Sprintf("t%d", step), name, raw)}},
			StopReason: llm.StopToolUse}, nil
	}
	text := func(s string, tokens int) (llm.Response, error) {
		return llm.Response{Message: llm.Message{ID: fmt.Sprintf("a%d", len(req.Messages)), Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(s)}},
			StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: tokens, OutputTokens: 20}}, nil
	}
	switch req.Purpose {
	case llm.PurposeExtractMemories:
		dir := memoryDirRe.FindStringSubmatch(all.String())
		if dir == nil || !strings.Contains(all.String(), "Remember:") || step > 1 {
			return text("Nothing new to save.", 0)
		}
		team := filepath.Join(dir[1], "team")
		if step == 0 {
			return use(memdir.ToolWrite, map[string]any{"file_path": filepath.Join(team, "deploy_days.md"),
				"content": "---\nname: Deploy days\ndescription: when releases may go out (never on Fridays)\ntype: project\n---\nWe never deploy on Fridays; releases go out on Tuesdays.\n"})
		}
		return use(memdir.ToolWrite, map[string]any{"file_path": filepath.Join(team, "MEMORY.md"),
			"content": "- [Deploy days](deploy_days.md) — when releases may go out (never on Fridays)\n"})
	case llm.PurposeSessionMemory:
		notes := notesRe.FindStringSubmatch(req.System)
		if notes == nil || step > 0 {
			return text("Updated.", 0)
		}
		return use(memdir.ToolEdit, map[string]any{"file_path": notes[1], "old_string": "_A short title for what this session is about._",
			"new_string": "_A short title for what this session is about._\nRelease planning"})
	case llm.PurposeAutoDream:
		dir := dreamDirRe.FindStringSubmatch(req.System)
		file := ""
		if dir != nil {
			file = filepath.Join(dir[1], "team", "deploy_days.md")
		}
		switch step {
		case 0:
			return use(memdir.ToolRead, map[string]any{"file_path": file})
		case 1:
			return use(memdir.ToolEdit, map[string]any{"file_path": file, "old_string": "go out on Tuesdays.", "new_string": "go out on Tuesdays (confirmed in six sessions)."})
		}
		return text("Consolidated: improved 1 memory.", 0)
	}
	// The main agent: answer from what memory surfaced with the message.
	last := req.Messages[len(req.Messages)-1].Text()
	switch {
	case strings.Contains(last, "Remember:"):
		return text("Noted: no deploys on Fridays, releases on Tuesdays.", 11_000)
	case strings.Contains(last, "never deploy on Fridays"):
		return text("No: memory says we never deploy on Fridays; releases go out on Tuesdays.", 11_000)
	case strings.Contains(last, "Friday"):
		return text("Probably, I know of no rule against it.", 11_000)
	}
	return text("You're welcome.", 11_000)
}
