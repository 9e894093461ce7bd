package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
)

// scriptedModel plays the main agent by the last user prompt, and answers
// every background job with nothing to do.
type scriptedModel struct{ memoryDir string }

func (m *scriptedModel) Generate(_ context.Context, req llm.Request) (llm.Response, error) {
	if req.Purpose != "" {
		return reply(llm.TextBlock("Nothing to do.")), nil
	}
	prompt, afterTool := "", false
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			if b.Type == llm.BlockText && !b.Meta && msg.Role == llm.RoleUser {
				prompt, afterTool = b.Text, false
			}
			if b.Type == llm.BlockToolResult {
				afterTool = true
			}
		}
	}
	recalled := strings.Contains(lastUser(req.Messages), "never deploy on Fridays")
	use := func(name string, in map[string]string) llm.Response {
		raw, _ := json.Marshal(in)
		r := reply(llm.ToolUseBlock(fmt.Sprintf("t%d", len(req.Messages)), name, raw))
		r.StopReason = llm.StopToolUse
		return r
	}
	switch {
	case strings.HasPrefix(prompt, "Remember:") && !afterTool:
		return use("Write", map[string]string{"file_path": filepath.Join(m.memoryDir, "deploy_days.md"),
			"content": "---\nname: Deploy days\ndescription: never deploy on Fridays\ntype: project\n---\nWe never deploy on Fridays.\n"}), nil
	case strings.HasPrefix(prompt, "Also keep the deploy token") && !afterTool:
		return use("Write", map[string]string{"file_path": filepath.Join(m.memoryDir, "team", "deploy_token.md"),
			"content": "token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"}), nil
	case strings.HasPrefix(prompt, "Can I deploy on Friday?") && !afterTool:
		return use("Read", map[string]string{"file_path": filepath.Join(m.memoryDir, "deploy_days.md")}), nil
	case recalled:
		return reply(llm.TextBlock("No: memory says we never deploy on Fridays.")), nil
	case afterTool:
		return reply(llm.TextBlock("Done.")), nil
	}
	return reply(llm.TextBlock("I don't know yet.")), nil
}

func lastUser(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			var b strings.Builder
			for _, blk := range msgs[i].Content {
				b.WriteString(blk.Text)
			}
			return b.String()
		}
	}
	return ""
}

func reply(b llm.Block) llm.Response {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{b}}, StopReason: llm.StopEndTurn,
		Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}
}
