package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/transcript"
)

// agentmemTurn takes one turn on session id through the front door, as a
// host does after a restart: it resumes the session, sends prompt (with
// whatever the front door adds) and records reply as the model's answer.
// It returns the conversation the front door resumed.
func (p *ccProject) agentmemTurn(id, prompt, reply string, resume bool) []llm.Message {
	p.t.Helper()
	ctx := context.Background()
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: p.root, ConfigHome: p.config, HomeDir: p.home,
		SessionID: id, Resume: resume, Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(p.t, err)
	resumed := mem.Resumed()
	msg := mem.UserMessage(ctx, prompt)
	msg.ID = transcript.NewUUID()
	answer := llm.Message{ID: transcript.NewUUID(), Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(reply)}}
	mem.TurnEnded(ctx, agentmem.Turn{Messages: append(append(resumed, msg), answer)})
	require.NoError(p.t, mem.Close())
	return resumed
}

// sentBefore returns the conversation Claude Code sent before the message
// that carried prompt.
func (p *ccProject) sentBefore(prompt string) []ccMessage {
	p.t.Helper()
	for _, req := range p.stub.requests() {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == "user" {
				if strings.Contains(m.text(), prompt) {
					return req.Messages[:i]
				}
				break
			}
		}
	}
	p.t.Fatalf("no request ended with %q", prompt)
	return nil
}

// resumeConversation is what transcript.Resume rebuilds of a session.
func (p *ccProject) resumeConversation(id string) []string {
	p.t.Helper()
	store, err := transcript.NewJSONLStore(afero.NewOsFs(), transcript.ProjectDir(p.config, p.root), transcript.Options{})
	require.NoError(p.t, err)
	r, err := transcript.Resume(context.Background(), store, id)
	require.NoError(p.t, err)
	return conversation(fromLLM(transcript.ToLLM(r.Messages)))
}

// Claude Code and agentmem take turns on one session: each resumes after
// the other's turn, both follow the same leaf, so each turn reaches the
// model whichever program takes the next one, and agentmem's Resume shows
// the conversation Claude Code sends.
func TestClaudeCodeAndAgentmemTakeTurns(t *testing.T) {
	p := newCCProject(t)
	res := p.claude("step:one the first turn, by Claude Code")

	// agentmem continues after Claude Code's turn.
	p.agentmemTurn(res.SessionID, "agentmem asks marker-two", "agentmem answers marker-two", true)
	ours := p.resumeConversation(res.SessionID)
	require.Contains(t, ours, "user text: agentmem asks marker-two")

	p.claude("step:three back to Claude Code", "--resume", res.SessionID)
	theirs := conversation(p.sentBefore("step:three"))
	assert.Contains(t, theirs, "user text: agentmem asks marker-two", "agentmem's turn reaches the model when Claude Code resumes")
	assert.Contains(t, theirs, "assistant text: agentmem answers marker-two")
	assert.Equal(t, theirs, ours, "agentmem resumes the turns Claude Code resumes")

	// And agentmem again after Claude Code.
	resumed := conversation(fromLLM(p.agentmemTurn(res.SessionID, "agentmem asks marker-four", "agentmem answers marker-four", true)))
	assert.Contains(t, resumed, "user text: step:three back to Claude Code")
	p.claude("step:five and Claude Code once more", "--resume", res.SessionID)
	theirs = conversation(p.sentBefore("step:five"))
	assert.Contains(t, theirs, "user text: agentmem asks marker-four")
	assert.Equal(t, theirs, p.resumeConversation(res.SessionID)[:len(theirs)], "the same conversation, Claude Code's last turn aside")

	// Each program's entries name the project's branch.
	raw, err := os.ReadFile(filepath.Join(transcript.ProjectDir(p.config, p.root), res.SessionID+".jsonl"))
	require.NoError(t, err)
	var ccBranch, amBranch string
	for _, e := range transcript.ParseAll(raw) {
		if e.Type != transcript.TypeUser {
			continue
		}
		if e.Version == "agentmem" {
			amBranch = e.GitBranch
		} else {
			ccBranch = e.GitBranch
		}
	}
	require.NotEmpty(t, ccBranch)
	assert.Equal(t, ccBranch, amBranch, "agentmem records the branch Claude Code records")
}

// A session agentmem starts, with the index block in its first message,
// resumed by Claude Code: the index reaches the model before the user's
// words, where agentmem first sent it, and agentmem resumes after Claude
// Code's turn the conversation Claude Code sent.
func TestClaudeCodeResumesASessionAgentmemStarted(t *testing.T) {
	p := newCCProject(t)
	require.NoError(t, os.MkdirAll(p.auto, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p.auto, "MEMORY.md"), []byte("- [Deploys](deploys.md) — never on Fridays\n"), 0o644))
	id := transcript.NewUUID()
	p.agentmemTurn(id, "agentmem opens marker-one", "agentmem answers marker-one", false)

	p.claude("step:two Claude Code takes over", "--resume", id)
	sent := p.sentBefore("step:two")
	var first string
	for _, m := range sent {
		if m.Role == "user" && strings.Contains(m.text(), "agentmem opens marker-one") {
			first = m.text()
			break
		}
	}
	require.NotEmpty(t, first, "agentmem's first turn reaches the model")
	at, prompt := strings.Index(first, "- [Deploys](deploys.md)"), strings.Index(first, "agentmem opens marker-one")
	require.GreaterOrEqual(t, at, 0, "the index block is sent again on resume: %s", first)
	assert.Less(t, at, prompt, "the index comes before the user's words, where it was first sent")

	resumed := conversation(fromLLM(p.agentmemTurn(id, "agentmem asks marker-three", "agentmem answers marker-three", true)))
	assert.Equal(t, conversation(p.sentBefore("step:two")), resumed[:len(conversation(sent))], "agentmem resumes what Claude Code sent")
	assert.Contains(t, resumed, "user text: step:two Claude Code takes over")
}
