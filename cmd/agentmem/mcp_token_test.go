package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
