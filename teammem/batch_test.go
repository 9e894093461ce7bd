package teammem

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPackChanges(t *testing.T) {
	var changes []foldersync.Change
	for i := 0; i < 5; i++ {
		changes = append(changes, foldersync.Change{Path: fmt.Sprintf("gone%02d.md", i), Delete: true})
	}
	for i := 0; i < 30; i++ {
		changes = append(changes, foldersync.Change{Path: fmt.Sprintf("k%02d.md", i), Content: []byte(strings.Repeat("é\"", 5000))})
	}
	changes = append(changes, foldersync.Change{Path: "z-huge.md", Content: []byte(strings.Repeat("x", 240_000))})
	bs := packChanges(changes, teamwire.MaxPutBodyBytes)
	require.Greater(t, len(bs), 2)
	seen := 0
	for i, b := range bs {
		body := teamwire.PutBody{Entries: map[string]string{}}
		for _, c := range b {
			if c.Delete {
				body.SoftDeleteKeys = append(body.SoftDeleteKeys, c.Path)
			} else {
				body.Entries[c.Path] = string(c.Content)
			}
		}
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		if len(b) == 1 && b[0].Path == "z-huge.md" {
			assert.Greater(t, len(raw), teamwire.MaxPutBodyBytes, "an oversize entry travels alone")
		} else {
			assert.LessOrEqual(t, len(raw), teamwire.MaxPutBodyBytes, "batch %d", i)
		}
		// Greedy: the next entry would not have fitted (the envelope
		// counted holds an empty soft_delete_keys too).
		if i+1 < len(bs) && len(b) > 0 {
			next := bs[i+1][0]
			extra := jsonLen(next.Path) + jsonLen(string(next.Content)) + 2
			assert.Greater(t, len(raw)+extra+len(`,"soft_delete_keys":[]`), teamwire.MaxPutBodyBytes)
		}
		seen += len(b)
	}
	assert.Equal(t, len(changes), seen)
	assert.Empty(t, packChanges(nil, teamwire.MaxPutBodyBytes))
}
