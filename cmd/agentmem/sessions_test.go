package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claudeHome copies the hand-built transcripts into a config home whose
// project directory is that of /work/shop.
func claudeHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	src := filepath.Join("..", "..", "testdata", "transcripts", "projects", "-work-shop")
	dst := filepath.Join(home, "projects", "-work-shop")
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	}))
	return home
}

func TestSessionsCommands(t *testing.T) {
	home := claudeHome(t)
	args := func(a ...string) []string { return append(a, "--config-dir", home, "--project", "/work/shop") }

	out, errOut, code := runBin(t, nil, args("sessions", "ls", "--json")...)
	require.Equal(t, 0, code, errOut)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 4)
	for _, k := range []string{"sessionId", "title", "firstPrompt", "gitBranch", "tag", "cwd", "created", "modified"} {
		assert.Contains(t, list[0], k)
	}
	assert.Len(t, list[0], 8, "exactly the documented fields")
	ids := map[string]bool{}
	for _, s := range list {
		ids[s["sessionId"].(string)] = true
	}
	assert.True(t, ids["11111111-1111-4111-8111-111111111111"])

	out, errOut, code = runBin(t, nil, args("sessions", "show", "22222222-2222-4222-8222-222222222222", "--json")...)
	require.Equal(t, 0, code, errOut)
	var msgs []map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &msgs))
	require.NotEmpty(t, msgs)
	assert.Equal(t, []string{"uuid", "type", "text"}, keysOf(t, out), "the documented fields")
	assert.Equal(t, "Continue from where you left off.", msgs[len(msgs)-2]["text"])
	assert.Equal(t, "No response requested.", msgs[len(msgs)-1]["text"])

	out, errOut, code = runBin(t, nil, args("sessions", "search", "postgres", "--json")...)
	require.Equal(t, 0, code, errOut)
	var hits []map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &hits))
	require.NotEmpty(t, hits)
	assert.Equal(t, "11111111-1111-4111-8111-111111111111", hits[0]["sessionId"])
	assert.Contains(t, strings.ToLower(hits[0]["snippet"]), "postgres")

	out, _, code = runBin(t, nil, args("sessions", "ls")...)
	require.Equal(t, 0, code)
	assert.Contains(t, out, `Checkout "flaky" test main #ci`)
	_, _, code = runBin(t, nil, args("sessions", "show", "../../etc/passwd")...)
	assert.Equal(t, exitError, code)
	out, _, code = runBin(t, nil, "sessions", "ls", "--all-projects", "--json", "--config-dir", home)
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Len(t, list, 4)
}

// keysOf returns the keys of the first object of a JSON array, in order.
func keysOf(t *testing.T, arr string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(arr))
	var keys []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
				if depth == 1 && v == '}' {
					return keys
				}
			}
		case string:
			if depth == 2 {
				keys = append(keys, v)
				_, _ = dec.Token() // the value
			}
		}
	}
	return keys
}

func TestSessionsShowLeavesOutEmptyEntries(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "projects", "-work-shop")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	id := "0a1b2c3d-0000-4000-8000-000000000001"
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"` + id + `","cwd":"/work/shop","timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"deploy on friday?"}}`,
		`{"type":"attachment","uuid":"x1","parentUuid":"u1","sessionId":"` + id + `","timestamp":"2026-12-01T10:00:00.100Z","attachment":{"type":"hook_success","hookName":"SessionStart"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"x1","sessionId":"` + id + `","timestamp":"2026-12-01T10:00:01.000Z","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"No Friday deploys."}]}}`,
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	out, errOut, code := runBin(t, nil, "sessions", "show", id, "--config-dir", home, "--project", "/work/shop")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "user: deploy on friday?")
	assert.Contains(t, out, "assistant: No Friday deploys.")
	assert.NotContains(t, out, "attachment:")
}
