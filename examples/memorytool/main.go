// Command memorytool runs Anthropic's memory tool (memory_20250818) on a
// memory directory through the Anthropic adapter, offline: a stand-in for
// the Messages API, served in this process, plays a model that looks at
// /memories, saves a preference, fixes it, and tries to read outside.
// With ANTHROPIC_API_KEY set it talks to the real API instead.
//
//	go run ./examples/memorytool
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentmem-sdk/agentmem/memdir"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/agentmem-sdk/agentmem/memorytool"
)

func main() {
	root, err := os.MkdirTemp("", "agentmem-memorytool-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(root)
	cfg := anthropic.Options{APIKey: os.Getenv("ANTHROPIC_API_KEY")}
	if cfg.APIKey == "" {
		srv := httptest.NewServer(scriptedAPI())
		defer srv.Close()
		cfg = anthropic.Options{APIKey: "offline", BaseURL: srv.URL, MaxRetries: -1}
	}
	if err := Run(context.Background(), os.Stdout, filepath.Join(root, "memory"), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "memorytool:", err)
		os.Exit(1)
	}
}

// Run gives the model the memory tool on dir and prints every call.
func Run(ctx context.Context, w io.Writer, dir string, cfg anthropic.Options) error {
	model, err := anthropic.New(cfg)
	if err != nil {
		return err
	}
	memDir, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		return err
	}
	handler, err := memorytool.New(memDir)
	if err != nil {
		return err
	}
	res, err := llm.RunAgent(ctx, model, llm.Task{
		System:   "You have a memory directory at /memories. Check it before you answer and keep it up to date.",
		Prompt:   "I use tabs, not spaces, in Go code. Please remember that.",
		Tools:    []llm.Tool{handler.Tool()},
		MaxTurns: 8,
	})
	if err != nil {
		return err
	}
	for _, c := range res.ToolCalls {
		status := "ok"
		if c.Failed {
			status = "refused"
		}
		fmt.Fprintf(w, "> %s\n%s: %s\n\n", c.Input, status, c.Output)
	}
	fmt.Fprintf(w, "model: %s\n", res.Final)
	index, _ := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	fmt.Fprintf(w, "MEMORY.md: %s", index)
	return nil
}

// scriptedAPI answers /v1/messages like a model that uses the memory
// tool; the step is the number of assistant turns in the request.
func scriptedAPI() http.Handler {
	steps := []any{
		map[string]any{"command": "view", "path": "/memories"},
		map[string]any{"command": "create", "path": "/memories/go_style.md", "file_text": "---\nname: Go style\ndescription: how the user formats Go code\ntype: user\n---\nThe user indents with spaces.\n"},
		map[string]any{"command": "str_replace", "path": "/memories/go_style.md", "old_str": "indents with spaces", "new_str": "indents Go code with tabs (gofmt), never spaces"},
		map[string]any{"command": "view", "path": "/memories/../../etc/passwd"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		step := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				step++
			}
		}
		var content []any
		stop := "tool_use"
		if step < len(steps) {
			content = []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", step), "name": "memory", "input": steps[step]}}
		} else {
			content, stop = []any{map[string]any{"type": "text", "text": "Saved: you use tabs in Go."}}, "end_turn"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("msg_%d", step), "type": "message", "role": "assistant",
			"model": "claude-sonnet-4-5", "content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
	})
}
