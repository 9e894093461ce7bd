// Command undo shows a host undoing a background job: extraction, driven
// by a scripted model (no API key needed), saves a wrong memory and points
// MEMORY.md at it; the host sees the run's checkpoint in the extractor's
// event, previews the rewind, and rewinds, which deletes the wrong memory
// and restores the index. Then the main agent's memory tools refuse to
// overwrite a file someone changed after the agent read it.
//
//	go run ./examples/undo
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/extract"
	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/memtools"
)

func main() {
	root, err := os.MkdirTemp("", "agentmem-undo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(root)
	if err := Run(context.Background(), os.Stdout, root); err != nil {
		fmt.Fprintln(os.Stderr, "undo:", err)
		os.Exit(1)
	}
}

// Run works in a memory directory under root and prints what happens.
func Run(ctx context.Context, w io.Writer, root string) error {
	fsys := afero.NewOsFs()
	dir := filepath.Join(root, "memory")
	index := "- [Release days](release_days.md) — no deploys on Fridays\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(index), 0o644); err != nil {
		return err
	}

	// One file history for the extractor's runs.
	history, err := filehistory.NewTracker(fsys, filepath.Join(root, "config"), "extract-runs", filehistory.Options{})
	if err != nil {
		return err
	}
	model := llmtest.New(
		llmtest.ToolUse("t1", memdir.ToolRead, map[string]any{"file_path": dir + "/MEMORY.md"}),
		llmtest.ToolUse("t2", memdir.ToolWrite, map[string]any{"file_path": dir + "/deploy_friday.md",
			"content": "---\nname: Deploy days\ndescription: deploy on Friday evenings\ntype: feedback\n---\nAlways deploy on Friday evening.\n"}),
		llmtest.ToolUse("t3", memdir.ToolEdit, map[string]any{"file_path": dir + "/MEMORY.md", "old_string": "Fridays\n",
			"new_string": "Fridays\n- [Deploy days](deploy_friday.md) — deploy on Friday evenings\n"}),
		llmtest.Text("Saved the deploy preference."),
	)
	var finished extract.Event
	memDir, err := memdir.NewDir(fsys, dir, memdir.DirOptions{})
	if err != nil {
		return err
	}
	ex, err := extract.New(memDir, model, extract.Options{History: history, Observer: func(ev extract.Event) {
		if ev.Kind == extract.EventFinished {
			finished = ev
		}
	}})
	if err != nil {
		return err
	}
	defer ex.Close()
	ex.OnTurnEnd(context.Background(), []llm.Message{
		{ID: "u1", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Could we deploy this on Friday?")}},
		{ID: "a1", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("No: releases go out Tuesday to Thursday.")}},
	}, extract.TurnInfo{})
	if err := ex.Drain(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "extraction wrote %d files; checkpoint %s\n", len(finished.Files), finished.Checkpoint)

	preview, err := history.Rewind(ctx, finished.Checkpoint, filehistory.RewindOptions{DryRun: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "a rewind would change %d files (+%d -%d lines)\n", len(preview.FilesChanged), preview.Insertions, preview.Deletions)
	if _, err := history.Rewind(ctx, finished.Checkpoint, filehistory.RewindOptions{}); err != nil {
		return err
	}
	got, _ := os.ReadFile(filepath.Join(dir, "MEMORY.md"))
	_, statErr := os.Stat(filepath.Join(dir, "deploy_friday.md"))
	fmt.Fprintf(w, "rewound: MEMORY.md restored=%v, wrong memory deleted=%v\n", string(got) == index, os.IsNotExist(statErr))

	// Read-before-write: the main agent read the index, the user edits it,
	// the agent's Write is refused and nothing of the user's edit is lost.
	tools, err := memtools.New(memDir, memtools.Options{})
	if err != nil {
		return err
	}
	call := func(name string, input string) error {
		for _, tl := range tools.Tools() {
			if tl.Spec.Name == name {
				_, err := tl.Call(ctx, []byte(input))
				return err
			}
		}
		return fmt.Errorf("no tool %s", name)
	}
	path := dir + "/MEMORY.md"
	if err := call(memdir.ToolRead, `{"file_path":"`+path+`"}`); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(index+"- [On call](on_call.md) — the user's own line\n"), 0o644); err != nil {
		return err
	}
	err = call(memdir.ToolWrite, `{"file_path":"`+path+`","content":"- overwritten\n"}`)
	fmt.Fprintf(w, "agent's stale write: %v\n", err)
	return nil
}
