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
	gomod := "module scratchhost\n\ngo 1.26.0\n\nrequire github.com/agentmem-sdk/agentmem v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/agentmem-sdk/agentmem => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "go.mod"), []byte(gomod), 0o644))
	var imports strings.Builder
	for _, p := range []string{"", "/dream", "/extract", "/filehistory", "/foldersync", "/llm", "/llm/llmtest", "/memdir", "/memorytool", "/memtools",
		"/recall", "/rootfs", "/screen", "/secrets", "/sessionmem", "/storesync", "/teammem", "/teamserver", "/teamserver/storetest", "/transcript"} {
		imports.WriteString("\t_ \"github.com/agentmem-sdk/agentmem" + p + "\"\n")
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
	// The core module's own requirements too: a requirement no core package
	// imports is pruned from a host's go.sum but still raises the versions
	// a host's build selects.
	core, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for _, heavy := range []string{"jackc/pgx", "modernc.org/sqlite", "anthropic-sdk-go", "go.opentelemetry.io", "modelcontextprotocol",
		"prometheus", "google.golang.org/protobuf", "filepath-securejoin"} {
		assert.NotContains(t, string(sum), heavy, "a host of the core packages must not need %s", heavy)
		assert.NotContains(t, string(core), heavy, "the core module must not require %s", heavy)
	}
}

// floors are the layers of the core module, from the ground up: an import
// may only point to a lower floor. A package under internal/ is at
// internalFloor, below everything, unless it is listed here.
var floors = map[string]float64{
	"internal/bgctx": 0.3, "internal/synctext": 1.5, // the screens' words for sync
	"internal/teamwire": 1.6, "internal/storewire": 1.7, // the two protocols' JSON
	"llm": 1, "rootfs": 1, "screen": 1, "secrets": 1, "llm/llmtest": 1.5,
	"memdir": 2, "transcript": 2.5, "filehistory": 2.5,
	"foldersync": 2.7, "foldersync/memremote": 2.8, "foldersync/remotetest": 2.9,
	"teammem": 3, "storesync": 3,
	"memtools": 4, "memorytool": 4, "teamserver": 4, "teamserver/storetest": 4.5,
	"extract": 5, "recall": 5, "dream": 5, "sessionmem": 5,
	"": 6,
}

// internalFloor is the floor of a package under internal/ that floors
// does not list: below everything.
const internalFloor = 0.5

// forbidden are imports the floors alone would allow but the design does
// not: the server speaks the protocol through wire, never through the
// client.
var forbidden = map[string][]string{
	"teamserver":           {"teammem", "memdir", "storesync"},
	"teamserver/storetest": {"teammem", "memdir", "storesync"},
}

// TestLayersPointOneWay checks every import inside the core module against
// the floors: the server never imports the client, the memory layers never
// import each other or the front door.
func TestLayersPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	require.NoError(t, err)
	const mod = "github.com/agentmem-sdk/agentmem"
	rel := func(p string) (string, bool) {
		if p == mod {
			return "", true
		}
		r, ok := strings.CutPrefix(p, mod+"/")
		return r, ok
	}
	floor := func(p string) (float64, bool) {
		if f, ok := floors[p]; ok {
			return f, true
		}
		return internalFloor, strings.HasPrefix(p, "internal/")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from, _ := rel(fields[0])
		if strings.HasPrefix(from, "examples") {
			continue
		}
		fromFloor, known := floor(from)
		require.True(t, known, "package %q has no floor: add it to floors (and DESIGN.md)", from)
		for _, imp := range fields[1:] {
			to, ours := rel(imp)
			if !ours {
				continue
			}
			toFloor, _ := floor(to)
			assert.Less(t, toFloor, fromFloor, "%s imports %s: arrows point down only", from, to)
			assert.NotContains(t, forbidden[from], to, "%s must not import %s", from, to)
		}
	}
}
