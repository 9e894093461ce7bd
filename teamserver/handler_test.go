package teamserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fixture struct {
	srv          *httptest.Server
	acme, globex string // tokens
	logs         *bytes.Buffer
	store        teamserver.Store
	h            *teamserver.Handler
}

func newServer(t *testing.T, mutate func(*teamserver.Options)) *fixture {
	t.Helper()
	return newServerOn(t, teamserver.NewMemoryStore(), mutate)
}

func newServerOn(t *testing.T, store teamserver.Store, mutate func(*teamserver.Options)) *fixture {
	t.Helper()
	acme, acmeGrant, err := teamserver.NewToken("acme", []string{"acme/*"})
	require.NoError(t, err)
	globex, globexGrant, err := teamserver.NewToken("globex", []string{"globex/web"})
	require.NoError(t, err)
	logs := &bytes.Buffer{}
	cfg := teamserver.Options{Tokens: []teamserver.TokenGrant{acmeGrant, globexGrant}, MaxEntries: 5,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := teamserver.NewHandler(store, cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, acme: acme, globex: globex, logs: logs, store: store, h: h}
}

func (f *fixture) do(t *testing.T, method, token, repo, query string, body any, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	u := f.srv.URL + teamwire.DefaultSyncPath + "?repo=" + url.QueryEscape(repo) + query
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			raw, err := json.Marshal(b)
			require.NoError(t, err)
			rd = bytes.NewReader(raw)
		}
	}
	req, err := http.NewRequest(method, u, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, data
}

func errCode(t *testing.T, body []byte) string {
	t.Helper()
	var e teamwire.ErrorBody
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	for _, s := range []string{e.Error.Type, e.Error.Message, e.Error.Details.ErrorCode} {
		assert.LessOrEqual(t, len(s), 256)
	}
	return e.Error.Details.ErrorCode
}

func TestPullPushCycle(t *testing.T) {
	f := newServer(t, nil)
	resp, body := f.do(t, "GET", f.acme, "acme/shop", "", nil, nil)
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, "team_memory_not_found", errCode(t, body))
	resp, _ = f.do(t, "GET", f.acme, "acme/shop", "&view=hashes", nil, nil)
	assert.Equal(t, 404, resp.StatusCode)

	resp, body = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"ci.md": "CI stays green", "notes/db.md": "real DB"}}, nil)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	var put teamwire.PutResult
	require.NoError(t, json.Unmarshal(body, &put))
	assert.Equal(t, int64(1), put.Version)
	want := map[string]string{"ci.md": teamwire.EntryChecksum("CI stays green"), "notes/db.md": teamwire.EntryChecksum("real DB")}
	assert.Equal(t, teamwire.RepoChecksum(want), put.Checksum)
	assert.Equal(t, `"`+put.Checksum+`"`, resp.Header.Get("ETag"))

	resp, body = f.do(t, "GET", f.acme, "acme/shop", "", nil, nil)
	require.Equal(t, 200, resp.StatusCode)
	var data teamwire.TeamMemoryData
	require.NoError(t, json.Unmarshal(body, &data))
	assert.Equal(t, "acme", data.OrganizationID, "organizationId comes from the token's tenant")
	assert.Equal(t, "acme/shop", data.Repo)
	assert.Equal(t, put.Checksum, data.Checksum)
	assert.Equal(t, "real DB", data.Content.Entries["notes/db.md"])
	assert.Equal(t, want, data.Content.EntryChecksums)
	assert.Equal(t, `"`+put.Checksum+`"`, resp.Header.Get("ETag"))

	resp, body = f.do(t, "GET", f.acme, "acme/shop", "", nil, map[string]string{"If-None-Match": `"` + put.Checksum + `"`})
	assert.Equal(t, 304, resp.StatusCode)
	assert.Empty(t, body)

	resp, body = f.do(t, "GET", f.acme, "acme/shop", "&view=hashes", nil, nil)
	require.Equal(t, 200, resp.StatusCode)
	var hv teamwire.HashesView
	require.NoError(t, json.Unmarshal(body, &hv))
	assert.Equal(t, want, hv.EntryChecksums)
	assert.NotContains(t, string(body), "real DB", "the hashes view has no contents")

	// Conditional writes.
	resp, body = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"ci.md": "v2"}}, map[string]string{"If-Match": `"sha256:stale"`})
	assert.Equal(t, 412, resp.StatusCode)
	assert.Equal(t, teamwire.CodeConflict, errCode(t, body))
	resp, _ = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"ci.md": "v2"}}, map[string]string{"If-Match": `"` + put.Checksum + `"`})
	assert.Equal(t, 200, resp.StatusCode)

	// Tombstones.
	resp, _ = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{}, SoftDeleteKeys: []string{"ci.md"}}, nil)
	require.Equal(t, 200, resp.StatusCode)
	_, body = f.do(t, "GET", f.acme, "acme/shop", "", nil, nil)
	var after teamwire.TeamMemoryData
	require.NoError(t, json.Unmarshal(body, &after))
	assert.Contains(t, after.Content.DeletedEntries, "ci.md")
	assert.NotContains(t, after.Content.Entries, "ci.md")
	_, body = f.do(t, "GET", f.acme, "acme/shop", "&view=hashes", nil, nil)
	var hv2 teamwire.HashesView
	require.NoError(t, json.Unmarshal(body, &hv2))
	assert.Contains(t, hv2.DeletedEntries, "ci.md")

	logs := f.logs.String()
	assert.Contains(t, logs, "repo=acme/shop")
	assert.NotContains(t, logs, "real DB", "logs carry no contents")
	assert.NotContains(t, logs, f.acme, "logs carry no tokens")
}

