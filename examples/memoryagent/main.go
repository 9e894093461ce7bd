// Command memoryagent shows a host wiring a model into agentmem's bounded
// agent loop with the permission-checked memory tools: the "forked agent"
// that saves what a conversation taught it.
//
// Offline (default) it plays a scripted model, including a write outside
// the memory directory that the permission rule refuses. With
// ANTHROPIC_API_KEY set it asks the real Messages API instead.
//
//	go run ./examples/memoryagent
//	ANTHROPIC_API_KEY=... go run ./examples/memoryagent
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/memtools"
	"github.com/spf13/afero"
)

const conversation = `user: From now on, never mock the database in integration tests. Last quarter a mocked test hid a broken migration.
assistant: Understood: integration tests will use the real database.`

func main() {
	if err := run(context.Background(), os.Stdout, os.Getenv("ANTHROPIC_API_KEY")); err != nil {
		fmt.Fprintln(os.Stderr, "memoryagent:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, apiKey string) error {
	tmp, err := os.MkdirTemp("", "agentmem-memoryagent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fsys := afero.NewOsFs()
	autoDir := filepath.Join(tmp, "memory")
	if err := memdir.EnsureMemoryDir(fsys, memdir.TeamMemPath(autoDir)); err != nil {
		return err
	}

	// The memory tools, confined to the memory directory, and the rule the
	// background extraction runs under.
	memDir, err := memdir.NewDir(fsys, autoDir, memdir.DirOptions{})
	if err != nil {
		return err
	}
	tools, err := memtools.New(memDir, memtools.Options{})
	if err != nil {
		return err
	}
	perm := memtools.ExtractPermission(memDir, nil)

	var model llm.Model
	if apiKey != "" {
		model, err = anthropic.New(anthropic.Options{APIKey: apiKey})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "==> using the Anthropic Messages API")
	} else {
		model = scripted(autoDir)
		fmt.Fprintln(w, "==> using a scripted model (set ANTHROPIC_API_KEY for the real one)")
	}

	prompt := "Here is the latest part of a conversation:\n\n" + conversation +
		"\n\nSave anything worth remembering in later sessions as a memory file in " + autoDir +
		" (frontmatter with name, description and type), and add a one-line pointer to " +
		filepath.Join(autoDir, memdir.EntrypointName) + ". Then answer with one line saying what you saved."
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := llm.RunAgent(ctx, model, llm.Task{
		Purpose:    llm.PurposeExtractMemories,
		System:     "You maintain a memory directory for a coding assistant. Use only the tools given.",
		Prompt:     prompt,
		Tools:      tools.Tools(),
		Permission: perm,
		MaxTurns:   5,
	})
	for _, c := range res.ToolCalls {
		status := "ok"
		switch {
		case c.Denied:
			status = "denied: " + c.Reason
		case c.Failed:
			status = "failed: " + c.Output
		}
		fmt.Fprintf(w, "    tool %-5s %s\n", c.Name, status)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "==> %d turns, %d input and %d output tokens\n", res.Turns, res.Usage.InputTokens, res.Usage.OutputTokens)
	fmt.Fprintf(w, "==> model: %s\n", res.Final)
	for _, p := range tools.Written() {
		rel, _ := filepath.Rel(autoDir, p)
		fmt.Fprintf(w, "==> wrote %s\n", rel)
	}
	headers, err := memdir.ScanMemoryFiles(ctx, fsys, autoDir, memdir.ScanOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "==> manifest:\n    %s\n", strings.ReplaceAll(memdir.FormatManifest(headers), "\n", "\n    "))
	return nil
}

// scripted plays what a model typically does: look, write the topic file,
// try (and fail) to write outside, add the index pointer, answer.
func scripted(autoDir string) llm.Model {
	return llmtest.New(
		llmtest.ToolUse("t1", memdir.ToolList, map[string]any{}),
		llmtest.ToolUse("t2", memdir.ToolWrite, map[string]any{
			"file_path": filepath.Join(autoDir, "testing_policy.md"),
			"content": "---\nname: Testing policy\ndescription: Integration tests hit the real database, never mocks\ntype: feedback\n---\n\n" +
				"Integration tests use the real database, never mocks.\n\n**Why:** a mocked test hid a broken migration.\n" +
				"**How to apply:** use the real database in every new integration test.\n",
		}),
		llmtest.ToolUse("t3", memdir.ToolWrite, map[string]any{"file_path": "/etc/cron.d/memory", "content": "* * * * * true"}),
		llmtest.ToolUse("t4", memdir.ToolWrite, map[string]any{
			"file_path": filepath.Join(autoDir, memdir.EntrypointName),
			"content":   "- [Testing policy](testing_policy.md) — integration tests hit the real database, never mocks\n",
		}),
		llmtest.Text("Saved the testing policy as feedback and indexed it."),
	)
}
