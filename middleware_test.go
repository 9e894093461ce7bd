package agentmem_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/llm"
)

// TestModelMiddlewareKeepsTheCheckpoint: with Options.History, the
// middleware hands the model each user message under the ID of the
// checkpoint UserMessage took for it, with every block UserMessage made,
// and rewinding the session's file history to that ID undoes the memory
// writes of the turn.
func TestModelMiddlewareKeepsTheCheckpoint(t *testing.T) {
	project, config := home(t)
	mem, err := agentmem.New(afero.NewOsFs(), nil, agentmem.Options{ProjectRoot: project, ConfigHome: config, History: true,
		Disable: agentmem.Extraction | agentmem.SessionSummary | agentmem.Consolidation})
	require.NoError(t, err)
	file := filepath.Join(mem.Dir(), "deploys.md")
	write := func(body string) json.RawMessage {
		raw, _ := json.Marshal(map[string]string{"file_path": file, "content": "---\nname: Deploys\ndescription: d\ntype: project\n---\n" + body + "\n"})
		return raw
	}
	var mu sync.Mutex
	var seen []llm.Request
	inner := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleUser && last.Text() != "" {
			body := "Tuesdays."
			if len(req.Messages) > 1 {
				body = "Thursdays."
			}
			return llm.Response{Message: llm.Message{ID: "w" + u0(len(req.Messages)), Role: llm.RoleAssistant,
				Content: []llm.Block{llm.ToolUseBlock("call"+u0(len(req.Messages)), "Write", write(body))}}, StopReason: llm.StopToolUse}, nil
		}
		return llm.Response{Message: llm.Message{ID: "a" + u0(len(req.Messages)), Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("saved")}}, StopReason: llm.StopEndTurn}, nil
	})
	model := mem.Model(inner)
	ctx := context.Background()
	tools := map[string]llm.Tool{}
	for _, tool := range mem.Tools() {
		tools[tool.Spec.Name] = tool
	}
	loop := func(conv []llm.Message) []llm.Message {
		for {
			resp, err := model.Generate(ctx, llm.Request{Messages: conv})
			require.NoError(t, err)
			conv = append(conv, resp.Message)
			if len(resp.Message.ToolUses()) == 0 {
				return conv
			}
			var results []llm.Block
			for _, u := range resp.Message.ToolUses() {
				out, err := tools[u.ToolName].Call(ctx, u.Input)
				require.NoError(t, err)
				results = append(results, llm.ToolResultBlock(u.ToolUseID, out, false))
			}
			conv = append(conv, llm.Message{ID: "tr" + u0(len(conv)), Role: llm.RoleUser, Content: results})
		}
	}
	conv := loop([]llm.Message{msg("u1", llm.RoleUser, "remember: deploys on Tuesdays")})
	loop(append(conv, msg("u2", llm.RoleUser, "no, Thursdays")))
	require.NoError(t, mem.Close())

	require.Len(t, seen, 4)
	first, second := seen[0].Messages[0], seen[2].Messages[4]
	require.NotEqual(t, "u1", first.ID, "the model sees the checkpoint's ID")
	require.NotEqual(t, "u2", second.ID)
	assert.Equal(t, first.ID, seen[3].Messages[0].ID, "the same ID on every later call")
	assert.Equal(t, "remember: deploys on Tuesdays", first.Content[len(first.Content)-1].Text, "the host's text, after the blocks UserMessage put before it")

	h, err := filehistory.Open(afero.NewOsFs(), config, mem.SessionID(), filehistory.Options{})
	require.NoError(t, err)
	require.True(t, h.CanRewind(first.ID), "a checkpoint was taken for the first message")
	require.True(t, h.CanRewind(second.ID), "and for the second")
	_, err = h.Rewind(ctx, second.ID, filehistory.RewindOptions{})
	require.NoError(t, err)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(got), "Tuesdays.", "the second turn's write is undone")
	_, err = h.Rewind(ctx, first.ID, filehistory.RewindOptions{})
	require.NoError(t, err)
	assert.NoFileExists(t, file, "the first turn's write is undone")
}
