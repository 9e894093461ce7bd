package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Claude Code uses `agentmem mcp` as an MCP server, over stdio (from the
// project's .mcp.json) and over streamable HTTP (claude mcp add): it finds
// the tools, saves a memory and lists it back.
func TestClaudeCodeUsesAgentmemOverMCP(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			p := newCCProject(t)
			switch transport {
			case "stdio":
				cfg := map[string]any{"mcpServers": map[string]any{"agentmem": map[string]any{"command": binary(t), "args": []string{"mcp"}}}}
				writeJSON(t, filepath.Join(p.root, ".mcp.json"), cfg)
				writeJSON(t, filepath.Join(p.config, "settings.json"), map[string]any{"enabledMcpjsonServers": []string{"agentmem"}})
			case "http":
				url := startMCPHTTP(t, p.env(), "--project", p.root)
				cmd := exec.Command(p.bin, "mcp", "add", "--transport", "http", "agentmem", url)
				cmd.Dir, cmd.Env = p.root, p.env()
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "claude mcp add: %s", out)
			}
			p.ccArgs = []string{"--allowedTools", "mcp__agentmem"}
			p.stub.script("mcp", []ccCall{
				{Name: "ToolSearch", Input: map[string]any{"query": "select:mcp__agentmem__memory_save,mcp__agentmem__memory_list", "max_results": 5}},
				{Name: "mcp__agentmem__memory_save", Input: map[string]string{"file": "oncall.md", "name": "On-call rota",
					"description": "who is on call this week", "type": "reference", "body": "The rota lives in the ops wiki."}},
				{Name: "mcp__agentmem__memory_list", Input: map[string]string{}},
			})
			p.claude("step:mcp save the on-call rota")

			results := p.toolResults("step:mcp")
			require.Len(t, results, 3, "three tool results: %q", results)
			assert.Contains(t, results[1], `(oncall.md) — who is on call this week`, "memory_save ran and answered with the index line: %s", results[1])
			assert.Contains(t, results[2], "oncall.md", "memory_list lists it: %s", results[2])
			assert.Contains(t, results[2], "reference")
			raw, err := os.ReadFile(filepath.Join(p.auto, "oncall.md"))
			require.NoError(t, err)
			assert.Contains(t, string(raw), "metadata:\n  node_type: memory\n  type: reference\n", "written in 2.1.328's layout")
			index, err := os.ReadFile(filepath.Join(p.auto, "MEMORY.md"))
			require.NoError(t, err)
			assert.Contains(t, string(index), "(oncall.md)")
		})
	}
}

// toolResults returns, in order, the tool results of the conversation
// that started with prompt, from the last request of it.
func (p *ccProject) toolResults(prompt string) []string {
	p.t.Helper()
	var out []string
	for _, r := range p.stub.requests() {
		if len(r.Messages) == 0 || !strings.Contains(r.Messages[0].text(), prompt) {
			continue
		}
		var these []string
		for _, m := range r.Messages {
			for _, b := range m.blocks() {
				if b.Type == "tool_result" {
					these = append(these, string(b.Content))
				}
			}
		}
		if len(these) >= len(out) {
			out = these
		}
	}
	return out
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o644))
}
