package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/memdir"
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

// lockedBuffer is an io.WriteCloser safe for the transport's writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *lockedBuffer) Close() error { return nil }
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// pipedRequests is what `printf ... | agentmem mcp` sends: several
// requests, then the end of input.
func pipedRequests() (string, []int) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_save","arguments":{"name":"Piped","description":"saved from a pipe","type":"project","body":"Saved before stdin closed."}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_list","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"five","method":"resources/list"}`,
	}
	return strings.Join(lines, "\n") + "\n", []int{1, 2, 3, 4}
}

// answeredIDs decodes the responses written and returns them by id.
func answeredIDs(t *testing.T, out string) map[string]json.RawMessage {
	t.Helper()
	got := map[string]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if len(m.ID) > 0 {
			assert.Empty(t, m.Error, line)
			got[string(m.ID)] = m.Result
		}
	}
	return got
}

func TestAnswerAllAnswersEveryRequestReadBeforeEOF(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	srv, err := New(dirAt(t, dir), Options{Version: "test"})
	require.NoError(t, err)
	in, ids := pipedRequests()
	out := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Run(ctx, AnswerAll(&mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(in)), Writer: out}))
	require.NoError(t, ctx.Err(), "Run returned because every request was answered, not on the deadline")
	if err != nil {
		require.ErrorIs(t, err, io.EOF)
	}
	got := answeredIDs(t, out.String())
	for _, id := range ids {
		assert.Contains(t, got, fmt.Sprint(id), "request %d answered; output:\n%s", id, out.String())
	}
	assert.Contains(t, got, `"five"`)
	data, err := afero.ReadFile(afero.NewOsFs(), filepath.Join(dir, "piped.md"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "Saved before stdin closed.", "the save was done, not cancelled")
}

// Without AnswerAll the SDK drops what it read before the end of input:
// this pins the reason the wrapper exists.
func TestWithoutAnswerAllRequestsAreDropped(t *testing.T) {
	srv, err := New(dirAt(t, filepath.Join(t.TempDir(), "memory")), Options{Version: "test"})
	require.NoError(t, err)
	in, _ := pipedRequests()
	out := &lockedBuffer{}
	_ = srv.Run(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(in)), Writer: out})
	assert.Less(t, len(answeredIDs(t, out.String())), 5)
}

// A closed connection stops the wait even with requests unanswered.
func TestAnswerAllStopsOnClose(t *testing.T) {
	pr, pw := io.Pipe()
	tr := AnswerAll(&mcp.IOTransport{Reader: pr, Writer: &lockedBuffer{}})
	conn, err := tr.Connect(context.Background())
	require.NoError(t, err)
	go func() {
		_, _ = pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n"))
		_ = pw.Close()
	}()
	_, err = conn.Read(context.Background())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { _, err := conn.Read(context.Background()); done <- err }()
	select {
	case <-done:
		t.Fatal("the end of input was reported with a request unanswered")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, conn.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, io.EOF)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the wait")
	}
}

// dirAt is a memory directory handle on the real disk at dir.
func dirAt(t *testing.T, dir string) *memdir.Dir {
	t.Helper()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// memory_save takes if_version: "new" creates and never replaces, and a
// version memory_read gave replaces only while the file still holds it.
func TestSaveIfVersion(t *testing.T) {
	d, err := memdir.NewDir(afero.NewOsFs(), filepath.Join(t.TempDir(), "memory"), memdir.DirOptions{})
	require.NoError(t, err)
	srv, err := New(d, Options{Version: "test"})
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	call := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		if out != nil && !res.IsError {
			raw, _ := json.Marshal(res.StructuredContent)
			require.NoError(t, json.Unmarshal(raw, out))
		}
		return res
	}
	save := func(body, ifVersion string) (*mcp.CallToolResult, SaveOutput) {
		var out SaveOutput
		res := call("memory_save", map[string]any{"file": "deploy.md", "name": "Deploy", "description": "when", "type": "project", "body": body, "if_version": ifVersion}, &out)
		return res, out
	}
	res, first := save("Tuesdays.", "new")
	require.False(t, res.IsError)
	require.Len(t, first.Version, 12)
	res, _ = save("Fridays.", "new")
	require.True(t, res.IsError, "new never replaces")
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "deploy.md already exists")
	assert.NotContains(t, res.Content[0].(*mcp.TextContent).Text, "memdir:")

	var read readOutput
	call("memory_read", map[string]any{"file": "deploy.md"}, &read)
	assert.Equal(t, first.Version, read.Version)
	res, second := save("Thursdays.", read.Version)
	require.False(t, res.IsError, "the version read still holds")
	res, _ = save("Mondays.", read.Version)
	require.True(t, res.IsError, "a stale version is refused")
	call("memory_read", map[string]any{"file": "deploy.md"}, &read)
	assert.Equal(t, second.Version, read.Version)
	assert.Contains(t, read.Content, "Thursdays.")
}
