package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/docstest"
)

// TestGuideSelfHostingOnOneMachine runs the team server guide's first
// three commands: the build at the repository's root (into a GOPATH of
// the test's own), then a token added to the token file and the server,
// here on a free loopback port; a teammate syncs with the token.
func TestGuideSelfHostingOnOneMachine(t *testing.T) {
	t.Parallel()
	lines := docstest.Block(t, repoRoot, "Self-hosting on one machine takes three\ncommands:")
	require.Len(t, lines, 3)
	require.True(t, strings.HasPrefix(lines[0], "go build "), lines[0])
	root := t.TempDir()
	gopath := filepath.Join(root, "go")
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	build := newShell(t, repoRoot, []string{"GOPATH=" + gopath, "GOMODCACHE=" + strings.TrimSpace(string(modcache))})
	build.run(lines[:1])
	version, err := exec.Command(filepath.Join(gopath, "bin", "agentmem"), "version").CombinedOutput()
	require.NoError(t, err, "%s", version)
	assert.True(t, strings.HasPrefix(string(version), "agentmem "), "%s", version)

	addr := freeAddr(t)
	sh := newShell(t, root, nil, "0.0.0.0:8787", addr)
	sh.run(lines[1:2])
	token, err := os.ReadFile(filepath.Join(root, "ana.token"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(token), "amt_"), "ana.token holds the token only: %q", token)
	grants, err := os.ReadFile(filepath.Join(root, "tokens.json"))
	require.NoError(t, err)
	assert.Regexp(t, `"name":\s*"ana"`, string(grants))
	assert.NotContains(t, string(grants), strings.TrimSpace(string(token)), "the token file holds a hash")

	sh.start(lines[2:3])
	url := "http://" + addr
	waitFor(t, func() bool { return getStatus(http.DefaultClient, url+"/readyz") == http.StatusOK })
	ana, env := clone(t, root, "ana")
	env = append(env, "AGENTMEM_TEAM_TOKEN="+strings.TrimSpace(string(token)))
	require.NoError(t, os.MkdirAll(projectTeamDir(t, ana, env), 0o755))
	_, errOut, code := runIn(t, ana, env, "team", "sync", "--server", url)
	require.Equal(t, 0, code, errOut)
}

// TestGuideRunningItForATeam runs the guide's "Running it for a team"
// commands (a token, then the server with TLS and metrics, on free
// loopback ports with a certificate for 127.0.0.1), then its history
// commands against that server: the log, one key's log, and a restore of
// version 12 of a memory written thirteen times.
func TestGuideRunningItForATeam(t *testing.T) {
	t.Parallel()
	lines := docstest.Block(t, repoRoot, "### Running it for a team")
	root := t.TempDir()
	cert, _ := selfSigned(t, root)
	addr, metrics := freeAddr(t), freeAddr(t)
	sh := newShell(t, root, nil, "0.0.0.0:8443", addr, "127.0.0.1:9187", metrics)
	out, _ := sh.run(lines[:1])
	printed := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, printed, 2, "a token, then its grant: %s", out)
	require.NoError(t, os.WriteFile(filepath.Join(root, "tokens.json"), []byte("["+printed[1]+"]"), 0o600))
	sh.start(lines[1:])

	pem, err := os.ReadFile(cert)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr
	waitFor(t, func() bool { return getStatus(tlsClient, url+"/readyz") == http.StatusOK })
	// The history commands, against this server (the client trusts its
	// certificate through SSL_CERT_FILE).
	history := docstest.Block(t, repoRoot, "the time and the content:")
	require.Len(t, history, 3)
	alice, env := clone(t, root, "alice")
	env = append(env, "AGENTMEM_TEAM_TOKEN="+printed[0], "SSL_CERT_FILE="+cert)
	team := projectTeamDir(t, alice, env)
	require.NoError(t, os.MkdirAll(team, 0o755))
	for v := 1; v <= 13; v++ {
		require.NoError(t, os.WriteFile(filepath.Join(team, "deploy.md"), []byte(fmt.Sprintf("Deploy rule, take %d.\n", v)), 0o644))
		_, errOut, code := runIn(t, alice, env, "team", "push", "--server", url)
		require.Equal(t, 0, code, errOut)
	}
	inProject := newShell(t, alice, env, "https://host:8443", url)
	out, _ = inProject.run(history[:1])
	assert.Contains(t, out, "deploy.md")
	out, _ = inProject.run(history[1:2])
	assert.Regexp(t, `(?m)^\s*13 .*alice`, out)
	assert.Regexp(t, `(?m)^\s*12 .*alice`, out)
	out, _ = inProject.run(history[2:3])
	assert.Contains(t, out, "restored deploy.md from version 12 as version 14")
	_, errOut, code := runIn(t, alice, env, "team", "pull", "--server", url)
	require.Equal(t, 0, code, errOut)
	got, err := os.ReadFile(filepath.Join(team, "deploy.md"))
	require.NoError(t, err)
	assert.Equal(t, "Deploy rule, take 12.\n", string(got))

	resp, err := http.Get("http://" + metrics + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "agentmem_team_requests_total", "the metrics address serves the server's metrics")
}

// getStatus returns the status of a GET, or 0 when it fails.
func getStatus(c *http.Client, url string) int {
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
