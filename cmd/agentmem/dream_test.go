package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var memDirRe = regexp.MustCompile(`the Markdown files in (\S+) and their index`)

// scriptedMessagesAPI stands in for the Messages API: each consolidation
// reads deploys.md, edits it, writes ports.md and stops. The step is the
// number of assistant turns in the request, so runs are independent; the
// directory comes from the system prompt (the memory dir, or its stage).
func scriptedMessagesAPI(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		var req struct {
			System   json.RawMessage `json:"system"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if !assert.NoError(t, json.Unmarshal(body, &req)) || !assert.True(t, r.Header.Get("X-Api-Key") == "test-key" || r.Header.Get("Authorization") == "Bearer test-key", "the API key is sent") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		m := memDirRe.FindStringSubmatch(string(req.System))
		require.NotNil(t, m, "the system prompt names the directory")
		dir := m[1]
		step := 0
		for _, msg := range req.Messages {
			if msg.Role == "assistant" {
				step++
			}
		}
		use := func(name string, input any) string {
			in, _ := json.Marshal(input)
			return fmt.Sprintf(`{"type":"tool_use","id":"tu_%d","name":%q,"input":%s}`, step, name, in)
		}
		var content, stop string
		switch step {
		case 0:
			content, stop = use("Read", map[string]any{"file_path": filepath.Join(dir, "deploys.md")}), "tool_use"
		case 1:
			content, stop = use("Edit", map[string]any{"file_path": filepath.Join(dir, "deploys.md"), "old_string": "on Tuesdays", "new_string": "on Tuesdays (since 2026-03-03)"}), "tool_use"
		case 2:
			content, stop = use("Write", map[string]any{"file_path": filepath.Join(dir, "ports.md"), "content": "---\nname: Ports\ndescription: which port each service uses\ntype: project\n---\nThe API listens on 8080.\n"}), "tool_use"
		default:
			content, stop = `{"type":"text","text":"Consolidated."}`, "end_turn"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`, step, content, stop)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// dreamTree is a memory directory with one memory and its index.
func dreamTree(t *testing.T) (root, dir string) {
	root = t.TempDir()
	dir = filepath.Join(root, "mem")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte("- [Deploys](deploys.md) — when we deploy\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploys.md"), []byte("---\nname: Deploys\ndescription: when we deploy\ntype: project\n---\nWe deploy on Tuesdays.\n"), 0o600))
	return root, dir
}

func runWithInput(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runBinary(t, "", env, stdin, args...)
}

func TestDreamStagedAsksAndAppliesOnlyOnYes(t *testing.T) {
	t.Parallel()
	srv, calls := scriptedMessagesAPI(t)
	root, dir := dreamTree(t)
	env := []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL, "CLAUDE_CODE_DISABLE_AUTO_MEMORY="}
	args := []string{"dream", "--staged", "--dir", dir, "--config-dir", filepath.Join(root, "cfg")}
	before := memFiles(t, dir)

	// "n" (and anything but y) discards: nothing changes, no lock stamp left.
	out, errOut, code := runWithInput(t, env, "n\n", args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "--- a/deploys.md\n+++ b/deploys.md\n@@ -3,4 +3,4 @@\n description: when we deploy\n type: project\n ---\n-We deploy on Tuesdays.\n+We deploy on Tuesdays (since 2026-03-03).\n")
	assert.Contains(t, out, "--- /dev/null\n+++ b/ports.md\n@@ -0,0 +1,6 @@\n")
	assert.Contains(t, out, "Apply these changes? [y/N] ")
	assert.Contains(t, out, "discarded")
	assert.Equal(t, before, memFiles(t, dir), "a rejected stage changes nothing")
	assert.NoFileExists(t, filepath.Join(dir, ".consolidate-lock"), "a rejected stage does not count as a consolidation")
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), "staged"), "the copy is removed: %s", e.Name())
	}
	assert.Equal(t, int32(4), calls.Load())

	// "y" applies the same diff; the result is rewindable.
	out, errOut, code = runWithInput(t, env, "y\n", args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "applied")
	after := memFiles(t, dir)
	assert.Contains(t, after["deploys.md"], "on Tuesdays (since 2026-03-03).")
	assert.Contains(t, after["ports.md"], "8080")
	info, err := os.Stat(filepath.Join(dir, "deploys.md"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the changed memory keeps its mode")
	m := regexp.MustCompile(`agentmem rewind (\S+) --session dream-runs`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	out, errOut, code = runWithInput(t, env, "", "rewind", m[1], "--session", "dream-runs", "--config-dir", filepath.Join(root, "cfg"))
	require.Equal(t, 0, code, errOut+out)
	assert.Equal(t, before, memFiles(t, dir), "rewinding the accepted stage restores the directory")
}

func TestDreamInPlaceIsRewindable(t *testing.T) {
	t.Parallel()
	srv, _ := scriptedMessagesAPI(t)
	root, dir := dreamTree(t)
	env := []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL, "CLAUDE_CODE_DISABLE_AUTO_MEMORY="}
	before := memFiles(t, dir)
	out, errOut, code := runWithInput(t, env, "", "dream", "--dir", dir, "--config-dir", filepath.Join(root, "cfg"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "improved 2 memories")
	assert.NotEqual(t, before, memFiles(t, dir))
	m := regexp.MustCompile(`agentmem rewind (\S+) --session dream-runs`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	out, errOut, code = runWithInput(t, env, "", "history", "--session", "dream-runs", "--config-dir", filepath.Join(root, "cfg"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, m[1])
	_, errOut, code = runWithInput(t, env, "", "rewind", m[1], "--session", "dream-runs", "--config-dir", filepath.Join(root, "cfg"))
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, before, memFiles(t, dir))
}

func TestDreamRefusesBeforeAnyModelCall(t *testing.T) {
	t.Parallel()
	srv, calls := scriptedMessagesAPI(t)
	root, dir := dreamTree(t)
	cfg := filepath.Join(root, "cfg")
	withKey := []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL, "CLAUDE_CODE_DISABLE_AUTO_MEMORY="}
	for name, c := range map[string]struct {
		env  []string
		args []string
		want string
	}{
		"no key":         {[]string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, []string{"--dir", dir}, "ANTHROPIC_API_KEY"},
		"no directory":   {withKey, []string{"--dir", filepath.Join(root, "missing")}, "no memory directory"},
		"memory off":     {append(withKey, "CLAUDE_CODE_DISABLE_AUTO_MEMORY=1"), []string{"--dir", dir}, "disabled"},
		"yes, no staged": {withKey, []string{"--yes", "--dir", dir}, "--staged"},
	} {
		_, errOut, code := runWithInput(t, c.env, "", append([]string{"dream", "--config-dir", cfg}, c.args...)...)
		assert.Equal(t, exitError, code, name)
		assert.Contains(t, errOut, c.want, name)
	}
	assert.Equal(t, int32(0), calls.Load(), "no refusal reaches the model")
	assert.NoDirExists(t, filepath.Join(root, "missing"), "nothing is created")
}

// memFiles is readAll without the hidden lock files.
func memFiles(t *testing.T, dir string) map[string]string {
	out := readAll(t, dir)
	for k := range out {
		if strings.HasPrefix(filepath.Base(k), ".") {
			delete(out, k)
		}
	}
	return out
}
