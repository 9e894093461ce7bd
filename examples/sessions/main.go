// Command sessions shows a host recording its own agent's sessions with
// package transcript, in Claude Code's format and place: it records five
// short sessions with a scripted model (no API key needed), closes the
// store, lists the sessions, resumes the last one and continues it, and
// then lets dream consolidate: its "five sessions since last time" gate
// passes without Force, and its agent searches the recorded sessions.
//
//	go run ./examples/sessions
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem-sdk/agentmem/dream"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/llm/llmtest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/transcript"
	"github.com/spf13/afero"
)

func main() {
	home, err := os.MkdirTemp("", "agentmem-sessions-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(home)
	if err := Run(context.Background(), os.Stdout, afero.NewOsFs(), home, "/work/shop"); err != nil {
		fmt.Fprintln(os.Stderr, "sessions:", err)
		os.Exit(1)
	}
}

// topics are what the five recorded sessions talk about.
var topics = []struct{ prompt, tool, result, reply string }{
	{"Why does the checkout test fail on CI?", "ci/quarantine.txt", "checkout_test", "It is quarantined: it needs the real Postgres, which CI starts late."},
	{"Which port does staging use?", "deploy/staging.env", "PORT=8443", "Staging listens on 8443."},
	{"Can we deploy on Friday?", "docs/release.md", "No deploys on Fridays.", "No: releases go out Tuesday to Thursday."},
	{"Where do refunds go?", "handlers/refunds.go", "calls the refunds service", "Through the refunds service, never Stripe directly."},
	{"How are migrations reviewed?", "CODEOWNERS", "migrations/ @db-team", "The db team owns migrations/."},
}

// Run records the sessions under configHome for the project at cwd and
// prints what happens.
func Run(ctx context.Context, w io.Writer, fsys afero.Fs, configHome, cwd string) error {
	dir := transcript.ProjectDir(configHome, cwd)
	store, err := transcript.NewJSONLStore(fsys, dir, transcript.Options{})
	if err != nil {
		return err
	}
	var last string
	for i, tp := range topics {
		model := llmtest.New(
			llmtest.ToolUse("t1", "Read", map[string]string{"file_path": tp.tool}),
			llmtest.Text(tp.reply),
		)
		rec, err := transcript.NewRecorder(store, transcript.Stamp{Cwd: cwd, GitBranch: "main"})
		if err != nil {
			return err
		}
		if err := converse(ctx, rec, model, tp.prompt, tp.result); err != nil {
			return err
		}
		if i == 0 {
			_ = store.SetTitle(ctx, rec.SessionID(), "Flaky checkout test")
		}
		last = rec.SessionID()
		time.Sleep(10 * time.Millisecond) // distinct mtimes, for a stable order
	}
	if err := store.Close(); err != nil {
		return err
	}

	infos, err := store.List(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d sessions in %s\n", len(infos), filepath.Base(dir))
	for _, inf := range infos {
		fmt.Fprintf(w, "  %s  %s\n", inf.SessionID[:8], inf.Title)
	}

	// Resume the newest and continue it.
	r, err := transcript.Resume(ctx, store, last)
	if err != nil {
		return err
	}
	msgs := transcript.ToLLM(r.Messages)
	fmt.Fprintf(w, "resumed %s: %d messages, last: %q\n", last[:8], len(msgs), msgs[len(msgs)-1].Text())
	rec, err := transcript.ContinueRecorder(store, r, transcript.Stamp{})
	if err != nil {
		return err
	}
	msgs = append(msgs, llm.Message{ID: "follow-up", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("And who reviews schema changes?")}},
		llm.Message{ID: "answer", Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("The db team as well.")}})
	if err := rec.Record(ctx, msgs...); err != nil {
		return err
	}
	r, err = transcript.Resume(ctx, store, last)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "continued: %d messages now\n", len(transcript.ToLLM(r.Messages)))

	// Dream: five sessions since the last consolidation pass its gate.
	autoDir := filepath.Join(configHome, "projects", filepath.Base(dir), "memory")
	if err := fsys.MkdirAll(autoDir, 0o755); err != nil {
		return err
	}
	model := llmtest.New(
		llmtest.ToolUse("s1", dream.SearchSessionsTool, map[string]string{"query": "refunds service"}),
		llmtest.Text("Nothing to change."),
	)
	memDir, err := memdir.NewDir(fsys, autoDir, memdir.DirOptions{})
	if err != nil {
		return err
	}
	d, err := dream.New(memDir, model, dream.Options{Transcripts: store, MinHours: 1e-9})
	if err != nil {
		return err
	}
	out := d.MaybeRun(ctx)
	fmt.Fprintf(w, "dream: ran=%v over %d sessions\n", out.Ran, len(out.Sessions))
	for _, req := range model.Requests() {
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == llm.BlockToolResult {
					fmt.Fprintf(w, "dream searched the sessions: %s", firstLine(b.Text))
				}
			}
		}
	}
	return nil
}

// converse runs one turn of a host's agent loop and records it.
func converse(ctx context.Context, rec *transcript.Recorder, model llm.Model, prompt, toolOutput string) error {
	msgs := []llm.Message{{ID: "p", Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(prompt)}}}
	for turn := 0; turn < 3; turn++ {
		resp, err := model.Generate(ctx, llm.Request{Messages: msgs})
		if err != nil {
			return err
		}
		resp.Message.ID = fmt.Sprintf("a%d", turn)
		msgs = append(msgs, resp.Message)
		uses := resp.Message.ToolUses()
		if len(uses) == 0 {
			break
		}
		var results []llm.Block
		for _, u := range uses {
			results = append(results, llm.ToolResultBlock(u.ToolUseID, toolOutput, false))
		}
		msgs = append(msgs, llm.Message{ID: fmt.Sprintf("r%d", turn), Role: llm.RoleUser, Content: results})
	}
	return rec.Record(ctx, msgs...)
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i+1]
		}
	}
	return s + "\n"
}
