package console_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/storewire"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/console"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
	"github.com/stretchr/testify/require"
)

// fixture is a server on SQLite with the console mounted, and four
// tokens: people alice and bob of acme, gina of globex, and acme's
// agent robot.
type fixture struct {
	srv            *httptest.Server
	h              *teamserver.Handler
	con            *console.Console
	alice, bob     string
	gina           string
	robot          string
	storeID        string
	now            time.Time
	clock          func() time.Time
	advance        func(time.Duration)
	consoleBaseURL string
}

const (
	noteV1  = "---\nname: deploys\ndescription: How we deploy\ntype: project\n---\n# Deploys\n\nRun `make deploy` from **main**.\n"
	noteV2  = "---\nname: deploys\ndescription: How we deploy\ntype: project\n---\n# Deploys\n\nRun `make release` from **main**, then watch the dashboard.\n"
	noteV3  = "---\nname: deploys\ndescription: How we deploy\ntype: project\n---\n# Deploys\n\nNever deploy on Fridays.\n"
	hostile = "---\nname: hostile\ndescription: <script>alert(1)</script>\ntype: reference\n---\n# Look\n\n<script>window.pwned=1</script>\n\n[click me](javascript:window.pwned=2) and <img src=x onerror=\"window.pwned=3\">\n"
)

func newFixture(t testing.TB) *fixture {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	mk := func(org, name string, repos []string, stores ...string) (string, teamserver.TokenGrant) {
		tok, g, err := teamserver.NewToken(org, repos, stores...)
		require.NoError(t, err)
		g.Name, g.Kind = name, teamserver.KindPerson
		return tok, g
	}
	f := &fixture{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	cur := f.now
	f.clock = func() time.Time { return cur }
	f.advance = func(d time.Duration) { cur = cur.Add(d) }
	var ga, gb, gg, gr teamserver.TokenGrant
	f.alice, ga = mk("acme", "alice", []string{"acme/*"}, "*")
	f.bob, gb = mk("acme", "bob", []string{"acme/shop"})
	f.gina, gg = mk("globex", "gina", []string{"globex/*", "acme/shop"}, "*")
	f.robot, gr = mk("acme", "robot", []string{"acme/*"}, "*")
	gr.Kind = teamserver.KindAgent
	f.h, err = teamserver.NewHandler(store, teamserver.Options{Tokens: []teamserver.TokenGrant{ga, gb, gg, gr}, RatePerToken: -1, Now: func() time.Time { return f.clock() }})
	require.NoError(t, err)
	f.con, err = console.New(f.h, console.Options{PageSize: 3, Now: func() time.Time { return f.clock() }})
	require.NoError(t, err)
	f.srv = httptest.NewServer(f.con.Wrap(f.h))
	t.Cleanup(f.srv.Close)
	f.consoleBaseURL = f.srv.URL + f.con.Prefix()

	f.put(t, f.alice, "acme/shop", map[string]string{"deploys.md": noteV1, "style.md": "---\ntype: feedback\ndescription: Code style\n---\nTabs, not spaces.\n"})
	f.put(t, f.bob, "acme/shop", map[string]string{"deploys.md": noteV2, "oncall.md": "---\ntype: project\ndescription: Who is on call\n---\nThe rota is in the wiki.\n"})
	f.put(t, f.alice, "acme/shop", map[string]string{"deploys.md": noteV3, "hostile.md": hostile, "people/carol.md": "---\ntype: user\n---\nCarol prefers short answers.\n"})
	f.put(t, f.alice, "acme/api", map[string]string{"api.md": "---\ntype: reference\n---\nThe API lives in api/.\n"})
	f.put(t, f.gina, "globex/web", map[string]string{"secret-plan.md": "---\ntype: project\n---\nGlobex only.\n"})

	var st struct{ ID string }
	f.stores(t, f.alice, http.MethodPost, "", map[string]any{"name": "notes"}, &st)
	f.storeID = st.ID
	var m struct{ ID string }
	f.stores(t, f.alice, http.MethodPost, "/"+st.ID+"/memories", map[string]any{"path": "/prefs.md", "content": "---\ntype: user\n---\nLikes tea.\n"}, &m)
	f.stores(t, f.alice, http.MethodPost, "/"+st.ID+"/memories/"+m.ID, map[string]any{"content": "---\ntype: user\n---\nLikes coffee now.\n"}, nil)
	return f
}

func (f *fixture) put(t testing.TB, token, repo string, entries map[string]string) {
	t.Helper()
	f.advance(time.Minute)
	f.do(t, token, http.MethodPut, teamwire.DefaultSyncPath+"?repo="+url.QueryEscape(repo), teamwire.PutBody{Entries: entries}, nil)
}

func (f *fixture) stores(t testing.TB, token, method, rest string, body, out any) {
	t.Helper()
	f.advance(time.Minute)
	f.do(t, token, method, storewire.StoresPath+rest, body, out)
}

func (f *fixture) do(t testing.TB, token, method, path string, body, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s: %s", method, path, rb)
	if out != nil {
		require.NoError(t, json.Unmarshal(rb, out))
	}
}

// repoContent reads one key of a repo through the sync protocol.
func (f *fixture) repoContent(t *testing.T, token, repo, key string) (string, bool) {
	t.Helper()
	var data teamwire.TeamMemoryData
	f.do(t, token, http.MethodGet, teamwire.DefaultSyncPath+"?repo="+url.QueryEscape(repo), nil, &data)
	v, ok := data.Content.Entries[key]
	return v, ok
}

// propose sends a team PUT that the server keeps for review (202).
func (f *fixture) propose(t testing.TB, token, repo string, entries map[string]string) {
	t.Helper()
	f.advance(time.Minute)
	b, err := json.Marshal(teamwire.PutBody{Entries: entries})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPut, f.srv.URL+teamwire.DefaultSyncPath+"?repo="+url.QueryEscape(repo), bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agentmem-Door", "memory-tool")
	req.Header.Set("X-Agentmem-Session", "sess-42")
	req.Header.Set("X-Agentmem-Origin", "agent")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "the write is kept for review: %s", rb)
}
