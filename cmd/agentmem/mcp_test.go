package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/mcpserver"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcpTree is a memory directory (not yet created) beside a directory
// outside it that holds a file no tool may read or change, and a link to
// it from inside once the directory exists.
func mcpTree(t *testing.T) (dir, outside string) {
	root := t.TempDir()
	dir = filepath.Join(root, "mem")
	outside = filepath.Join(root, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.md"), []byte("---\nname: s\n---\nOUTSIDE\n"), 0o644))
	return dir, outside
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s: a tool call never fails at the protocol level", name)
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res, b.String()
}

// mcpScenario drives one client session through every tool, the
// resources, the prompt and the hostile cases. tag keeps concurrent
// sessions on one server apart.
func mcpScenario(t *testing.T, cs *mcp.ClientSession, dir, outside, tag string) {
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"memory_list", "memory_read", "memory_save", "memory_delete", "memory_recall", "memory_search", "memory_pause"}, names)

	deploys := "deploys" + tag + ".md"
	res, txt := call(t, cs, "memory_save", map[string]any{"name": "Deploys " + tag, "description": "when we ship to production", "type": "project",
		"body": "We deploy on Tuesdays and Thursdays, never on Fridays.", "file": deploys})
	require.False(t, res.IsError, txt)
	res, txt = call(t, cs, "memory_save", map[string]any{"name": "CI " + tag, "description": "the pipeline", "type": "reference",
		"body": "CI runs on every push; the nightly job runs the slow suite.", "file": "team/ci" + tag + ".md"})
	require.False(t, res.IsError, txt)
	var saved mcpserver.SaveOutput
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &saved))
	assert.Equal(t, "team/ci"+tag+".md", saved.File)

	res, txt = call(t, cs, "memory_list", map[string]any{})
	require.False(t, res.IsError, txt)
	assert.Contains(t, txt, deploys)
	assert.Contains(t, txt, "team/ci"+tag+".md")

	res, txt = call(t, cs, "memory_recall", map[string]any{"query": "can we deploy on friday?"})
	require.False(t, res.IsError, txt)
	assert.Contains(t, txt, deploys)
	assert.Contains(t, txt, "never on Fridays")
	var recalled mcpserver.ListOutput
	raw, _ = json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &recalled))
	assert.Equal(t, "select", recalled.Mode, "the recall event's mode")
	require.NotEmpty(t, recalled.Memories)
	assert.Equal(t, "personal", recalled.Memories[0].Scope)
	res, txt = call(t, cs, "memory_recall", map[string]any{"query": "when does the nightly slow suite run in the pipeline?"})
	require.False(t, res.IsError, txt)
	raw, _ = json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &recalled))
	scopes := map[string]string{}
	for _, m := range recalled.Memories {
		scopes[m.File] = m.Scope
	}
	assert.Equal(t, "team", scopes["team/ci"+tag+".md"], "%s", txt)

	res, txt = call(t, cs, "memory_read", map[string]any{"file": deploys})
	require.False(t, res.IsError, txt)
	assert.Contains(t, txt, memdir.NameSlug(strings.TrimSpace("Deploys "+tag)), "saved in Claude Code 2.1.328's layout")
	assert.Contains(t, txt, "metadata:\n  node_type: memory\n  type: project\n")

	res, txt = call(t, cs, "memory_search", map[string]any{"pattern": "nightly job"})
	require.False(t, res.IsError, txt)
	assert.Contains(t, txt, "team/ci"+tag+".md:")

	idx, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://index"})
	require.NoError(t, err)
	assert.Contains(t, idx.Contents[0].Text, "]("+deploys+")")
	list, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	assert.Contains(t, uris, "memory://index")
	assert.Contains(t, uris, "memory://files/"+deploys)
	assert.Contains(t, uris, "memory://files/team/ci"+tag+".md")
	file, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://files/team/ci" + tag + ".md"})
	require.NoError(t, err)
	assert.Contains(t, file.Contents[0].Text, "nightly job")
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "memory"})
	require.NoError(t, err)
	assert.Contains(t, p.Messages[0].Content.(*mcp.TextContent).Text, "]("+deploys+")")

	// Hostile input: every one is a tool result with isError, nothing leaks
	// and nothing outside changes.
	_ = os.Symlink(outside, filepath.Join(dir, "out"))
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"memory_read", map[string]any{"file": "../outside/secret.md"}},
		{"memory_read", map[string]any{"file": filepath.Join(outside, "secret.md")}},
		{"memory_read", map[string]any{"file": "out/secret.md"}},
		{"memory_read", map[string]any{"file": "%2e%2e/outside/secret.md"}},
		{"memory_read", map[string]any{"file": ".team-sync/x.md"}},
		{"memory_read", map[string]any{"file": "nope.md"}},
		{"memory_read", map[string]any{"file": 42}},
		{"memory_read", map[string]any{}},
		{"memory_save", map[string]any{"name": "x", "description": "d", "type": "project", "body": "b", "file": "../escape.md"}},
		{"memory_save", map[string]any{"name": "x", "description": "d", "type": "project", "body": "b", "file": "out/planted.md"}},
		{"memory_save", map[string]any{"name": "x", "description": "d", "type": "project", "body": "b", "file": "notes.txt"}},
		{"memory_save", map[string]any{"name": "x", "description": "d", "type": "bogus", "body": "b"}},
		{"memory_save", map[string]any{"name": "x", "description": "d", "type": "project", "body": "b", "file": "MEMORY.md"}},
		{"memory_save", map[string]any{"name": "key", "description": "d", "type": "reference", "file": "team/key" + tag + ".md",
			"body": "the deploy key is ghp_" + strings.Repeat("a1B2", 9)}},
		{"memory_delete", map[string]any{"file": "../outside/secret.md"}},
		{"memory_delete", map[string]any{"file": "out/secret.md"}},
		{"memory_delete", map[string]any{"file": "missing" + tag + ".md"}},
		{"memory_search", map[string]any{"pattern": "("}},
		{"memory_recall", map[string]any{"query": ""}},
		{"memory_recall", map[string]any{"query": "x", "limit": "many"}},
	} {
		res, txt := call(t, cs, c.tool, c.args)
		assert.True(t, res.IsError, "%s %v: %s", c.tool, c.args, txt)
		assert.NotContains(t, txt, "OUTSIDE", "%s %v", c.tool, c.args)
		assert.NotContains(t, txt, outside, "no host path in an error: %s %v", c.tool, c.args)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://files/out/secret.md"})
	assert.Error(t, err, "a resource read through a link out is refused")
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://files/..%2Foutside%2Fsecret.md"})
	assert.Error(t, err, "an encoded traversal is refused after decoding")
	encoded, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://files/team%2Fci" + tag + ".md"})
	require.NoError(t, err, "a percent-encoded path reads the same file")
	assert.Contains(t, encoded.Contents[0].Text, "nightly job")
	got, _ := os.ReadFile(filepath.Join(outside, "secret.md"))
	assert.Equal(t, "---\nname: s\n---\nOUTSIDE\n", string(got))
	entries, _ := os.ReadDir(outside)
	assert.Len(t, entries, 1, "nothing was created outside")
	assert.NoFileExists(t, filepath.Join(dir, "team", "key"+tag+".md"), "a secret never lands in team/")

	res, txt = call(t, cs, "memory_delete", map[string]any{"file": deploys})
	require.False(t, res.IsError, txt)
	assert.NoFileExists(t, filepath.Join(dir, deploys))
	idx, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://index"})
	require.NoError(t, err)
	assert.NotContains(t, idx.Contents[0].Text, deploys)
	_, txt = call(t, cs, "memory_list", map[string]any{})
	assert.NotContains(t, txt, deploys)
}

