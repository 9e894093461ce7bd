package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/recall"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var shopSet = filepath.Join("..", "..", "testdata", "recall", "shop.json")

// TestLexicalQuality pins the lexical selector's quality on the shipped
// set, a little below the measured figures (recall 0.745, precision 0.775,
// none-correct 0.93), so a tokenizer or ranking regression fails here.
func TestLexicalQuality(t *testing.T) {
	set, err := Load(shopSet)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(set.Memories), 150)
	require.GreaterOrEqual(t, len(set.Queries), 60)
	fsys, dir, err := Materialise(set)
	require.NoError(t, err)
	m, err := Evaluate(context.Background(), fsys, dir, recall.NewLexicalSelector(fsys, recall.LexicalOptions{}), set)
	require.NoError(t, err)
	t.Logf("recall@5 %.3f precision@5 %.3f none-correct %.3f", m.RecallAt5, m.PrecisionAt5, m.NoneCorrect)
	assert.GreaterOrEqual(t, m.RecallAt5, 0.72)
	assert.GreaterOrEqual(t, m.PrecisionAt5, 0.74)
	assert.GreaterOrEqual(t, m.NoneCorrect, 0.85)
}

func TestRunPrints(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, shopSet, recall.LexicalOptions{}, ""))
	assert.Contains(t, out.String(), "150 memories, 61 messages (14 need none)")
	assert.Contains(t, out.String(), "lexical  recall@5 ")
	assert.Error(t, run(context.Background(), &out, "missing.json", recall.LexicalOptions{}, ""))
}
