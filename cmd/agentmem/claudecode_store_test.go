package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mitm is an HTTPS proxy that terminates TLS for every host with
// certificates of its own CA, sends /v1/code/memory/ requests to an
// agentmem server and answers 404 to the rest: Claude Code's memory host
// is fixed to api.anthropic.com, and this is how its store client reaches
// a local server offline.
type mitm struct {
	url    string // the proxy, for HTTPS_PROXY
	caFile string // the CA certificate, for NODE_EXTRA_CA_CERTS
	mu     sync.Mutex
	seen   []string
}

func newMITM(t *testing.T, target string) *mitm {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentmem test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	m := &mitm{caFile: filepath.Join(t.TempDir(), "ca.pem")}
	require.NoError(t, os.WriteFile(m.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644))
	leafFor := func(host string) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}
	}
	targetURL, err := url.Parse(target)
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(targetURL)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.seen = append(m.seen, r.Method+" "+r.Host+r.URL.RequestURI())
		m.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/v1/code/memory/") {
			forward.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		host, _, _ := net.SplitHostPort(r.Host)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
		cert := leafFor(host)
		tconn := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
		go func() {
			defer tconn.Close()
			br := bufio.NewReader(tconn)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				req.URL.Scheme, req.URL.Host = "https", r.Host
				rec := httptest.NewRecorder()
				inner.ServeHTTP(rec, req)
				resp := rec.Result()
				resp.ContentLength = int64(rec.Body.Len())
				resp.Body = nopCloser{bytes.NewReader(rec.Body.Bytes())}
				if err := resp.Write(tconn); err != nil {
					return
				}
			}
		}()
	}))
	t.Cleanup(proxy.Close)
	m.url = proxy.URL
	return m
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func (m *mitm) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