// inMemorySession connects a Go SDK client to a memory server for dir over
// the in-memory transport; both close when the test ends.
func inMemorySession(t *testing.T, dir string) *mcp.ClientSession {
	t.Helper()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	srv, err := mcpserver.New(d, mcpserver.Options{Version: "test"})
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestMCPInMemory(t *testing.T) {
	t.Parallel()
	dir, outside := mcpTree(t)
	cs := inMemorySession(t, dir)
	mcpScenario(t, cs, dir, outside, "")
}

func TestMCPBinaryOverStdio(t *testing.T) {
	t.Parallel()
	dir, outside := mcpTree(t)
	cmd := exec.Command(binary(t), "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), "CLAUDE_CODE_DISABLE_AUTO_MEMORY=")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	mcpScenario(t, cs, dir, outside, "")
	require.NoError(t, cs.Close())
	require.NotNil(t, cmd.ProcessState)
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "the server exits 0 when its client closes stdin")
}

// startMCPHTTP runs `agentmem mcp --http` on loopback and returns its
// endpoint.
func startMCPHTTP(t *testing.T, env []string, args ...string) string {
	return startMCPHTTPOn(t, "127.0.0.1:0", env, args...)
}

// startMCPHTTPOn runs `agentmem mcp --http addr` and returns its endpoint.
func startMCPHTTPOn(t *testing.T, addr string, env []string, args ...string) string {
	cmd := exec.Command(binary(t), append([]string{"mcp", "--http", addr}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	buf := make([]byte, 4096)
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(got, "/mcp\n") {
		n, err := stderr.Read(buf)
		got += string(buf[:n])
		if err != nil {
			break
		}
	}
	i := strings.Index(got, "http://")
	require.GreaterOrEqual(t, i, 0, got)
	return strings.TrimSpace(got[i:])
}

func TestMCPBinaryOverHTTPTwoClients(t *testing.T) {
	t.Parallel()
	dir, outside := mcpTree(t)
	url := startMCPHTTP(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "--dir", dir)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if !assert.NoError(t, err) {
				return
			}
			defer cs.Close()
			mcpScenario(t, cs, dir, outside, fmt.Sprint(i))
		}()
	}
	wg.Wait()
	// A browser page on another origin cannot reach it.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestMCPRefusals(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for name, c := range map[string]struct {
		env  []string
		args []string
		want string
	}{
		"parent missing": {nil, []string{"--dir", filepath.Join(root, "no", "such", "mem")}, "parent does not exist"},
		"memory off":     {[]string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1"}, []string{"--dir", filepath.Join(root, "mem")}, "disabled"},
		"argument":       {nil, []string{"stray"}, "unexpected argument"},
	} {
		_, errOut, code := runWithInput(t, append([]string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, c.env...), "", append([]string{"mcp"}, c.args...)...)
		assert.Equal(t, exitError, code, name)
		assert.Contains(t, errOut, c.want, name)
	}
	assert.NoDirExists(t, filepath.Join(root, "no"))
}

// tsClient installs the MCP TypeScript SDK beside testdata/mcp_client.mjs
// in a temp dir and returns the script's path there.
func tsClient(t *testing.T) string {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("AGENTMEM_REQUIRE_PEER") != "" {
				t.Fatalf("%s must run here for the independent MCP client", tool)
			}
			t.Skipf("%s is not installed; .ci/run installs node and npm and requires this test", tool)
		}
	}
	dir := npmInstalled(t, "@modelcontextprotocol/sdk", tsSDKVersion)
	script, err := os.ReadFile(filepath.Join("testdata", "mcp_client.mjs"))
	require.NoError(t, err)
	// Beside its node_modules, written whole (another test process may
	// read the same file).
	f, err := os.CreateTemp(dir, ".mcp_client-*.mjs")
	require.NoError(t, err)
	_, err = f.Write(script)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	p := filepath.Join(dir, "mcp_client.mjs")
	require.NoError(t, os.Rename(f.Name(), p))
	return p
}

