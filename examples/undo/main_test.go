package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostRewindsAWrongExtraction(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), &out, t.TempDir()))
	s := out.String()
	assert.Contains(t, s, "extraction wrote 2 files; checkpoint extract-")
	assert.Contains(t, s, "a rewind would change 2 files (+0 -7 lines)")
	assert.Contains(t, s, "rewound: MEMORY.md restored=true, wrong memory deleted=true")
	assert.Contains(t, s, "has been modified since you read it")
}