func TestLimitsAndBadInput(t *testing.T) {
	f := newServer(t, func(c *teamserver.Options) { c.MaxBodyBytes = 4096; c.MaxEntryBytes = 1000 })
	entries := map[string]string{}
	for _, k := range []string{"a.md", "b.md", "c.md", "d.md", "e.md", "f.md"} {
		entries[k] = "x"
	}
	resp, body := f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: entries}, nil)
	require.Equal(t, 413, resp.StatusCode)
	var e teamwire.ErrorBody
	require.NoError(t, json.Unmarshal(body, &e))
	assert.Equal(t, teamwire.ErrorDetails{ErrorCode: teamwire.CodeTooManyEntries, MaxEntries: 5, ReceivedEntries: 6}, e.Error.Details)

	resp, body = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"big.md": strings.Repeat("y", 5000)}}, nil)
	assert.Equal(t, 413, resp.StatusCode)
	assert.Equal(t, teamwire.CodeBodyTooLarge, errCode(t, body))

	resp, body = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"big.md": strings.Repeat("y", 1500)}}, nil)
	assert.Equal(t, 413, resp.StatusCode)
	assert.Equal(t, teamwire.CodeEntryTooLarge, errCode(t, body))

	for _, key := range []string{"../escape.md", "/abs.md", `a\b.md`, "%2e%2e%2fx.md", "．．／x.md", "a//b.md", "", "a\u001b]0;TITLE\u0007.md", "rtl\u202e.md"} {
		resp, body = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{"ok.md": "fine", key: "x"}}, nil)
		assert.Equal(t, 400, resp.StatusCode, "%q", key)
		assert.Equal(t, teamwire.CodeInvalidKey, errCode(t, body))
		assert.NotContains(t, string(body), "fine")
	}
	resp, body = f.do(t, "PUT", f.acme, "acme/shop", "", teamwire.PutBody{Entries: map[string]string{}, SoftDeleteKeys: []string{"../x"}}, nil)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, teamwire.CodeInvalidKey, errCode(t, body))
	resp, body = f.do(t, "PUT", f.acme, "acme/shop", "", `{"entries": {"a.md": `, nil)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, teamwire.CodeMalformedJSON, errCode(t, body))
	resp, _ = f.do(t, "GET", f.acme, "acme/shop", "", nil, nil)
	assert.Equal(t, 404, resp.StatusCode, "no refused request wrote anything")

	for _, slug := range []string{"", "noslash", "a/b/c", "../etc", "a/..", "own er/x"} {
		resp, body = f.do(t, "GET", f.acme, slug, "", nil, nil)
		assert.Equal(t, 400, resp.StatusCode, "%q", slug)
		assert.Equal(t, teamwire.CodeInvalidRepo, errCode(t, body))
	}
	resp, _ = f.do(t, "DELETE", f.acme, "acme/shop", "", nil, nil)
	assert.Equal(t, 405, resp.StatusCode)
	assert.Equal(t, "GET, PUT", resp.Header.Get("Allow"))
}