// npmInstalled returns a folder whose node_modules holds pkg at version,
// installed once per machine under the user's cache directory (a run
// after the first installs nothing); a folder of a failed or torn
// install is never used, since the install goes to a new folder renamed
// into place whole.
func npmInstalled(t *testing.T, pkg, version string) string {
	t.Helper()
	dir := filepath.Join(machineCacheDir, "agentmem-test", "npm", strings.NewReplacer("/", "_", "@", "").Replace(pkg)+"-"+version)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err == nil {
		return dir
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(dir), 0o755))
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-")
	require.NoError(t, err)
	defer os.RemoveAll(tmp)
	out, err := exec.Command("npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", tmp, pkg+"@"+version).CombinedOutput()
	require.NoError(t, err, "npm install: %s", out)
	if err := os.Rename(tmp, dir); err != nil {
		// Another test process installed it meanwhile: use that one.
		_, statErr := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
		require.NoError(t, statErr, "install %s: %v", pkg, err)
	}
	return dir
}

// tsSDKVersion is the TypeScript SDK the black-box client runs.
const tsSDKVersion = "1.32.2"

func TestMCPWithTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	script := tsClient(t)
	env := append(os.Environ(), "CLAUDE_CODE_DISABLE_AUTO_MEMORY=")
	t.Run("stdio", func(t *testing.T) {
		dir, _ := mcpTree(t)
		cmd := exec.Command("node", script, "stdio", binary(t), "mcp", "--dir", dir)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s", out)
		assert.NotContains(t, string(out), "FAIL")
		t.Logf("%s", out)
	})
	t.Run("http", func(t *testing.T) {
		dir, _ := mcpTree(t)
		url := startMCPHTTP(t, []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "--dir", dir)
		cmd := exec.Command("node", script, "http", url)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s", out)
		assert.NotContains(t, string(out), "FAIL")
	})
}

