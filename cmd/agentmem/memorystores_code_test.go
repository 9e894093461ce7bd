package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeHTTP sends one request as Claude Code's store client does (bearer
// token, no beta header) or, with apiKey, as an SDK does (x-api-key).
func storeHTTP(t testing.TB, method, u, token string, apiKey bool, body any) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		r = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, u, r)
	require.NoError(t, err)
	if apiKey {
		req.Header.Set("x-api-key", token)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("anthropic-beta", "agent-memory-2026-07-22")
	} else {
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("User-Agent", "claude-cli/2.1.328 (external, sdk-cli)")
		req.Header.Set("Accept", "application/json, text/plain, */*")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, out
}

// createStore makes a memory store named name and returns its ID.
func createStore(t testing.TB, base, token, name string) string {
	t.Helper()
	code, _, out := storeHTTP(t, "POST", base+"/v1/memory_stores", token, true, map[string]any{"name": name})
	require.Equal(t, 200, code, string(out))
	var st struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(out, &st))
	return st.ID
}

func decodeJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m), string(data))
	return m
}

// ndjson splits an export into its lines.
func ndjson(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, decodeJSON(t, sc.Bytes()))
	}
	return out
}

// TestClaudeCodeStoreRouteAfterARestart checks Claude Code's store route
// on the built server across a restart on the same database, with a
// token scoped to one store ID, and the team sync protocol beside it on
// the same server. The route's calls themselves are checked beside the
// server (storetest.RunClaudeCodeRoute).
func TestClaudeCodeStoreRouteAfterARestart(t *testing.T) {
	dir := t.TempDir()
	tokens, admin, _, _ := storeTokens(t, dir)
	db := filepath.Join(dir, "stores.db")
	base, srv := serveArgs(t, db, tokens)
	code, _, body := storeHTTP(t, "POST", base+"/v1/memory_stores", admin, true, map[string]any{"name": "team-store"})
	require.Equal(t, 200, code, string(body))
	storeID := decodeJSON(t, body)["id"].(string)
	code, _, body = storeHTTP(t, "POST", base+"/v1/memory_stores", admin, true, map[string]any{"name": "other"})
	require.Equal(t, 200, code, string(body))
	otherID := decodeJSON(t, body)["id"].(string)
	for _, path := range []string{"/release-freeze.md", "/topics/ci.md"} {
		code, _, body = storeHTTP(t, "POST", base+"/v1/code/memory/team-store/memories", admin, false,
			map[string]any{"path": path, "content": "Freeze from Dec 20.\n", "precondition": map[string]string{"type": "not_exists"}})
		require.Equal(t, 200, code, string(body))
	}

	// Restart on the same database with a token scoped to one store.
	require.NoError(t, srv.Process.Kill())
	_ = srv.Wait()
	var grants []teamserver.TokenGrant
	data, err := os.ReadFile(tokens)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &grants))
	scoped, g, err := teamserver.NewToken("acme", []string{"acme/*"}, storeID)
	require.NoError(t, err)
	g.Name = "bot"
	data, err = json.Marshal(append(grants, g))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tokens, data, 0o600))
	base, _ = serveArgs(t, db, tokens)
	code, _, body = storeHTTP(t, "GET", base+"/v1/code/memory/"+storeID+"/memories/export?view=basic", scoped, false, nil)
	require.Equal(t, 200, code, string(body))
	assert.Len(t, ndjson(t, body), 4, "the store and its memories outlive the restart")
	code, _, _ = storeHTTP(t, "GET", base+"/v1/memory_stores/"+otherID, scoped, true, nil)
	assert.Equal(t, 404, code, "a store outside the token's scope looks like no store")
	code, _, _ = storeHTTP(t, "POST", base+"/v1/memory_stores", scoped, true, map[string]any{"name": "mine"})
	assert.Equal(t, 403, code, "creating a store needs every store")
	code, _, body = storeHTTP(t, "GET", base+"/v1/memory_stores", scoped, true, nil)
	require.Equal(t, 200, code)
	data2 := decodeJSON(t, body)["data"].([]any)
	require.Len(t, data2, 1)
	assert.Equal(t, storeID, data2[0].(map[string]any)["id"])

	// The team sync protocol keeps working on the same server.
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.MkdirAll(a, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(a, "ci.md"), []byte("beside the stores"), 0o644))
	withToken := []string{"AGENTMEM_TEAM_TOKEN=" + scoped}
	_, errOut, exit := runBin(t, withToken, "team", "push", "--server", base, "--repo", "acme/shop", "--dir", a)
	require.Equal(t, 0, exit, errOut)
	_, errOut, exit = runBin(t, withToken, "team", "pull", "--server", base, "--repo", "acme/shop", "--dir", b)
	require.Equal(t, 0, exit, errOut)
	got, err := os.ReadFile(filepath.Join(b, "ci.md"))
	require.NoError(t, err)
	assert.Equal(t, "beside the stores", string(got))
}