// TestClaudeCodeTakesAStoreFolderAgentmemSynced mounts one store in the
// real Claude Code 2.1.328 and in agentmem on the same folder. agentmem
// syncs first (its manifests, a pushed file); then a memory is added to
// the store, and Claude Code, started with the store mounted, takes the
// folder as its own (it loads agentmem's basis; no "remove or rename"
// notice) and pulls the new memory into it; agentmem's next round agrees
// with what Claude Code wrote. A second mount whose folder holds a file
// but no manifest is refused by agentmem; Claude Code 2.1.328 merges such
// a folder (it pulled the store and pushed the file), and agentmem then
// takes the folder Claude Code mounted as its own.
func TestClaudeCodeTakesAStoreFolderAgentmemSynced(t *testing.T) {
	p := newCCProject(t)
	dir := t.TempDir()
	tokens, key, _, _ := storeTokens(t, dir)
	srvURL, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens)
	for _, name := range []string{"team-store", "other-store"} {
		code, _, body := storeHTTP(t, "POST", srvURL+"/v1/memory_stores", key, true, map[string]any{"name": name})
		require.Equal(t, 200, code, string(body))
	}
	stores := `[{"path":"/v1/code/memory/team-store","mode":"rw","scope":"team","mount":"proj"},{"path":"/v1/code/memory/other-store","mount":"other"}]`
	mounts, err := storesync.ParseMounts(stores)
	require.NoError(t, err)
	folder := mounts[0].Dir(p.auto)
	client, err := storesync.New(folderAt(afero.NewOsFs(), folder), storesync.Options{BaseURL: srvURL, Token: key, Mount: mounts[0]})
	require.NoError(t, err)
	_, err = client.Sync(context.Background())
	require.NoError(t, err)
	writeFile(t, folder, "deploy.md", "---\nname: deploy\ndescription: deploy rules\ntype: project\n---\nDeploys freeze on Fridays.\n")
	res, err := client.Sync(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"/deploy.md"}, res.Pushed)
	// A folder that holds a file and no manifest: agentmem refuses to
	// mount it (and touches nothing).
	otherFolder := mounts[1].Dir(p.auto)
	writeFile(t, otherFolder, "stray.md", "not from any sync")
	otherClient, err := storesync.New(folderAt(afero.NewOsFs(), otherFolder), storesync.Options{BaseURL: srvURL, Token: key, Mount: mounts[1]})
	require.NoError(t, err)
	_, err = otherClient.Sync(context.Background())
	var foreign *storesync.ForeignDirError
	require.ErrorAs(t, err, &foreign)
	assert.NoFileExists(t, filepath.Join(otherFolder, ".memory-sync"))

	code, _, body := storeHTTP(t, "POST", srvURL+"/v1/code/memory/team-store/memories", key, false,
		map[string]any{"path": "/fresh.md", "content": "Added to the store after agentmem's sync.\n", "precondition": map[string]string{"type": "not_exists"}})
	require.Equal(t, 200, code, string(body))

	code, _, body = storeHTTP(t, "POST", srvURL+"/v1/code/memory/other-store/memories", key, false,
		map[string]any{"path": "/theirs.md", "content": "already in the other store\n"})
	require.Equal(t, 200, code, string(body))

	// Claude Code with the stores mounted, its memory host reached through
	// the proxy, and the store token as its session token.
	proxy := newMITM(t, srvURL)
	require.NoError(t, os.WriteFile(filepath.Join(p.home, ".claude.json"),
		[]byte(`{"projects":{"`+p.root+`":{"hasTrustDialogAccepted":true}}}`), 0o644))
	debug := filepath.Join(dir, "claude-debug.log")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bin, "-p", "hello", "--output-format", "json", "--debug-file", debug)
	cmd.Dir = p.root
	cmd.Env = append(p.env(), "ANTHROPIC_BASE_URL="+p.stub.srv.URL, "ANTHROPIC_API_KEY=sk-ant-offline-test", "DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1", "CLAUDE_MEMORY_STORES="+stores, "CLAUDE_CODE_SESSION_ACCESS_TOKEN="+key,
		"HTTPS_PROXY="+proxy.url, "https_proxy="+proxy.url, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"NODE_EXTRA_CA_CERTS="+proxy.caFile)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	logged, _ := os.ReadFile(debug)
	var storeLines []string
	for _, l := range strings.Split(string(logged), "\n") {
		if strings.Contains(l, "memory-stores") || strings.Contains(l, "multi-store-sync") || strings.Contains(l, "memory-watcher") {
			storeLines = append(storeLines, l)
		}
	}
	t.Logf("Claude Code's store lines:\n%s\nrequests through the proxy:\n%s", strings.Join(storeLines, "\n"), strings.Join(proxy.requests(), "\n"))

	got, err := os.ReadFile(filepath.Join(folder, "fresh.md"))
	require.NoError(t, err, "Claude Code pulled the new memory into the folder agentmem synced")
	assert.Equal(t, "Added to the store after agentmem's sync.\n", string(got))
	assert.Contains(t, string(logged), "multi-store-sync[proj]: loaded persisted basis (1 entries, 0 pending delete(s))",
		"Claude Code read agentmem's basis as its own")
	assert.NotContains(t, string(logged), "remove or rename")

	// agentmem's next round agrees with what Claude Code wrote, and takes
	// the folder Claude Code mounted (its manifests) as its own.
	res, err = client.Sync(context.Background())
	require.NoError(t, err)
	assert.False(t, res.Changed(), "%+v", res)
	assert.False(t, res.BasisReset)
	res, err = otherClient.Sync(context.Background())
	require.NoError(t, err, "Claude Code's manifest is taken")
	assert.False(t, res.Changed(), "%+v", res)
	assert.False(t, res.BasisReset)
}