// TestMCPKeepsTeamMemoryInSync runs `agentmem mcp --team-server` beside a
// teammate who uses the team commands: what the MCP client saves under
// team/ reaches the teammate, and what the teammate pushes becomes
// readable through the MCP server, without any restart.
func TestMCPKeepsTeamMemoryInSync(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, serverURL, token := startTeamServer(t, root)
	dir := filepath.Join(root, "ana", "mem")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", TokenEnv + "=" + token}
	url := startMCPHTTP(t, env, "--dir", dir, "--team-server", serverURL, "--repo", "acme/shop")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	defer cs.Close()

	res, txt := call(t, cs, "memory_save", map[string]any{"name": "CI", "description": "the pipeline", "type": "reference",
		"body": "CI runs the slow suite nightly.", "file": "team/ci.md"})
	require.False(t, res.IsError, txt)

	ben := filepath.Join(root, "ben", "team")
	require.NoError(t, os.MkdirAll(ben, 0o755))
	benArgs := []string{"--server", serverURL, "--repo", "acme/shop", "--dir", ben}
	require.Eventually(t, func() bool {
		runIn(t, "", env, append([]string{"team", "pull"}, benArgs...)...)
		_, err := os.Stat(filepath.Join(ben, "ci.md"))
		return err == nil
	}, 20*time.Second, 300*time.Millisecond, "the teammate pulls what the MCP client saved")

	require.NoError(t, os.WriteFile(filepath.Join(ben, "ports.md"), []byte("---\nname: Ports\ndescription: which port\ntype: project\n---\nThe API listens on 8080.\n"), 0o644))
	_, errOut, code := runIn(t, "", env, append([]string{"team", "push"}, benArgs...)...)
	require.Equal(t, 0, code, errOut)
	require.Eventually(t, func() bool {
		res, txt := call(t, cs, "memory_read", map[string]any{"file": "team/ports.md"})
		return !res.IsError && strings.Contains(txt, "8080")
	}, 45*time.Second, 300*time.Millisecond, "the teammate's memory is readable through the MCP server")
}

// TestMCPAsClaudeCodeStartsIt starts `agentmem mcp` the way the README's
// .mcp.json makes Claude Code start it: no flags, in a fresh project, with
// CLAUDE_CONFIG_DIR set. A save lands in that project's memory directory.
func TestMCPAsClaudeCodeStartsIt(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "src", "shop")
	require.NoError(t, os.MkdirAll(project, 0o755))
	config := filepath.Join(root, "claude")
	cmd := exec.Command(binary(t), "mcp")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+config, "CLAUDE_CODE_DISABLE_AUTO_MEMORY=", "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE=")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, txt := call(t, cs, "memory_save", map[string]any{"name": "Ports", "description": "which port", "type": "project", "body": "The API listens on 8080."})
	require.False(t, res.IsError, txt)
	data, err := os.ReadFile(filepath.Join(config, "projects", memdir.SanitizePath(project), "memory", "ports.md"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "8080")
}