// TestREADMEMemoryStoresSelfHosted runs the README's "Memory Stores,
// self-hosted" commands as written, then reads the memory back with the
// official Go SDK using the key they made.
func TestREADMEMemoryStoresSelfHosted(t *testing.T) {
	root := t.TempDir()
	addr := freeAddr(t)
	sh := newShell(t, root, nil, "127.0.0.1:8787", addr)
	t.Cleanup(func() {
		sh.run([]string{`[ -f team.pid ] && kill -KILL "$(cat team.pid)" 2>/dev/null || true`})
	})
	out, _ := sh.run(readmeBlock(t, "## Memory Stores, self-hosted"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out) // the store, the memory, the export's three lines
	store := decodeJSON(t, []byte(lines[0]))
	assert.Equal(t, "memory_store", store["type"])
	assert.Equal(t, "team-store", store["name"])
	mem := decodeJSON(t, []byte(lines[1]))
	assert.Equal(t, "/deploy.md", mem["path"])
	assert.Equal(t, sha("Deploys freeze on Fridays."), mem["content_sha256"])
	assert.Equal(t, "basic", decodeJSON(t, []byte(lines[2]))["view"])
	assert.Equal(t, float64(1), decodeJSON(t, []byte(lines[4]))["memory_count"])

	key, err := os.ReadFile(filepath.Join(root, "alice.key"))
	require.NoError(t, err)
	client := sdkClient("http://"+addr, strings.TrimSpace(string(key)))
	got, err := client.Beta.MemoryStores.Memories.Get(t.Context(), mem["id"].(string), anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store["id"].(string)})
	require.NoError(t, err)
	assert.Equal(t, "Deploys freeze on Fridays.", got.Content)
}

// TestMemoryStoresRateLimitMetricsAndLog checks that the server's bounds
// and measurements cover the Memory Stores routes: a token past its rate
// gets 429 with Retry-After, the metrics count each route, and the
// request log names route, tenant and status, never a token or content.
func TestMemoryStoresRateLimitMetricsAndLog(t *testing.T) {
	dir := t.TempDir()
	tokens, key, _, _ := storeTokens(t, dir)
	metricsAddr := freeAddr(t)
	logFile := filepath.Join(dir, "server.log")
	t.Setenv("AGENTMEM_SERVER_LOG", logFile)
	base, _ := serveArgs(t, filepath.Join(dir, "stores.db"), tokens, "--rate", "1", "--burst", "3", "--metrics-addr", metricsAddr)
	code, _, body := storeHTTP(t, "POST", base+"/v1/memory_stores", key, true, map[string]any{"name": "s"})
	require.Equal(t, 200, code, string(body))
	id := decodeJSON(t, body)["id"].(string)
	secret := "Deploy notes: the freeze starts on the 20th."
	limited := 0
	for range 6 {
		code, hdr, body := storeHTTP(t, "POST", base+"/v1/memory_stores/"+id+"/memories", key, true, map[string]any{"path": "/n.md", "content": secret})
		if code == 429 {
			limited++
			assert.NotEmpty(t, hdr.Get("Retry-After"))
			assert.Equal(t, "rate_limit_error", decodeJSON(t, body)["error"].(map[string]any)["type"])
		}
	}
	assert.Positive(t, limited, "a burst past --burst is limited")

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(metrics), `route="stores.create"`)
	assert.Contains(t, string(metrics), `route="memories.create"`)
	assert.Contains(t, string(metrics), `status="429"`)

	logged, err := os.ReadFile(logFile)
	require.NoError(t, err)
	assert.Contains(t, string(logged), `msg="memory stores request" method=POST route=memories.create tenant=acme status=429`)
	assert.NotContains(t, string(logged), key)
	assert.NotContains(t, string(logged), "freeze starts")
}

