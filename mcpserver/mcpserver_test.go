package mcpserver

import (
	"context"
	"encoding/json"
	"github.com/agentmem-sdk/agentmem/memdir"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolPanicIsAToolError(t *testing.T) {
	h := safe(func(context.Context, *mcp.CallToolRequest, fileIn) (*mcp.CallToolResult, readOutput, error) {
		panic("boom")
	})
	res, _, err := h(context.Background(), nil, fileIn{File: "x.md"})
	assert.Nil(t, res)
	assert.ErrorContains(t, err, "internal error in the memory server")
}

// A host embeds the server: New on its own directory, HTTPHandler on its
// own mux, and an official-SDK client saves and lists a memory.
func TestEmbeddedOverHTTP(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	srv, err := New(d, Options{Version: "test"})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/memory/mcp", HTTPHandler(srv))
	hs := httptest.NewServer(mux)
	defer hs.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/memory/mcp"}, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_save", Arguments: map[string]any{
		"name": "Deploys", "description": "when we ship", "type": "project", "body": "Tuesdays."}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_list", Arguments: map[string]any{}})
	require.NoError(t, err)
	var out ListOutput
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &out))
	require.Len(t, out.Memories, 1)
	assert.Equal(t, "project", out.Memories[0].Type)

	// A browser page on another origin is refused.
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/memory/mcp", strings.NewReader(`{}`))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}
