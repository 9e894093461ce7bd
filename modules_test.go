package agentmem_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreModuleStaysLight builds a scratch host module that imports every
// core package, the way a host does with go get, and checks that its
// go.sum names no SQL driver, model SDK, MCP SDK, telemetry or metrics
// client: those live in modules of their own.
func TestCoreModuleStaysLight(t *testing.T) {
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	host := t.TempDir()
	gomod := "module scratchhost\n\ngo 1.26.0\n\nrequire github.com/agentmem/agentmem v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/agentmem/agentmem => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "go.mod"), []byte(gomod), 0o644))
	var imports strings.Builder
	for _, p := range []string{"", "/dream", "/extract", "/filehistory", "/lexical", "/llm", "/llm/llmtest", "/memdir", "/memtools",
		"/recall", "/rootfs", "/secrets", "/sessionmem", "/teammem", "/teammem/server", "/teammem/server/storetest", "/transcript"} {
		imports.WriteString("\t_ \"github.com/agentmem/agentmem" + p + "\"\n")
	}
	main := "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "main.go"), []byte(main), 0o644))
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = host
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %v: %s", args, out)
	}
	sum, err := os.ReadFile(filepath.Join(host, "go.sum"))
	require.NoError(t, err)
	for _, heavy := range []string{"jackc/pgx", "modernc.org/sqlite", "anthropic-sdk-go", "go.opentelemetry.io", "modelcontextprotocol",
		"prometheus", "google.golang.org/protobuf", "filepath-securejoin"} {
		assert.NotContains(t, string(sum), heavy, "a host of the core packages must not need %s", heavy)
	}
}
