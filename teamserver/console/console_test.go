package console_test

import (
	"crypto/sha256"
	"encoding/hex"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browserless is a client with a cookie jar that does not follow
// redirects, so each answer can be checked.
type browserless struct {
	t   *testing.T
	f   *fixture
	c   *http.Client
	url string
}

func newClient(t *testing.T, f *fixture) *browserless {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browserless{t: t, f: f, url: f.consoleBaseURL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browserless) get(path string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.url + path)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, html.UnescapeString(string(body))
}

func (b *browserless) post(path string, form url.Values, header map[string]string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	require.NotNil(t, m, "the page has a CSRF field")
	return m[1]
}

func (b *browserless) signIn(token string) string {
	b.t.Helper()
	_, page := b.get("/signin")
	resp, _ := b.post("/signin", url.Values{"csrf": {csrfOf(b.t, page)}, "token": {token}}, nil)
	require.Equal(b.t, http.StatusSeeOther, resp.StatusCode)
	_, home := b.get("/")
	return csrfOf(b.t, home)
}

func TestSignInSetsAStrictSessionCookie(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	resp, _ := b.get("/")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "without a session, the console sends you to sign in")
	assert.Contains(t, resp.Header.Get("Location"), "/console/signin")

	_, page := b.get("/signin")
	resp, body := b.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {"amt_not-a-token"}}, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, "not known to the server")

	_, page = b.get("/signin")
	resp, _ = b.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {f.alice}, "next": {"https://evil.example/"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/console/", resp.Header.Get("Location"), "a destination outside the console is not followed")
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "agentmem_console" && c.Value != "" {
			ck = c
		}
	}
	require.NotNil(t, ck)
	assert.True(t, ck.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	assert.Positive(t, ck.MaxAge, "the session expires")
	assert.NotContains(t, ck.Value, f.alice, "the cookie is a random session ID, not the token")

	plain, err := http.Get(b.url + "/signin")
	require.NoError(t, err)
	plain.Body.Close()
	require.NotEmpty(t, plain.Cookies())
	assert.False(t, plain.Cookies()[0].Secure, "plain HTTP: no Secure flag")
	req, err := http.NewRequest(http.MethodGet, b.url+"/signin", nil)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-Proto", "https")
	proxied, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	proxied.Body.Close()
	require.NotEmpty(t, proxied.Cookies())
	assert.True(t, proxied.Cookies()[0].Secure, "behind a TLS proxy the cookies are Secure")

	resp, home := b.get("/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self'")
	assert.NotContains(t, csp, "unsafe-inline")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.NotContains(t, home, "<script>", "no inline script")
	assert.Contains(t, home, "acme/shop")
	assert.Contains(t, home, "acme/api")
	assert.Contains(t, home, "notes")
	assert.NotContains(t, home, "globex")
}

func TestFailedSignInsAreLimitedPerAddress(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	var resp *http.Response
	var body string
	for range 25 {
		_, page := b.get("/signin")
		resp, body = b.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {"amt_guess"}}, nil)
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
	}
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the server's limit of failed authentications applies to the console")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Contains(t, body, "Too many failed sign-ins")
	_, page := b.get("/signin")
	resp, _ = b.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {f.alice}}, nil)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "even the right token waits")
}

