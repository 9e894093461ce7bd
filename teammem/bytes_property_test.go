package teammem_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/teammem"
)

// randomBytes returns bytes a memory file may hold: text, invalid UTF-8,
// NUL, control and format characters, CRLF, a BOM, lone surrogates
// encoded in UTF-8, or anything at all.
func randomBytes(rng *rand.Rand) []byte {
	pieces := [][]byte{
		[]byte("plain text "), []byte("héllo — ☃ 日本語 "), []byte("\r\n"), []byte("\n"), []byte("\t"),
		{0xef, 0xbb, 0xbf}, {0xe9}, {0xed, 0xa0, 0x80}, {0xff, 0xfe}, {0x00}, {0x1b, '[', '3', '1', 'm'},
		[]byte("\u200b"), []byte("\u202e"), []byte("\\u0000"), []byte(`"quoted"`), []byte("🙂"),
	}
	var b bytes.Buffer
	for range rng.IntN(8) {
		if rng.IntN(6) == 0 {
			raw := make([]byte, rng.IntN(6))
			for i := range raw {
				raw[i] = byte(rng.IntN(256))
			}
			b.Write(raw)
			continue
		}
		b.Write(pieces[rng.IntN(len(pieces))])
	}
	return b.Bytes()
}

// For any bytes a team file may hold, a teammate receives exactly those
// bytes, or the file is skipped (named in the result) and left exactly
// as it was; nothing else happens to it.
func TestTeamSyncBytesExactOrRefused(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(35, 2026))
	for round := range 3 {
		e := startServer(t, 0)
		a, b := t.TempDir(), t.TempDir()
		files := map[string][]byte{}
		for i := range 60 {
			name := fmt.Sprintf("r%d-f%02d.md", round, i)
			files[name] = randomBytes(rng)
			require.NoError(t, os.WriteFile(filepath.Join(a, name), files[name], 0o644))
		}
		res, err := newClient(t, e, a, nil).Sync(ctx, &teammem.SyncState{})
		require.NoError(t, err)
		skipped := map[string]string{}
		for _, s := range res.Skipped {
			skipped[s.Path] = s.Reason
		}
		_, err = newClient(t, e, b, nil).Sync(ctx, &teammem.SyncState{})
		require.NoError(t, err)
		for name, want := range files {
			mine, err := os.ReadFile(filepath.Join(a, name))
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, mine), "%s: the author's file changed: %q, was %q", name, mine, want)
			theirs, err := os.ReadFile(filepath.Join(b, name))
			if why, ok := skipped[name]; ok {
				require.True(t, os.IsNotExist(err), "%s was skipped (%s) yet reached the teammate as %q", name, why, theirs)
				continue
			}
			require.NoError(t, err, "%s was neither skipped nor received: %q", name, want)
			require.True(t, bytes.Equal(want, theirs), "%s reached the teammate as %q, sent %q", name, theirs, want)
		}
	}
}
