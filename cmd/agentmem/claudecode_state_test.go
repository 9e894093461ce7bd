package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/transcript"
)

// A Claude Code session through agentmem's session commands and
// transcript.Resume: listed, shown, found by a word that only a tool
// result holds, and resumed into the conversation Claude Code itself
// sends when it resumes the session.
func TestClaudeCodeSessionsThroughAgentmem(t *testing.T) {
	p := newCCProject(t)
	notes := filepath.Join(p.root, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("the deploy password hint is quokka-marmalade\n"), 0o644))
	p.stub.script("read", []ccCall{{Name: "Read", Input: map[string]string{"file_path": notes}}})
	res := p.claude("step:read the notes file please")

	out, errOut, code := p.agentmem("sessions", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, res.SessionID)
	out, errOut, code = p.agentmem("sessions", "show", res.SessionID)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "step:read the notes file please")
	assert.Contains(t, out, "done.")
	assert.NotRegexp(t, regexp.MustCompile(`(?m)^\s*attachment:\s*$`), out, "show leaves out empty entries")
	out, errOut, code = p.agentmem("sessions", "search", "quokka-marmalade")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, res.SessionID, "search finds a word only a tool result holds")

	// Resume: what agentmem rebuilds against what Claude Code sends.
	store, err := transcript.NewJSONLStore(afero.NewOsFs(), transcript.ProjectDir(p.config, p.root), transcript.Options{})
	require.NoError(t, err)
	r, err := transcript.Resume(context.Background(), store, res.SessionID)
	require.NoError(t, err)
	ours := conversation(fromLLM(transcript.ToLLM(r.Messages)))
	p.claude("step:again", "--resume", res.SessionID)
	var theirs []string
	for _, req := range p.stub.requests() {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.text(), "step:again") {
			theirs = conversation(req.Messages[:len(req.Messages)-1])
			break
		}
	}
	require.NotEmpty(t, theirs, "Claude Code sent the resumed conversation")
	assert.Equal(t, theirs, ours, "agentmem resumes the turns Claude Code resumes")
}

// fromLLM puts llm messages in the shape the stub reads requests in.
func fromLLM(msgs []llm.Message) []ccMessage {
	var out []ccMessage
	for _, m := range msgs {
		var bs []ccBlock
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockText:
				bs = append(bs, ccBlock{Type: "text", Text: b.Text})
			case llm.BlockToolUse:
				bs = append(bs, ccBlock{Type: "tool_use", Name: b.ToolName})
			case llm.BlockToolResult:
				bs = append(bs, ccBlock{Type: "tool_result"})
			}
		}
		content, _ := json.Marshal(bs)
		out = append(out, ccMessage{Role: string(m.Role), Content: content})
	}
	return out
}

// conversation reduces messages to what a resume must keep: each
// message's role and its text, tool calls and tool results, leaving out
// the context a client adds to each request (<system-reminder> blocks,
// the "system" role message of the environment).
func conversation(msgs []ccMessage) []string {
	var out []string
	for _, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			continue
		}
		for _, b := range m.blocks() {
			switch b.Type {
			case "text":
				if strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
					continue
				}
				out = append(out, m.Role+" text: "+strings.TrimSpace(b.Text))
			case "tool_use":
				out = append(out, m.Role+" tool_use "+b.Name)
			case "tool_result":
				out = append(out, m.Role+" tool_result")
			}
		}
	}
	return out
}

// The file history Claude Code keeps (relative keys with realParentDir,
// file-history-delta lines) through `agentmem history` and `rewind`.
func TestClaudeCodeFileHistoryThroughAgentmem(t *testing.T) {
	p := newCCProject(t)
	p.extraEnv = append(p.extraEnv, "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true")
	p.ccArgs = []string{"--permission-mode", "acceptEdits"}
	notes := filepath.Join(p.root, "notes.txt")
	deep := filepath.Join(p.root, "sub", "deep.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(deep), 0o755))
	require.NoError(t, os.WriteFile(notes, []byte("v1\n"), 0o644))
	p.stub.script("change", []ccCall{
		{Name: "Read", Input: map[string]string{"file_path": notes}},
		{Name: "Write", Input: map[string]string{"file_path": notes, "content": "v2\n"}},
		{Name: "Write", Input: map[string]string{"file_path": deep, "content": "new and deep\n"}},
	})
	res := p.claude("step:change the notes")
	got, err := os.ReadFile(notes)
	require.NoError(t, err)
	require.Equal(t, "v2\n", string(got), "Claude Code wrote the file")

	out, errOut, code := p.agentmem("history", "--session", res.SessionID, "--json")
	require.Equal(t, 0, code, errOut)
	var cps []historyEntry
	require.NoError(t, json.Unmarshal([]byte(out), &cps), out)
	require.NotEmpty(t, cps, "Claude Code's checkpoints are listed")
	cp := cps[len(cps)-1]
	assert.ElementsMatch(t, []string{notes, deep}, cp.Changed, out)

	out, errOut, code = p.agentmem("rewind", cp.Checkpoint, "--session", res.SessionID, "--dry-run")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, notes)
	got, _ = os.ReadFile(notes)
	assert.Equal(t, "v2\n", string(got), "a dry run changes nothing")

	out, errOut, code = p.agentmem("rewind", cp.Checkpoint, "--session", res.SessionID)
	require.Equal(t, 0, code, out+errOut)
	got, err = os.ReadFile(notes)
	require.NoError(t, err)
	assert.Equal(t, "v1\n", string(got), "the rewind put Claude Code's edit back")
	assert.NoFileExists(t, deep, "and removed the file Claude Code created")
}
