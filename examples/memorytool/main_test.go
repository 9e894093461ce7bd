package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/llm/anthropic"
)

func TestMemoryToolThroughTheAdapter(t *testing.T) {
	srv := httptest.NewServer(scriptedAPI())
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "memory")
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), &out, dir, anthropic.Options{APIKey: "offline", BaseURL: srv.URL, MaxRetries: -1}))
	s := out.String()
	assert.Contains(t, s, "ok: File created successfully at: /memories/go_style.md")
	assert.Contains(t, s, "ok: The memory file has been edited.")
	assert.Contains(t, s, "refused: Error: Path /memories/../../etc/passwd would escape /memories directory")
	assert.Contains(t, s, "MEMORY.md: - [Go style](go_style.md) — how the user formats Go code\n")
	data, err := os.ReadFile(filepath.Join(dir, "go_style.md"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "indents Go code with tabs (gofmt)")
}
