package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/transcript"
)

func main() {
	root, err := os.MkdirTemp("", "agentmem-toolloop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(root)
	if err := Run(context.Background(), os.Stdout, root); err != nil {
		fmt.Fprintln(os.Stderr, "toolloop:", err)
		os.Exit(1)
	}
}

// writeTool is the host's own Write tool: any file, as a coding agent has.
func writeTool() llm.Tool {
	return llm.Tool{Spec: llm.ToolSpec{Name: "Write", Description: "Write a file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}`)},
		Call: func(_ context.Context, in json.RawMessage) (string, error) {
			var args struct {
				FilePath string `json:"file_path"`
				Content  string `json:"content"`
			}
			if err := json.Unmarshal(in, &args); err != nil {
				return "", err
			}
			if err := os.MkdirAll(filepath.Dir(args.FilePath), 0o755); err != nil {
				return "", err
			}
			return "wrote " + args.FilePath, os.WriteFile(args.FilePath, []byte(args.Content), 0o644)
		}}
}

// Run plays one session in two processes' worth of Memory: the agent saves
// a memory with its own Write (the guard lets it) and tries to put a token
// in team memory (the guard refuses), the conversation is compacted, then
// the session is resumed as after a restart and the agent reads the memory
// it needs; recall does not bring it again.
func Run(ctx context.Context, w io.Writer, root string) error {
	project, config := filepath.Join(root, "shop"), filepath.Join(root, ".claude")
	if err := os.MkdirAll(project, 0o755); err != nil {
		return err
	}
	model, session := &scriptedModel{}, transcript.NewUUID()
	mem, err := open(model, project, config, session, false)
	if err != nil {
		return err
	}
	model.memoryDir = mem.Dir()
	host := []llm.Tool{writeTool()}
	conv, err := turn(ctx, w, mem, model, host, nil, "Remember: we never deploy on Fridays.")
	if err != nil {
		return err
	}
	if _, err = turn(ctx, w, mem, model, host, conv, "Also keep the deploy token for the team."); err != nil {
		return err
	}
	mem.Compacted() // the host summarised the conversation
	if _, err = turn(ctx, w, mem, model, host, []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Summary: deploy rules were saved.")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Understood.")}}}, "Which day is the release?"); err != nil {
		return err
	}
	if err := mem.Close(); err != nil {
		return err
	}

	// A restart: the same session, resumed.
	mem, err = open(model, project, config, session, true)
	if err != nil {
		return err
	}
	defer mem.Close()
	fmt.Fprintf(w, "resumed %d messages\n", len(mem.Resumed()))
	conv, err = turn(ctx, w, mem, model, host, mem.Resumed(), "Can I deploy on Friday?")
	if err != nil {
		return err
	}
	_, err = turn(ctx, w, mem, model, host, conv, "Which day is the release?")
	return err
}
