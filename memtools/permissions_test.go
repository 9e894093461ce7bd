package memtools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decide(t *testing.T, perm llm.PermissionFunc, name string, input map[string]any) llm.Decision {
	t.Helper()
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	return perm(context.Background(), llm.ToolCall{ID: "1", Name: name, Input: raw})
}

func TestExtractPermissionTable(t *testing.T) {
	fsys := afero.NewMemMapFs()
	const auto = "/c/projects/p/memory"
	perm := ExtractPermission(dirAt(fsys, auto+"/"), []string{"/c/projects/p/memory/logs"})
	secret := "token " + "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "aB3dE5"
	places := map[string]string{
		"inside":  auto + "/notes.md",
		"outside": "/c/projects/p/other.md",
		"sibling": auto + "-evil/x.md",
		"team":    auto + "/team/ci.md",
		"dotdot":  auto + "/../secrets.md",
	}
	// Every tool against every place; writes carry either clean text or a
	// secret. Read tools may look anywhere in the memory dirs; write tools
	// only inside the auto dir. A secret passes the permission: the write
	// gate scans what the write leaves in the file, once
	// (TestTeamSecretsRefusedWithoutPermissionRule).
	type row struct {
		tool, place, content string
		allow                bool
	}
	var table []row
	readTools := []string{memdir.ToolRead, memdir.ToolGrep, memdir.ToolGlob, memdir.ToolList}
	for _, tool := range readTools {
		for place, ok := range map[string]bool{"inside": true, "team": true, "outside": false, "sibling": false, "dotdot": false} {
			table = append(table, row{tool, place, "", ok})
		}
	}
	for _, tool := range []string{memdir.ToolWrite, memdir.ToolEdit} {
		for place, ok := range map[string]bool{"inside": true, "team": true, "outside": false, "sibling": false, "dotdot": false} {
			table = append(table, row{tool, place, "fine", ok})
		}
		table = append(table, row{tool, "team", secret, true}, row{tool, "inside", secret, true})
	}
	table = append(table, row{"Bash", "inside", "", false}, row{"WebFetch", "inside", "", false}, row{"NotebookEdit", "inside", "fine", false})
	for _, c := range table {
		t.Run(c.tool+" "+c.place+" "+c.content[:min(len(c.content), 4)], func(t *testing.T) {
			p := places[c.place]
			in := map[string]any{"file_path": p, "path": p, "content": c.content, "old_string": "x", "new_string": c.content, "pattern": "x"}
			d := decide(t, perm, c.tool, in)
			assert.Equal(t, c.allow, d.Allow, "reason: %s", d.Reason)
			if !d.Allow {
				assert.NotEmpty(t, d.Reason, "the model is told why")
				assert.NotContains(t, d.Reason, "ghp_", "a denial never repeats the secret")
			}
		})
	}
	assert.True(t, decide(t, perm, memdir.ToolGrep, map[string]any{"pattern": "x"}).Allow, "no path: the tool's own default")
	assert.True(t, decide(t, perm, memdir.ToolRead, map[string]any{"file_path": "/c/projects/p/memory/logs/2026/01/x.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolWrite, map[string]any{"file_path": "relative.md", "content": "x"}).Allow)
	d := perm(context.Background(), llm.ToolCall{Name: memdir.ToolWrite, Input: json.RawMessage(`[1]`)})
	assert.False(t, d.Allow)
}

func TestSessionPermission(t *testing.T) {
	perm := SessionPermission("/c/s/summary.md")
	assert.True(t, decide(t, perm, memdir.ToolEdit, map[string]any{"file_path": "/c/s/summary.md"}).Allow)
	assert.True(t, decide(t, perm, memdir.ToolEdit, map[string]any{"file_path": "/c/s/./summary.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolEdit, map[string]any{"file_path": "/c/s/other.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolEdit, map[string]any{}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolWrite, map[string]any{"file_path": "/c/s/summary.md"}).Allow)
	assert.False(t, decide(t, perm, memdir.ToolRead, map[string]any{"file_path": "/c/s/summary.md"}).Allow)
}

func TestAgentWithMemoryTools(t *testing.T) {
	// The loop, the tools and the rule together: a denied write outside,
	// then a write inside that lands.
	fsys := afero.NewMemMapFs()
	const auto = "/c/memory"
	require.NoError(t, fsys.MkdirAll(auto, 0o755))
	ts, err := New(dirAt(fsys, auto), Options{})
	require.NoError(t, err)
	steps := []llm.Response{
		toolUse("1", memdir.ToolWrite, map[string]any{"file_path": "/etc/cron.d/x", "content": "x"}),
		toolUse("2", memdir.ToolWrite, map[string]any{"file_path": auto + "/user_role.md", "content": "---\nname: Role\ntype: user\n---\nData scientist\n"}),
		{Message: llm.Message{Content: []llm.Block{llm.TextBlock("saved")}}, StopReason: llm.StopEndTurn},
	}
	i := 0
	model := llm.ModelFunc(func(context.Context, llm.Request) (llm.Response, error) { i++; return steps[i-1], nil })
	res, err := llm.RunAgent(context.Background(), model, llm.Task{Prompt: "save", Tools: ts.Tools(), Permission: ExtractPermission(dirAt(fsys, auto), nil)})
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 2)
	assert.True(t, res.ToolCalls[0].Denied)
	assert.False(t, res.ToolCalls[1].Denied)
	assert.Equal(t, []string{auto + "/user_role.md"}, ts.Written())
}

func toolUse(id, name string, input map[string]any) llm.Response {
	raw, _ := json.Marshal(input)
	return llm.Response{Message: llm.Message{Content: []llm.Block{llm.ToolUseBlock(id, name, raw)}}, StopReason: llm.StopToolUse}
}