func TestSessionExpiresAndSignOutEndsIt(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	b.signIn(f.alice)
	f.advance(9 * time.Hour)
	resp, _ := b.get("/")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "past its lifetime the session is gone")

	csrf := b.signIn(f.alice)
	old := b.c.Jar.Cookies(mustURL(t, b.url+"/"))
	resp, _ = b.post("/signout", url.Values{"csrf": {csrf}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// The old cookie, replayed, no longer opens anything.
	b2 := newClient(t, f)
	b2.c.Jar.SetCookies(mustURL(t, b.url+"/"), old)
	resp, _ = b2.get("/")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func TestFormsNeedTheirCSRFTokenAndTheirOrigin(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	csrf := b.signIn(f.alice)
	_, confirm := b.get("/repos/acme/shop/delete?key=style.md")
	form := url.Values{"csrf": {csrf}, "key": {"style.md"}, "seen": {seenOf(t, confirm)}}

	resp, body := b.post("/repos/acme/shop/delete", url.Values{"key": {"style.md"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token: %s", body)
	resp, _ = b.post("/repos/acme/shop/delete", url.Values{"key": {"style.md"}, "csrf": {"forged"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = b.post("/repos/acme/shop/delete", form, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a form from another site is refused")
	resp, _ = b.post("/repos/acme/shop/delete", form, map[string]string{"Origin": "https://evil.example"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "an Origin that is not the console's is refused")
	_, ok := f.repoContent(t, f.alice, "acme/shop", "style.md")
	assert.True(t, ok, "nothing refused was deleted")

	resp, _ = b.get("/signin")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "signed in, the sign-in page sends you home")
	b2 := newClient(t, f)
	_, page := b2.get("/signin")
	resp, _ = b2.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {f.alice}}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "no sign-in from another site (login CSRF)")
	resp, _ = b2.post("/signin", url.Values{"csrf": {"guess"}, "token": {f.alice}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, _ = b.post("/repos/acme/shop/delete", form, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, ok = f.repoContent(t, f.alice, "acme/shop", "style.md")
	assert.False(t, ok, "with its token and from the console, the form works")
}

func TestATokenSeesOnlyWhatItsGrantNames(t *testing.T) {
	f := newFixture(t)
	alice := newClient(t, f)
	alice.signIn(f.alice)
	for _, p := range []string{"/repos/globex/web", "/repos/globex/web/memory?key=secret-plan.md", "/repos/globex/nothing", "/stores/memstore_nope"} {
		resp, body := alice.get(p)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		assert.NotContains(t, body, "Globex only", p)
	}
	bob := newClient(t, f)
	bob.signIn(f.bob)
	_, home := bob.get("/")
	assert.Contains(t, home, "acme/shop")
	assert.NotContains(t, home, "acme/api", "bob's grant names acme/shop only")
	assert.NotContains(t, home, "notes", "bob's grant names no store")
	resp, _ := bob.get("/repos/acme/api")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = bob.get("/stores/" + f.storeID)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	gina := newClient(t, f)
	gina.signIn(f.gina)
	_, home = gina.get("/")
	assert.Contains(t, home, "globex/web")
	assert.NotContains(t, home, "acme/shop", "a grant naming another organization's repo reaches only its own tenant's")
	assert.NotContains(t, home, "notes")
	resp, body := gina.get("/repos/acme/shop/memory?key=deploys.md")
	assert.NotContains(t, body, "Fridays", "another tenant's memory of the same name never shows")
	_ = resp
}

func TestListFiltersAndPages(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	b.signIn(f.alice)
	_, page := b.get("/repos/acme/shop")
	assert.Contains(t, page, "5 of 5 memories, page 1 of 2")
	assert.Contains(t, page, "deploys.md")
	assert.Contains(t, page, `rel="next"`)
	_, page = b.get("/repos/acme/shop?type=project")
	assert.Contains(t, page, "2 of 5 memories")
	assert.Contains(t, page, "oncall.md")
	assert.NotContains(t, page, "style.md")
	_, page = b.get("/repos/acme/shop?author=bob")
	assert.Contains(t, page, "1 of 5 memories", "bob wrote oncall.md last; alice rewrote deploys.md")
	assert.Contains(t, page, "oncall.md")
	_, page = b.get("/repos/acme/shop?q=CAROL")
	assert.Contains(t, page, "1 of 5 memories")
	assert.Contains(t, page, "people/carol.md")
	_, page = b.get("/stores/" + f.storeID + "?type=user&author=alice")
	assert.Contains(t, page, "1 of 1 memories", "a store memory's author is who changed it last")
	assert.Contains(t, page, "/prefs.md")
	_, page = b.get("/stores/" + f.storeID + "?author=bob")
	assert.Contains(t, page, "0 of 1 memories")
}

func TestHostileMarkdownIsInert(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	b.signIn(f.alice)
	resp, err := b.c.Get(b.url + "/repos/acme/shop/memory?key=hostile.md")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page := string(raw)
	rendered := regexp.MustCompile(`(?s)<div class="rendered">(.*?)</div>`).FindStringSubmatch(page)
	require.NotNil(t, rendered)
	assert.NotContains(t, rendered[1], "script")
	assert.NotContains(t, rendered[1], "javascript")
	assert.NotContains(t, rendered[1], "onerror")
	assert.NotContains(t, rendered[1], "<img")
	assert.Contains(t, rendered[1], "click me", "the link's text stays")
	assert.NotContains(t, page, "<script>window")
	assert.NotContains(t, page, "<script>alert")
	assert.NotContains(t, page, `href="javascript:`)
	assert.NotContains(t, page, `onerror="`)
	assert.Contains(t, page, "&lt;script&gt;window.pwned=1&lt;/script&gt;", "the raw text shows the script as text")
	resp, err = b.c.Get(b.url + "/repos/acme/shop?type=reference")
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotContains(t, string(raw), "<script>alert")
	assert.Contains(t, string(raw), "&lt;script&gt;alert(1)&lt;/script&gt;", "a hostile description is listed as text")
}

func TestHistoryDiffRestoreAndDelete(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	csrf := b.signIn(f.alice)
	_, page := b.get("/repos/acme/shop/history?key=deploys.md")
	assert.Contains(t, page, "version 1")
	assert.Contains(t, page, "version 3")
	assert.Contains(t, page, "+Never deploy on Fridays.", "by default the two newest versions are compared")
	_, page = b.get("/repos/acme/shop/history?key=deploys.md&from=1&to=2")
	assert.Contains(t, page, "-Run `make deploy` from **main**.")
	assert.Contains(t, page, "+Run `make release` from **main**, then watch the dashboard.")

	_, confirm := b.get("/repos/acme/shop/restore?key=deploys.md&version=1")
	assert.Contains(t, confirm, "Restore this version")
	assert.Contains(t, confirm, "+Run `make deploy` from **main**.")
	content, _ := f.repoContent(t, f.alice, "acme/shop", "deploys.md")
	assert.Equal(t, noteV3, content, "the confirmation page changes nothing")
	resp, _ := b.post("/repos/acme/shop/restore", url.Values{"csrf": {csrf}, "key": {"deploys.md"}, "version": {"1"}, "seen": {seenOf(t, confirm)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	content, _ = f.repoContent(t, f.alice, "acme/shop", "deploys.md")
	assert.Equal(t, noteV1, content)
	_, page = b.get(strings.TrimPrefix(resp.Header.Get("Location"), "/console"))
	assert.Contains(t, page, "The version was restored")
	var hv teamwire.HistoryView
	f.do(t, f.alice, http.MethodGet, teamwire.DefaultSyncPath+"?repo=acme/shop&view=history&key=deploys.md", nil, &hv)
	require.NotEmpty(t, hv.Versions)
	assert.Equal(t, teamwire.DoorConsole, hv.Versions[0].Door, "the history says the write came through the console")
	assert.Equal(t, teamwire.OriginUser, hv.Versions[0].Origin)

	_, confirm = b.get("/repos/acme/shop/delete?key=oncall.md")
	assert.Contains(t, confirm, "Delete this memory")
	resp, _ = b.post("/repos/acme/shop/delete", url.Values{"csrf": {csrf}, "key": {"oncall.md"}, "seen": {seenOf(t, confirm)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, ok := f.repoContent(t, f.alice, "acme/shop", "oncall.md")
	assert.False(t, ok)
	_, page = b.get(strings.TrimPrefix(resp.Header.Get("Location"), "/console"))
	assert.Contains(t, page, "The memory oncall.md was deleted")
	resp, _ = b.post("/repos/acme/shop/delete", url.Values{"csrf": {csrf}, "key": {"oncall.md"}}, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "deleting what is gone says so")

	// A deleted memory comes back from its history.
	_, page = b.get("/repos/acme/shop/history?key=oncall.md")
	assert.Contains(t, page, "This memory is deleted")
	_, confirm = b.get("/repos/acme/shop/restore?key=oncall.md&version=2")
	assert.Contains(t, confirm, "writes it again")
	resp, _ = b.post("/repos/acme/shop/restore", url.Values{"csrf": {csrf}, "key": {"oncall.md"}, "version": {"2"}, "seen": {seenOf(t, confirm)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	content, ok = f.repoContent(t, f.alice, "acme/shop", "oncall.md")
	require.True(t, ok)
	assert.Contains(t, content, "The rota is in the wiki.")

	// A memory store: restore its first version, then delete it.
	_, page = b.get("/stores/" + f.storeID + "/history?key=/prefs.md")
	assert.Contains(t, page, "+Likes coffee now.")
	m := regexp.MustCompile(`restore\?key=%2Fprefs.md&version=([a-z0-9_]+)`).FindStringSubmatch(page)
	require.NotNil(t, m, page)
	_, confirm = b.get("/stores/" + f.storeID + "/restore?key=/prefs.md&version=" + m[1])
	resp, _ = b.post("/stores/"+f.storeID+"/restore", url.Values{"csrf": {csrf}, "key": {"/prefs.md"}, "version": {m[1]}, "seen": {seenOf(t, confirm)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = b.get("/stores/" + f.storeID + "/memory?key=/prefs.md")
	assert.Contains(t, page, "Likes tea.")
	// Another memory's version is not this memory's to restore.
	var other struct{ ID string }
	f.stores(t, f.alice, http.MethodPost, "/"+f.storeID+"/memories", map[string]any{"path": "/other.md", "content": "Other text.\n"}, &other)
	otherSeen := sha256.Sum256([]byte("Other text.\n"))
	resp, _ = b.post("/stores/"+f.storeID+"/restore", url.Values{"csrf": {csrf}, "key": {"/other.md"}, "version": {m[1]}, "seen": {hex.EncodeToString(otherSeen[:])}}, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, page = b.get("/stores/" + f.storeID + "/memory?key=/other.md")
	assert.Contains(t, page, "Other text.")
	assert.NotContains(t, page, "Likes tea.")
	f.stores(t, f.alice, http.MethodDelete, "/"+f.storeID+"/memories/"+other.ID, nil, nil)
	_, confirm = b.get("/stores/" + f.storeID + "/delete?key=/prefs.md")
	resp, _ = b.post("/stores/"+f.storeID+"/delete", url.Values{"csrf": {csrf}, "key": {"/prefs.md"}, "seen": {seenOf(t, confirm)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = b.get("/stores/" + f.storeID)
	assert.Contains(t, page, "0 of 0 memories")
	_, page = b.get("/stores/" + f.storeID + "/history?key=/prefs.md")
	assert.Contains(t, page, "This memory is deleted")
	_, confirm = b.get("/stores/" + f.storeID + "/restore?key=/prefs.md&version=" + m[1])
	resp, _ = b.post("/stores/"+f.storeID+"/restore", url.Values{"csrf": {csrf}, "key": {"/prefs.md"}, "version": {m[1]}, "seen": {seenOf(t, confirm)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = b.get("/stores/" + f.storeID + "/memory?key=/prefs.md")
	assert.Contains(t, page, "Likes tea.", "a deleted store memory comes back at its path")
}

// TestConfirmedChangeRefusedWhenTheMemoryChanged: a restore or a delete
// confirmed on a page that showed other text than the memory holds now
// (a teammate wrote it meanwhile) is refused, and that write stays.
func TestConfirmedChangeRefusedWhenTheMemoryChanged(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	csrf := b.signIn(f.alice)
	_, restoreConfirm := b.get("/repos/acme/shop/restore?key=deploys.md&version=1")
	_, deleteConfirm := b.get("/repos/acme/shop/delete?key=deploys.md")
	f.put(t, f.bob, "acme/shop", map[string]string{"deploys.md": "An intervening edit.\n"})
	resp, page := b.post("/repos/acme/shop/restore", url.Values{"csrf": {csrf}, "key": {"deploys.md"}, "version": {"1"}, "seen": {seenOf(t, restoreConfirm)}}, nil)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Contains(t, page, "changed since the confirmation page showed it")
	resp, _ = b.post("/repos/acme/shop/delete", url.Values{"csrf": {csrf}, "key": {"deploys.md"}, "seen": {seenOf(t, deleteConfirm)}}, nil)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	content, ok := f.repoContent(t, f.alice, "acme/shop", "deploys.md")
	require.True(t, ok)
	assert.Equal(t, "An intervening edit.\n", content)
}

func TestActivityPerToken(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	b.signIn(f.alice)
	_, page := b.get("/activity")
	assert.Contains(t, page, "bob")
	assert.Contains(t, page, "oncall.md")
	assert.NotContains(t, page, "secret-plan.md", "another tenant's writes never show")
	assert.Contains(t, page, "/prefs.md</a> (modified)", "a store's changes are listed too")
	assert.Contains(t, page, "notes")
	_, page = b.get("/activity?who=bob")
	assert.Contains(t, page, "oncall.md")
	assert.NotContains(t, page, "people/carol.md", "alice's writes are not bob's")
	assert.NotContains(t, page, "/prefs.md")
	gina := newClient(t, f)
	gina.signIn(f.gina)
	_, page = gina.get("/activity")
	assert.Contains(t, page, "secret-plan.md")
	assert.NotContains(t, page, "/prefs.md", "another tenant's store changes never show")
	assert.NotContains(t, page, "oncall.md")
}

func TestOnlyAPersonsTokenSignsIn(t *testing.T) {
	f := newFixture(t)
	b := newClient(t, f)
	_, page := b.get("/signin")
	resp, body := b.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "token": {f.robot}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, html.UnescapeString(body), "This is an agent's token: only a person's token signs in")
	assert.Contains(t, body, `<label for="token">`, "the refusal is the sign-in form again, to use another token")
	for _, c := range resp.Cookies() {
		assert.False(t, c.Name == "agentmem_console" && c.Value != "", "no session for an agent's token")
	}
	resp, _ = b.get("/review")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "still signed out")

	// The agent's token still syncs: only the console refuses it.
	_, ok := f.repoContent(t, f.robot, "acme/shop", "deploys.md")
	assert.True(t, ok)
	b.signIn(f.bob)
}

// seenOf returns the fingerprint a confirmation page carries.
func seenOf(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`name="seen" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, "the confirmation page carries what it showed")
	return m[1]
}
