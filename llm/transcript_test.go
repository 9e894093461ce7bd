package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/stretchr/testify/assert"
)

func TestMessagesAfter(t *testing.T) {
	msgs := []llm.Message{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	assert.Equal(t, msgs[2:], llm.MessagesAfter(msgs, "b"))
	assert.Empty(t, llm.MessagesAfter(msgs, "c"))
	assert.Equal(t, msgs, llm.MessagesAfter(msgs, ""))
	assert.Equal(t, msgs, llm.MessagesAfter(msgs, "gone"), "a cursor no longer present means everything")
}

func TestRenderTranscript(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("fix the build")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("looking"), llm.ToolUseBlock("1", "Read", json.RawMessage(`{"file_path":"/w/main.go"}`)), llm.ToolUseBlock("2", "Think", nil)}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("1", strings.Repeat("x", 600), false)}},
	}
	got := llm.RenderTranscript(msgs, llm.TranscriptOptions{})
	assert.Equal(t, "user: fix the build\n\nassistant: looking\n[used Read on /w/main.go]\n[used Think]\n\nuser: [result: "+strings.Repeat("x", 500)+" ...]\n", got)
	assert.NotContains(t, llm.RenderTranscript(msgs, llm.TranscriptOptions{ToolResultBytes: -1}), "[result")
	long := []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(strings.Repeat("é", 10_000))}}}
	cut := llm.RenderTranscript(long, llm.TranscriptOptions{MaxBytes: 1000})
	assert.True(t, strings.HasPrefix(cut, "[earlier messages left out]\n"))
	assert.LessOrEqual(t, len(cut), 1000+40)
	assert.True(t, strings.HasSuffix(cut, "é\n"), "never splits a character")
}