// TestMCPListsPastTheManifestLimit: memory_list and resources/list show
// more than the prompt manifest's 200 memories, and say when they stop.
func TestMCPListsPastTheManifestLimit(t *testing.T) {
	t.Parallel()
	dir, _ := mcpTree(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for i := range mcpserver.MaxList + 5 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)),
			[]byte(fmt.Sprintf("---\nname: M%d\ndescription: memory %d\ntype: project\n---\nbody %d\n", i, i, i)), 0o644))
	}
	cs := inMemorySession(t, dir)
	ctx := context.Background()

	res, txt := call(t, cs, "memory_list", map[string]any{})
	require.False(t, res.IsError)
	var out mcpserver.ListOutput
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.Len(t, out.Memories, mcpserver.MaxList, "well past the manifest's 200")
	assert.True(t, out.More)
	assert.Contains(t, txt, "older memories not shown")
	resources := 0
	for cursor := ""; ; {
		page, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		require.NoError(t, err)
		resources += len(page.Resources)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	assert.Equal(t, mcpserver.MaxList+1, resources, "the index and one resource per listed memory, across pages")

	// memory_recall honours limit, and never goes past 20.
	for limit, most := range map[int]int{2: 2, 50: 20} {
		res, txt = call(t, cs, "memory_recall", map[string]any{"query": "project memory body", "limit": limit})
		require.False(t, res.IsError, txt)
		var got mcpserver.ListOutput
		raw, _ := json.Marshal(res.StructuredContent)
		require.NoError(t, json.Unmarshal(raw, &got))
		assert.Len(t, got.Memories, most, "limit %d (a thousand memories match)", limit)
	}
}

// TestMCPResourcesFollowTheDisk: files another process writes or removes
// show up in, and leave, the next resources/list.
func TestMCPResourcesFollowTheDisk(t *testing.T) {
	t.Parallel()
	dir, _ := mcpTree(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	cs := inMemorySession(t, dir)
	ctx := context.Background()
	uris := func() []string {
		list, err := cs.ListResources(ctx, nil)
		require.NoError(t, err)
		var out []string
		for _, r := range list.Resources {
			out = append(out, r.URI)
		}
		return out
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "outside_write.md"), []byte("---\nname: W\ndescription: d\n---\nx\n"), 0o644))
	assert.Contains(t, uris(), "memory://files/outside_write.md")
	require.NoError(t, os.Remove(filepath.Join(dir, "outside_write.md")))
	assert.NotContains(t, uris(), "memory://files/outside_write.md")
}

// A save whose pointer brings the index near its load limit says so, in
// the text and in the structured result.
func TestMCPSaveNearTheIndexLimitGetsANotice(t *testing.T) {
	t.Parallel()
	dir, _ := mcpTree(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(strings.Repeat("- [A](a.md) — a memory\n", 165)), 0o644))
	cs := inMemorySession(t, dir)
	res, txt := call(t, cs, "memory_save", map[string]any{"name": "Deploys", "description": "when we ship", "type": "project", "body": "Tuesdays."})
	require.False(t, res.IsError, txt)
	assert.Contains(t, txt, "Note: the memory index MEMORY.md is now 166 lines, close to its 200-line load limit.")
	var saved mcpserver.SaveOutput
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &saved))
	assert.Contains(t, saved.Notice, "166 lines")

	res, txt = call(t, cs, "memory_save", map[string]any{"name": "CI", "description": "the pipeline", "type": "reference", "body": "Nightly.", "file": "team/ci.md"})
	require.False(t, res.IsError, txt)
	assert.NotContains(t, txt, "Note:", "the team index is small")
}

