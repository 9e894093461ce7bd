package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistoryThroughTheCLI writes, overwrites, deletes and restores a key
// with named tokens, and reads the log with its authors.
func TestHistoryThroughTheCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	newNamed := func(name string) (string, string) {
		out, _, code := runBin(t, nil, "team", "token", "--org", "acme", "--repo", "acme/*", "--name", name)
		require.Equal(t, 0, code)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2)
		assert.Contains(t, lines[1], `"name":"`+name+`"`)
		return lines[0], lines[1]
	}
	alice, aliceGrant := newNamed("alice")
	bob, bobGrant := newNamed("bob")
	tokens := filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte("["+aliceGrant+","+bobGrant+"]"), 0o600))
	url, _ := serve(t, filepath.Join(dir, "team.db"), tokens)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	sync := func(who, token, team string) string {
		out, errOut, code := runBin(t, []string{"AGENTMEM_TEAM_TOKEN=" + token}, "team", "sync", "--server", url, "--repo", "acme/shop", "--dir", team)
		require.Equal(t, 0, code, "%s: %s", who, errOut)
		return out
	}
	require.NoError(t, os.MkdirAll(a, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(a, "deploy.md"), []byte("Deploy on Tuesdays."), 0o644))
	sync("alice", alice, a)
	sync("bob", bob, b)
	require.NoError(t, os.WriteFile(filepath.Join(b, "deploy.md"), []byte("Deploy whenever."), 0o644))
	sync("bob", bob, b)
	require.NoError(t, os.Remove(filepath.Join(b, "deploy.md")))
	sync("bob", bob, b)

	out, errOut, code := runBin(t, []string{"AGENTMEM_TEAM_TOKEN=" + alice}, "team", "log", "--server", url, "--repo", "acme/shop", "--key", "deploy.md")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Regexp(t, `^\s*3 .* bob +cli +deleted$`, lines[0])
	assert.Regexp(t, `^\s*2 .* bob +cli +sha256:`, lines[1])
	assert.Regexp(t, `^\s*1 .* alice +cli +sha256:`, lines[2])
	out, _, code = runBin(t, []string{"AGENTMEM_TEAM_TOKEN=" + alice}, "team", "log", "--server", url, "--repo", "acme/shop")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "deploy.md")

	out, errOut, code = runBin(t, []string{"AGENTMEM_TEAM_TOKEN=" + alice}, "team", "restore", "--server", url, "--repo", "acme/shop", "--key", "deploy.md", "--version", "1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "restored deploy.md from version 1 as version 4")
	sync("alice", alice, a)
	got, err := os.ReadFile(filepath.Join(a, "deploy.md"))
	require.NoError(t, err)
	assert.Equal(t, "Deploy on Tuesdays.", string(got))
	_, _, code = runBin(t, []string{"AGENTMEM_TEAM_TOKEN=" + alice}, "team", "restore", "--server", url, "--repo", "acme/shop", "--key", "deploy.md", "--version", "99")
	assert.NotEqual(t, 0, code, "no such version")
}

// selfSigned writes a certificate and key for 127.0.0.1.
func selfSigned(t *testing.T, dir string) (string, string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return cert, keyPath
}

func TestServeTLSMetricsAndHealth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, tokens := makeToken(t, dir)
	cert, key := selfSigned(t, dir)
	metricsAddr := freeAddr(t)
	cmd := exec.Command(binary(t), "team", "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "team.db"), "--tokens", tokens,
		"--tls-cert", cert, "--tls-key", key, "--metrics-addr", metricsAddr)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	var url string
	for sc.Scan() {
		if m := strings.Fields(sc.Text()); len(m) >= 3 && m[0] == "listening" {
			url = m[2]
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	require.True(t, strings.HasPrefix(url, "https://"), url)
	pool := x509.NewCertPool()
	pemBytes, err := os.ReadFile(cert)
	require.NoError(t, err)
	pool.AppendCertsFromPEM(pemBytes)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := client.Get(url + p)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
	_, err = http.Get(strings.Replace(url, "https://", "http://", 1) + "/healthz")
	if err == nil {
		t.Log("plain HTTP answered by a TLS server (a 400 is fine)")
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "agentmem_team_store_connections_in_use")
	assert.Contains(t, string(body), "agentmem_team_repos")

	// Under TLS the console's cookies are Secure.
	resp, err = client.Get(url + "/console/signin")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEmpty(t, resp.Cookies())
	for _, c := range resp.Cookies() {
		assert.True(t, c.Secure, "cookie %s", c.Name)
		assert.True(t, c.HttpOnly, "cookie %s", c.Name)
	}
}

// TestServeConsole: team serve serves the console at /console beside the
// protocols, and --console=false turns it off.
func TestServeConsole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token, tokens := makeToken(t, dir)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	url, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens)
	resp, err := noRedirect.Get(url + "/console/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "the console asks for a sign-in")
	resp, err = http.Get(url + "/console/signin")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `<label for="token">`)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	assert.False(t, resp.Cookies()[0].Secure, "no Secure cookie over plain HTTP on loopback")
	req, _ := http.NewRequest(http.MethodGet, url+"/api/claude_code/team_memory?repo=acme/x&view=hashes", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the protocol is served as before (an empty repo)")

	off, _ := serveArgs(t, filepath.Join(dir, "team2.db"), tokens, "--console=false")
	resp, err = http.Get(off + "/console/signin")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "--console=false: no console")
}

// TestREADMEConsole runs the README's console command as written (on a
// free port) and opens the console it names.
func TestREADMEConsole(t *testing.T) {
	t.Parallel()
	lines := readmeBlock(t, "also serves a web console at `/console/`")
	dir := t.TempDir()
	_, tokens := makeToken(t, dir)
	require.NoError(t, os.Rename(tokens, filepath.Join(dir, "tokens.json")))
	addr := freeAddr(t)
	var cmdLines []string
	var consoleURL string
	for _, l := range lines {
		if u, ok := strings.CutPrefix(l, "# console on "); ok {
			consoleURL = strings.Replace(u, "127.0.0.1:8787", addr, 1)
			continue
		}
		cmdLines = append(cmdLines, l)
	}
	require.NotEmpty(t, consoleURL, "the block says where the console is")
	stop := newShell(t, dir, nil, "127.0.0.1:8787", addr).start(cmdLines)
	// The server says where the console is once it listens: wait for that
	// line, so the request below reaches this server.
	for range 200 {
		if strings.Contains(stop(), "console on "+consoleURL) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Contains(t, stop(), "console on "+consoleURL, "the server prints what the README says")
	var resp *http.Response
	var err error
	for range 100 {
		if resp, err = http.Get(consoleURL + "signin"); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "Sign in")
}