func TestAuth(t *testing.T) {
	f := newServer(t, nil)
	resp, _ := f.do(t, "PUT", f.globex, "globex/web", "", teamwire.PutBody{Entries: map[string]string{"a.md": "secret plans"}}, nil)
	require.Equal(t, 200, resp.StatusCode)

	for _, method := range []string{"GET", "PUT"} {
		for _, q := range []string{"", "&view=hashes"} {
			resp, body := f.do(t, method, "", "globex/web", q, teamwire.PutBody{}, nil)
			assert.Equal(t, 401, resp.StatusCode, "no token")
			assert.Equal(t, teamwire.CodeUnauthorized, errCode(t, body))
			resp, _ = f.do(t, method, "amt_not-a-token", "globex/web", q, teamwire.PutBody{}, nil)
			assert.Equal(t, 401, resp.StatusCode, "bad token")
			// Another tenant's repo: 403 whether it has data or not, same body.
			resp, body1 := f.do(t, method, f.acme, "globex/web", q, teamwire.PutBody{}, nil)
			assert.Equal(t, 403, resp.StatusCode)
			resp, body2 := f.do(t, method, f.acme, "globex/empty", q, teamwire.PutBody{}, nil)
			assert.Equal(t, 403, resp.StatusCode)
			assert.Equal(t, body1, body2, "a 403 never tells whether the repo exists")
			assert.NotContains(t, string(body1), "secret plans")
		}
	}
	// The same repo name under another tenant is another repo.
	resp, _ = f.do(t, "GET", f.globex, "globex/web", "", nil, nil)
	assert.Equal(t, 200, resp.StatusCode)
}

func TestTokens(t *testing.T) {
	token, grant, err := teamserver.NewToken("acme", []string{"acme/shop", "acme/*"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(token, "amt_"))
	assert.Equal(t, teamserver.HashToken(token), grant.TokenSHA256)
	assert.NotContains(t, grant.TokenSHA256, token)
	raw, err := json.Marshal([]teamserver.TokenGrant{grant})
	require.NoError(t, err)
	grants, err := teamserver.LoadTokens(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, []teamserver.TokenGrant{grant}, grants)
	for _, bad := range []string{`{}`, `[{"token_sha256":"abc","organization":"a","repos":["a/b"]}]`,
		`[{"token_sha256":"` + strings.Repeat("a", 64) + `","organization":"","repos":["a/b"]}]`,
		`[{"token_sha256":"` + strings.Repeat("a", 64) + `","organization":"o","repos":["bad"]}]`,
		`[{"token":"clear","organization":"o","repos":["a/b"]}]`} {
		_, err := teamserver.LoadTokens(strings.NewReader(bad))
		assert.Error(t, err, bad)
	}
	_, _, err = teamserver.NewToken("", []string{"a/b"})
	assert.Error(t, err)
	_, err = teamserver.NewHandler(nil, teamserver.Options{})
	assert.Error(t, err)
}