// TestMemoryStoresSurviveABackup takes the README's online SQLite backup
// while the server runs, then serves the copy: the stores, their
// memories and their versions are all in it.
func TestMemoryStoresSurviveABackup(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" { // CI installs sqlite3 beside PostgreSQL
			t.Fatal("sqlite3 is not installed")
		}
		t.Skip("sqlite3 is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	tokens, key, _, _ := storeTokens(t, dir)
	db := filepath.Join(dir, "team.db")
	base, _ := serveArgs(t, db, tokens)
	code, _, body := storeHTTP(t, "POST", base+"/v1/memory_stores", key, true, map[string]any{"name": "kept"})
	require.Equal(t, 200, code, string(body))
	id := decodeJSON(t, body)["id"].(string)
	code, _, body = storeHTTP(t, "POST", base+"/v1/memory_stores/"+id+"/memories", key, true, map[string]any{"path": "/a.md", "content": "one"})
	require.Equal(t, 200, code, string(body))
	mem := decodeJSON(t, body)["id"].(string)
	code, _, body = storeHTTP(t, "POST", base+"/v1/memory_stores/"+id+"/memories/"+mem, key, true, map[string]any{"content": "two"})
	require.Equal(t, 200, code, string(body))

	out, err := exec.Command("sqlite3", db, ".backup "+filepath.Join(dir, "copy.db")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	copyURL, _ := serveArgs(t, filepath.Join(dir, "copy.db"), tokens)
	code, _, body = storeHTTP(t, "GET", copyURL+"/v1/memory_stores/"+id+"/memories/"+mem, key, true, nil)
	require.Equal(t, 200, code, string(body))
	assert.Equal(t, "two", decodeJSON(t, body)["content"])
	code, _, body = storeHTTP(t, "GET", copyURL+"/v1/memory_stores/"+id+"/memory_versions", key, true, nil)
	require.Equal(t, 200, code, string(body))
	assert.Len(t, decodeJSON(t, body)["data"], 2)
}

// TestREADMEStoreSync runs the README's "Syncing a memory folder with a
// store" commands as written, in a project, against the server the
// README's "Memory Stores, self-hosted" commands start.
func TestREADMEStoreSync(t *testing.T) {
	root := t.TempDir()
	addr := freeAddr(t)
	sh := newShell(t, root, nil, "127.0.0.1:8787", addr)
	t.Cleanup(func() {
		sh.run([]string{`[ -f team.pid ] && kill -KILL "$(cat team.pid)" 2>/dev/null || true`})
	})
	sh.run(readmeBlock(t, "## Memory Stores, self-hosted"))
	project, env := clone(t, root, "ana")
	keyFile := filepath.Join(root, "alice.key")
	ps := newShell(t, project, env, "127.0.0.1:8787", addr, "cat alice.key", "cat "+keyFile)
	t.Cleanup(func() {
		ps.run([]string{`[ -f store.pid ] && kill -TERM "$(cat store.pid)" 2>/dev/null || true`})
	})
	out, errOut := ps.run(readmeBlock(t, "## Syncing a memory folder with a store"))
	assert.Regexp(t, `(?m)^proj +team +rw +/v1/code/memory/team-store +/.*/team/proj$`, out)
	assert.Contains(t, out, "proj: pulled  /deploy.md\n", errOut)
	var folder string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 5 && f[0] == "proj" {
			folder = f[4]
		}
	}
	require.NotEmpty(t, folder)
	assert.Equal(t, "Deploys freeze on Fridays.", readFile(t, folder, "deploy.md"))
	writeFile(t, folder, "watched.md", "pushed by the watcher")
	key, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	waitFor(t, func() bool {
		code, _, body := storeHTTP(t, "GET", "http://"+addr+"/v1/code/memory/team-store/memories/export?view=basic", strings.TrimSpace(string(key)), false, nil)
		return code == 200 && strings.Contains(string(body), `"/watched.md"`)
	})
}

// exportedMemory is one "memory" line of an export.
type exportedMemory struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	SHA     string `json:"content_sha256"`
	Content string `json:"content"`
}

// readExport reads a full export and checks it is whole: every content
// matches its sha256 and the count matches the "complete" line.
func readExport(body []byte) (map[string]exportedMemory, bool) {
	out := map[string]exportedMemory{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	complete := false
	for sc.Scan() {
		var line struct {
			Type  string `json:"type"`
			Count int    `json:"memory_count"`
			exportedMemory
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			return nil, false
		}
		switch line.Type {
		case "memory":
			if sha(line.Content) != line.SHA {
				return nil, false
			}
			out[line.Path] = line.exportedMemory
		case "complete":
			complete = line.Count == len(out)
		}
	}
	return out, complete
}
