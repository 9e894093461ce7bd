// Command agentloop gives a scripted agent memory through the front door:
// six sessions by Ana and one by her teammate Ben, with team sync through a
// server in this process, recall, extraction, a session summary, session
// transcripts and a consolidation. No API key or network is needed.
//
//	go run ./examples/agentloop
package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/llm"
)

// session runs one session of the host's agent loop with memory.
func session(ctx context.Context, w io.Writer, model llm.Model, who, home, project string, team agentmem.TeamOptions, prompts ...string) error {
	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project,
		ConfigHome: filepath.Join(home, ".claude"), HomeDir: home, Team: team, History: true})
	if err != nil {
		return err
	}
	defer mem.Close()
	system, err := mem.SystemPrompt(ctx)
	if err != nil {
		return err
	}
	var conversation []llm.Message
	for i, prompt := range prompts {
		msg := mem.UserMessage(ctx, prompt) // the prompt; relevant memories ride along in a block of their own
		msg.ID = fmt.Sprintf("u%d", i)
		conversation = append(conversation, msg)
		reply, err := model.Generate(ctx, llm.Request{System: system, Messages: conversation, Tools: toolSpecs(mem.Tools())})
		if err != nil {
			return err
		}
		conversation = append(conversation, reply.Message)
		fmt.Fprintf(w, "%s> %s\nagent> %s\n", who, prompts[i], reply.Text())
		mem.TurnEnded(ctx, agentmem.Turn{Messages: conversation, ContextTokens: reply.Usage.InputTokens})
	}
	return mem.Drain(ctx)
}
