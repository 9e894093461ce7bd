package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
