package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/agentmem-sdk/agentmem/examples/recalleval/convset"
	"github.com/agentmem-sdk/agentmem/examples/recalleval/updateset"
	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenignMemoriesPassTheScreens: no memory of the three sets, on
// seeds 1 to 3 (about 8,400 conversational, preference and coding
// memories), is refused as a shared write (docs/security.md gives the
// figure).
func TestBenignMemoriesPassTheScreens(t *testing.T) {
	t.Parallel()
	var texts []string
	for seed := uint64(1); seed <= 3; seed++ {
		for _, m := range convset.Generate(convset.Options{Seed: seed}).Memories {
			texts = append(texts, m.Name+"\n"+m.Description+"\n"+m.Body)
		}
		for _, m := range updateset.Generate(updateset.Options{Seed: seed}).Memories {
			texts = append(texts, m.Name+"\n"+m.Description+"\n"+m.Body)
		}
	}
	data, err := os.ReadFile(shopSet)
	require.NoError(t, err)
	var shop struct {
		Memories []struct{ Name, Description, Body string }
	}
	require.NoError(t, json.Unmarshal(data, &shop))
	for _, m := range shop.Memories {
		texts = append(texts, m.Name+"\n"+m.Description+"\n"+m.Body)
	}
	refused := 0
	for _, text := range texts {
		if err := screen.Check(text, screen.Options{Shared: true}); err != nil {
			refused++
			t.Errorf("refused: %v\n%s", err, text)
		}
	}
	t.Logf("%d of %d memories refused", refused, len(texts))
	assert.Greater(t, len(texts), 3000)
}