// The real Claude Code, syncing a store under review with an agent's
// token, never receives a memory that waits for review, receives it once
// a person approves it, and never a rejected one.
func TestClaudeCodeNeverReceivesAPendingMemory(t *testing.T) {
	p := newCCProject(t)
	dir := t.TempDir()
	tokens, agent, _, _ := storeTokens(t, dir) // alice: a grant without kind, an agent's
	person, grant, err := teamserver.NewToken("acme", nil, "*")
	require.NoError(t, err)
	grant.Name, grant.Kind = "ana", teamserver.KindPerson
	raw, err := os.ReadFile(tokens)
	require.NoError(t, err)
	var grants []teamserver.TokenGrant
	require.NoError(t, json.Unmarshal(raw, &grants))
	raw, err = json.Marshal(append(grants, grant))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tokens, raw, 0o600))
	srvURL, _ := serveArgs(t, filepath.Join(dir, "team.db"), tokens)
	code, _, body := storeHTTP(t, "POST", srvURL+"/v1/memory_stores", person, true, map[string]any{"name": "team-store"})
	require.Equal(t, 200, code, string(body))
	var st struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &st))
	code, _, body = storeHTTP(t, "PUT", srvURL+"/v1/review/policy?store="+st.ID, person, false, map[string]string{"policy": "review"})
	require.Equal(t, 200, code, string(body))

	write := func(token, path, content string) int {
		code, _, body := storeHTTP(t, "POST", srvURL+"/v1/code/memory/team-store/memories", token, false,
			map[string]any{"path": path, "content": content, "precondition": map[string]string{"type": "not_exists"}})
		require.Less(t, code, 300, string(body))
		return code
	}
	assert.Equal(t, 200, write(person, "/reviewed.md", "Written by a person: stored at once.\n"))
	assert.Equal(t, 202, write(agent, "/pending.md", "PENDING: waits for a person.\n"))
	assert.Equal(t, 202, write(agent, "/rejected.md", "REJECTED: never to be served.\n"))
	var list struct {
		Proposals []struct{ ID, Key string }
	}
	code, _, body = storeHTTP(t, "GET", srvURL+"/v1/review/proposals?store="+st.ID, person, false, nil)
	require.Equal(t, 200, code, string(body))
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Proposals, 2)
	for _, pr := range list.Proposals {
		if pr.Key == "/rejected.md" {
			code, _, body = storeHTTP(t, "POST", srvURL+"/v1/review/proposals/"+pr.ID+"/reject", person, false, map[string]string{"reason": "not ours"})
			require.Equal(t, 200, code, string(body))
		}
	}

	stores := `[{"path":"/v1/code/memory/team-store","mode":"rw","scope":"team","mount":"proj"}]`
	mounts, err := storesync.ParseMounts(stores)
	require.NoError(t, err)
	folder := mounts[0].Dir(p.auto)
	proxy := newMITM(t, srvURL)
	require.NoError(t, os.WriteFile(filepath.Join(p.home, ".claude.json"),
		[]byte(`{"projects":{"`+p.root+`":{"hasTrustDialogAccepted":true}}}`), 0o644))
	runClaude := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, p.bin, "-p", "hello", "--output-format", "json")
		cmd.Dir = p.root
		cmd.Env = append(p.env(), "ANTHROPIC_BASE_URL="+p.stub.srv.URL, "ANTHROPIC_API_KEY=sk-ant-offline-test", "DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1", "CLAUDE_MEMORY_STORES="+stores, "CLAUDE_CODE_SESSION_ACCESS_TOKEN="+agent,
			"HTTPS_PROXY="+proxy.url, "https_proxy="+proxy.url, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
			"NODE_EXTRA_CA_CERTS="+proxy.caFile)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	runClaude()
	got, err := os.ReadFile(filepath.Join(folder, "reviewed.md"))
	require.NoError(t, err, "Claude Code synced the store (requests: %v)", proxy.requests())
	assert.Equal(t, "Written by a person: stored at once.\n", string(got))
	assert.NoFileExists(t, filepath.Join(folder, "pending.md"), "a pending memory never reaches Claude Code")
	assert.NoFileExists(t, filepath.Join(folder, "rejected.md"))

	for _, pr := range list.Proposals {
		if pr.Key == "/pending.md" {
			code, _, body = storeHTTP(t, "POST", srvURL+"/v1/review/proposals/"+pr.ID+"/approve", person, false, nil)
			require.Equal(t, 200, code, string(body))
		}
	}
	runClaude()
	got, err = os.ReadFile(filepath.Join(folder, "pending.md"))
	require.NoError(t, err, "approved: Claude Code receives it")
	assert.Equal(t, "PENDING: waits for a person.\n", string(got))
	assert.NoFileExists(t, filepath.Join(folder, "rejected.md"), "rejected: never")
}
