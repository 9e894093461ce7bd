package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOfflineRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, ""))
	s := out.String()
	assert.Contains(t, s, "tool List  ok")
	assert.Contains(t, s, "tool Write denied: you may only write inside")
	assert.Contains(t, s, "==> wrote testing_policy.md")
	assert.Contains(t, s, "==> wrote MEMORY.md")
	assert.Contains(t, s, "- [feedback] testing_policy.md (")
	assert.Contains(t, s, "5 turns")
}
