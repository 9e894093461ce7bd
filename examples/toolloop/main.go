// Command toolloop is the host loop to copy: a scripted agent that runs
// real tools (its own Write, through the memory guard, and the memory's
// Read), gets memories recalled, is compacted, and is resumed after a
// restart, with memory through the front door. No API key or network.
//
//	go run ./examples/toolloop
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/llm"
)

// open starts or resumes the session with memory (host code).
func open(model llm.Model, project, config, session string, resume bool) (*agentmem.Memory, error) {
	return agentmem.New(afero.NewOsFs(), model, agentmem.Options{ProjectRoot: project, ConfigHome: config,
		SessionID: session, Resume: resume, History: true, Disable: agentmem.Consolidation})
}

// turn runs one user turn of the host's tool loop (host code).
func turn(ctx context.Context, w io.Writer, mem *agentmem.Memory, model llm.Model, host []llm.Tool, conv []llm.Message, prompt string) ([]llm.Message, error) {
	system, err := mem.SystemPrompt(ctx)
	if err != nil {
		return nil, err
	}
	byName, specs := map[string]llm.Tool{}, []llm.ToolSpec{}
	for _, t := range append(host, mem.Tools()...) { // the host's own tools first: the memory's fill the gaps
		if _, dup := byName[t.Spec.Name]; !dup {
			byName[t.Spec.Name], specs = t, append(specs, t.Spec)
		}
	}
	permission := mem.Guard(nil)
	conv = append(conv, mem.UserMessage(ctx, prompt))
	for {
		reply, err := model.Generate(ctx, llm.Request{System: system, Messages: conv, Tools: specs})
		if err != nil {
			return nil, err
		}
		conv = append(conv, reply.Message)
		if len(reply.Message.ToolUses()) == 0 {
			fmt.Fprintf(w, "user> %s\nagent> %s\n", prompt, reply.Message.Text())
			break
		}
		var results []llm.Block
		for _, use := range reply.Message.ToolUses() {
			call := llm.ToolCall{ID: use.ToolUseID, Name: use.ToolName, Input: use.Input}
			out, failed := "", false
			if d := permission(ctx, call); !d.Allow {
				out, failed = d.Reason, true
			} else if out, err = byName[call.Name].Call(ctx, call.Input); err != nil {
				out, failed = err.Error(), true
			}
			mem.ToolCalled(call)
			fmt.Fprintf(w, "tool %s: %s\n", call.Name, out)
			results = append(results, llm.ToolResultBlock(call.ID, out, failed))
		}
		conv = append(conv, llm.Message{Role: llm.RoleUser, Content: results})
	}
	mem.TurnEnded(ctx, agentmem.Turn{Messages: conv, Prefix: &llm.Prefix{System: system, Tools: specs}})
	return conv, nil
}
