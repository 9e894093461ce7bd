package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
)

func TestQuickstartRuns(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, full := range []bool{false, true} {
		var out bytes.Buffer
		require.NoError(t, run(&out, full))
		s := out.String()
		for _, want := range []string{
			"saved testing_policy.md", "saved team/build_invariants.md",
			"- [feedback] testing_policy.md (", "- [project] team/build_invariants.md (",
			"This memory was saved 40 days ago", "built the combined memory prompt",
			"recall for \"should the new integration test mock the database?\"",
			"Memory: ", "testing_policy.md:", "Integration tests run against the real database",
			"team sync server listening on", "pushed [MEMORY.md build_invariants.md]", "pulled [MEMORY.md build_invariants.md]",
			"## MEMORY.md (team)", "- [Build invariants](build_invariants.md)",
		} {
			assert.Contains(t, s, want)
		}
		assert.Equal(t, full, strings.Contains(s, "## Before recommending from memory"))
	}
}

// TestREADMEQuickstartCommand runs the README's first command as written,
// from the repository's root, as a newcomer does after cloning. (The
// command beside it, the test suite, is what .ci/run runs.)
func TestREADMEQuickstartCommand(t *testing.T) {
	root := filepath.Join("..", "..")
	var line string
	for _, l := range docstest.Block(t, root, "From a clone of this repository:") {
		if strings.HasPrefix(l, "go run ./examples/quickstart") {
			line = l
		}
	}
	require.NotEmpty(t, line, "the README's first block runs the quickstart")
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+line)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", line, out)
	assert.Contains(t, string(out), "built the combined memory prompt")
	assert.Contains(t, string(out), "## MEMORY.md (team)")
}