// TestMCPBinaryAnswersPipedRequests pipes several requests into `agentmem
// mcp` and closes stdin: every request read before the end of input is
// answered before the server exits 0.
func TestMCPBinaryAnswersPipedRequests(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "memory")
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_save","arguments":{"name":"Piped","description":"saved from a pipe","type":"project","body":"Saved before stdin closed."}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":5,"method":"prompts/list"}`,
	}
	cmd := exec.Command(binary(t), "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), "CLAUDE_CODE_DISABLE_AUTO_MEMORY=")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		assert.Empty(t, m.Error, line)
		answered[string(m.ID)] = true
	}
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		assert.True(t, answered[id], "request %s answered; stdout:\n%s", id, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "piped.md"))
	require.NoError(t, err, "the save ran to the end")
	assert.Contains(t, string(data), "Saved before stdin closed.")
}

// bearer adds a token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// The built binary refuses to listen off loopback without a token.
func TestMCPHTTPRefusesNonLoopbackWithoutToken(t *testing.T) {
	t.Parallel()
	dir, _ := mcpTree(t)
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=", MCPTokenEnv + "="}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		_, stderr, code := runBin(t, env, "mcp", "--dir", dir, "--http", addr)
		assert.NotEqual(t, 0, code, addr)
		assert.Contains(t, stderr, "without a token", addr)
		assert.Contains(t, stderr, MCPTokenEnv, addr)
	}
	_, stderr, code := runBin(t, append(env[:1], MCPTokenEnv+"=short"), "mcp", "--dir", dir, "--http", "127.0.0.1:0")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "at least 16")
}

// With a token, every request must carry it; off loopback too.
func TestMCPHTTPRequiresItsToken(t *testing.T) {
	t.Parallel()
	dir, outside := mcpTree(t)
	token := strings.Repeat("s3cr3t-", 4)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	for name, c := range map[string]struct {
		env  []string
		args []string
	}{
		"env on loopback":       {env: []string{MCPTokenEnv + "=" + token}},
		"file on all addresses": {args: []string{"--token-file", tokenFile}},
	} {
		t.Run(name, func(t *testing.T) {
			env := append([]string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, c.env...)
			args := append([]string{"--dir", dir}, c.args...)
			var url string
			if c.args != nil {
				url = startMCPHTTPOn(t, "0.0.0.0:0", env, args...)
				// Listening on every interface; the test speaks to loopback only.
				url = "http://127.0.0.1:" + url[strings.LastIndex(url, ":")+1:]
			} else {
				url = startMCPHTTP(t, env, args...)
			}
			for _, auth := range []string{"", "Bearer wrong-token-wrong-token", "Bearer " + token + "x", token} {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "authorization %q", auth)
				assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			}
			_, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
			assert.Error(t, err, "a client without the token cannot connect")
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, nil)
			require.NoError(t, err)
			defer cs.Close()
			mcpScenario(t, cs, dir, outside, strings.ReplaceAll(name, " ", "-"))
		})
	}
}

// team token --manage lets a token limited to a store archive and delete it.
func TestTeamTokenManage(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	e := env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	code := run([]string{"team", "token", "--org", "acme", "--store", teamserver.StoreIDPrefix + "abc", "--manage"}, e)
	require.Equal(t, exitOK, code, errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	var g teamserver.TokenGrant
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &g))
	assert.True(t, g.Manage)
	assert.Equal(t, []string{teamserver.StoreIDPrefix + "abc"}, g.Stores)

	out.Reset()
	errOut.Reset()
	code = run([]string{"team", "token", "--org", "acme", "--repo", "acme/*", "--manage"}, e)
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, errOut.String(), "--manage needs --store")
}

// agentmem pause stops the agents' writes to the memory directory in
// every process (here an MCP server already running), while the
// person's own CLI writes go on; agentmem resume lets them write again.
func TestPauseStopsTheAgentsWrites(t *testing.T) {
	t.Parallel()
	dir, _ := mcpTree(t)
	env := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}
	_, errOut, code := runWithInput(t, env, "", "new", "--dir", dir, "--type", "project", "--name", "First", "--description", "d", "--body", "x")
	require.Equal(t, 0, code, errOut)
	cmd := exec.Command(binary(t), "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), env...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	save := map[string]any{"name": "Deploys", "description": "when we ship", "type": "project", "body": "Tuesdays."}

	out, errOut, code := runWithInput(t, env, "", "pause", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "paused:")
	res, text := call(t, cs, "memory_save", save)
	assert.True(t, res.IsError, "a paused directory refuses the agent's save: %s", text)
	assert.Contains(t, text, "paused by the person")
	assert.NoFileExists(t, filepath.Join(dir, "deploys.md"))
	res, text = call(t, cs, "memory_delete", map[string]any{"file": "first.md"})
	assert.True(t, res.IsError, "and its delete: %s", text)
	assert.FileExists(t, filepath.Join(dir, "first.md"))
	_, errOut, code = runWithInput(t, env, "", "new", "--dir", dir, "--type", "project", "--name", "Second", "--description", "d", "--body", "y")
	assert.Equal(t, 0, code, "the person's CLI still writes: %s", errOut)

	_, errOut, code = runWithInput(t, env, "", "resume", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	res, text = call(t, cs, "memory_save", save)
	assert.False(t, res.IsError, "resumed: %s", text)
	assert.FileExists(t, filepath.Join(dir, "deploys.md"))

	// The person may pause through the MCP client too; only the CLI resumes.
	res, text = call(t, cs, "memory_pause", map[string]any{})
	require.False(t, res.IsError, text)
	res, _ = call(t, cs, "memory_save", map[string]any{"name": "Later", "description": "l", "type": "project", "body": "z"})
	assert.True(t, res.IsError, "paused through MCP")
	_, errOut, code = runWithInput(t, env, "", "resume", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	res, text = call(t, cs, "memory_save", map[string]any{"name": "Later", "description": "l", "type": "project", "body": "z"})
	assert.False(t, res.IsError, text)
}

// TestMCPTellsTheMainAgentFromOthers: MCP does not say which agent of a
// client calls, so `agentmem mcp --agent subagent` serves a client's
// sub-agents from a server of their own (their team writes refused, or
// with --main-agent-only propose made and marked other-agent for review),
// and a call may name itself a sub-agent in its _meta
// (mcpserver.AgentMetaKey), never the main agent on a sub-agent's server.
// Private memory stays theirs to write. Through the built binary and the
// official Go SDK.
func TestMCPTellsTheMainAgentFromOthers(t *testing.T) {
	t.Parallel()
	connect := func(t *testing.T, dir string, args ...string) *mcp.ClientSession {
		cmd := exec.Command(binary(t), append([]string{"mcp", "--dir", dir}, args...)...)
		cmd.Env = append(os.Environ(), "CLAUDE_CODE_DISABLE_AUTO_MEMORY=")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	save := func(cs *mcp.ClientSession, file string, meta mcp.Meta) (*mcp.CallToolResult, string) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Meta: meta, Name: "memory_save", Arguments: map[string]any{
			"name": "CI " + file, "description": "the pipeline", "type": "reference", "body": "CI runs nightly.", "file": file}})
		require.NoError(t, err)
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return res, b.String()
	}
	asSub := mcp.Meta{mcpserver.AgentMetaKey: "subagent"}
	asMain := mcp.Meta{mcpserver.AgentMetaKey: "main"}

	dir := filepath.Join(t.TempDir(), "mem")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	sub := connect(t, dir, "--agent", "subagent")
	res, txt := save(sub, "team/ci.md", nil)
	require.True(t, res.IsError, txt)
	assert.Contains(t, txt, "only the session's main agent changes, and this call comes from a sub-agent")
	res, txt = save(sub, "team/ci.md", asMain)
	require.True(t, res.IsError, "a call on a sub-agent's server is never the main agent's: %s", txt)
	assert.NoFileExists(t, filepath.Join(dir, "team", "ci.md"))
	res, txt = save(sub, "notes.md", nil)
	require.False(t, res.IsError, "private memory is the sub-agent's to write: %s", txt)

	main := connect(t, dir, "--main-agent-only", "refuse")
	res, txt = save(main, "team/ci.md", asSub)
	require.True(t, res.IsError, "a call that names itself a sub-agent: %s", txt)
	for _, claim := range []any{"Subagent", "bogus", "", 5} {
		res, txt = save(main, "team/ci.md", mcp.Meta{mcpserver.AgentMetaKey: claim})
		require.True(t, res.IsError, "a claim it cannot read (%v) is never the main agent's: %s", claim, txt)
	}
	res, txt = save(main, "team/ci.md", nil)
	require.False(t, res.IsError, "the main agent writes team memory: %s", txt)

	proposing := connect(t, dir, "--agent", "subagent", "--main-agent-only", "propose")
	res, txt = save(proposing, "team/deploys.md", nil)
	require.False(t, res.IsError, txt)
	assert.Contains(t, txt, "keeps it for a person's review", "the agent is told")
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	require.NoError(t, err)
	content, err := os.ReadFile(filepath.Join(dir, "team", "deploys.md"))
	require.NoError(t, err)
	prov, ok := d.Provenance(filepath.Join(dir, "team", "deploys.md"), content)
	require.True(t, ok)
	assert.Equal(t, "other-agent", prov.Origin, "a sync sends it for a person's review")

	_, errOut, code := runIn(t, "", []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "mcp", "--dir", dir, "--agent", "boss")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "want main, subagent, fork or background")
	_, errOut, code = runIn(t, "", []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY="}, "mcp", "--dir", dir, "--http", "127.0.0.1")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "has no port")
}
