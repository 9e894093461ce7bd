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
	t.Parallel()
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
	t.Parallel()
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

// write2_1_328Session writes a transcript with the entry types Claude Code
// 2.1.328 adds (queue operations, attachments on the chain, request
// shapes, requestRef, cost state, tools used, last-prompt with leafUuid).
func write2_1_328Session(t *testing.T, home, id string, extra ...string) {
	t.Helper()
	dir := filepath.Join(home, "projects", "-work-shop")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	sid := `"sessionId":"` + id + `"`
	lines := []string{
		`{"type":"queue-operation","operation":"enqueue","timestamp":"2026-12-01T10:00:00.000Z",` + sid + `,"content":"what port does the api use?"}`,
		`{"type":"queue-operation","operation":"dequeue","timestamp":"2026-12-01T10:00:00.001Z",` + sid + `}`,
		`{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/work/shop",` + sid + `,"version":"2.1.328","gitBranch":"main","type":"user","message":{"role":"user","content":"what port does the api use?"},"uuid":"u1","timestamp":"2026-12-01T10:00:00.002Z","promptId":"p-1","promptSource":"sdk","turnOrigin":"sdk","turnPosition":{"promptIndex":0,"turnIndex":0}}`,
		`{"parentUuid":"u1","isSidechain":false,` + sid + `,"type":"attachment","attachment":{"type":"date","date":"2026-12-01"},"rendered":"Today's date is 2026-12-01.","renderedRole":"system","uuid":"x1","timestamp":"2026-12-01T10:00:00.003Z"}`,
		`{"parentUuid":"x1",` + sid + `,"type":"attachment","attachment":{"type":"prompt_snapshot"},"uuid":"x2","timestamp":"2026-12-01T10:00:00.004Z"}`,
		`{"type":"api-request-shape",` + sid + `,"shapeHash":"abc","timestamp":"2026-12-01T10:00:00.005Z","version":"2.1.328","shape":{"system":"You are Claude Code.","tools":[{"name":"Read"}]}}`,
		`{"type":"api-request",` + sid + `,"id":"req-1","timestamp":"2026-12-01T10:00:00.006Z","version":"2.1.328","querySource":"repl_main_thread","shapeHash":"abc","params":{"model":"claude-opus-5-5","max_tokens":32000},"keep":1,"tail":["h1"]}`,
		`{"parentUuid":"x2",` + sid + `,"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"claude-opus-5-5","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/work/shop/config.toml"}}],"usage":{"input_tokens":10,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0}}},"requestRef":"req-1","apiBlockIndex":0,"madeBy":"model","uuid":"a1","timestamp":"2026-12-01T10:00:01.000Z"}`,
		`{"parentUuid":"a1",` + sid + `,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"port = 8443 # the xylophone service"}]},"sourceToolAssistantUUID":"a1","permissionDecision":{"decision":"accept","source":"config","reasonType":"rule","ruleSource":"cliArg"},"uuid":"u2","timestamp":"2026-12-01T10:00:01.500Z"}`,
		`{"parentUuid":"u2",` + sid + `,"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"The API listens on 8443."}]},"requestRef":"req-2","uuid":"a2","timestamp":"2026-12-01T10:00:02.000Z"}`,
		`{"type":"tools-used","tools":["Read"],` + sid + `}`,
		`{"type":"last-prompt","lastPrompt":"what port does the api use?","leafUuid":"a2",` + sid + `}`,
		`{"type":"cost-state",` + sid + `,"totalCostUSD":0.01,"totalAPIDuration":1200,"modelUsage":{"claude-opus-5-5":{"inputTokens":10}},"hasUnknownModelCost":false}`,
	}
	lines = append(lines, extra...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
}

func TestSessionsRead2_1_328Transcripts(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := "0a1b2c3d-0000-4000-8000-000000000328"
	write2_1_328Session(t, home, id)
	args := func(a ...string) []string { return append(a, "--config-dir", home, "--project", "/work/shop") }

	out, errOut, code := runBin(t, nil, args("sessions", "ls", "--json")...)
	require.Equal(t, 0, code, errOut)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 1)
	assert.Equal(t, "what port does the api use?", list[0]["title"])
	assert.Equal(t, "main", list[0]["gitBranch"])

	out, errOut, code = runBin(t, nil, args("sessions", "show", id)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "user: what port does the api use?")
	assert.Contains(t, out, "[tool Read")
	assert.Contains(t, out, "xylophone")
	assert.Contains(t, out, "assistant: The API listens on 8443.")
	assert.NotContains(t, out, "attachment: \n", "an attachment with nothing rendered is left out")

	out, errOut, code = runBin(t, nil, args("sessions", "search", "xylophone", "--json")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, id, "a word only in a tool result is found")

	// The title follows Claude Code's order: an agent name comes first.
	named := "0a1b2c3d-0000-4000-8000-000000000329"
	write2_1_328Session(t, home, named, `{"type":"ai-title","aiTitle":"API port question","sessionId":"`+named+`"}`, `{"type":"agent-name","agentName":"port-finder","sessionId":"`+named+`"}`)
	out, errOut, code = runBin(t, nil, args("sessions", "ls", "--json")...)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	titles := map[string]any{}
	for _, s := range list {
		titles[s["sessionId"].(string)] = s["title"]
	}
	assert.Equal(t, "port-finder", titles[named])
}
