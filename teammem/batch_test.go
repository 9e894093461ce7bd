package teammem

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/teammem/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatches(t *testing.T) {
	var files []localFile
	for i := 0; i < 30; i++ {
		files = append(files, localFile{key: fmt.Sprintf("k%02d.md", i), content: strings.Repeat("é\"", 5000)})
	}
	files = append(files, localFile{key: "z-huge.md", content: strings.Repeat("x", 240_000)})
	bs := batches(files, wire.MaxPutBodyBytes)
	require.Greater(t, len(bs), 2)
	seen := 0
	for i, b := range bs {
		body := wire.PutBody{Entries: map[string]string{}}
		for _, f := range b {
			body.Entries[f.key] = f.content
		}
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		if len(b) == 1 && b[0].key == "z-huge.md" {
			assert.Greater(t, len(raw), wire.MaxPutBodyBytes, "an oversize entry travels alone")
		} else {
			assert.LessOrEqual(t, len(raw), wire.MaxPutBodyBytes, "batch %d", i)
		}
		// Greedy: the next entry would not have fitted.
		if i+1 < len(bs) && len(b) > 0 {
			next := bs[i+1][0]
			extra := jsonLen(next.key) + jsonLen(next.content) + 2
			assert.Greater(t, len(raw)+extra, wire.MaxPutBodyBytes)
		}
		seen += len(b)
	}
	assert.Equal(t, len(files), seen)
	assert.Empty(t, batches(nil, wire.MaxPutBodyBytes))
}
