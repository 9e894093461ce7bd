package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The browser tests need Chromium and axe-core. AGENTMEM_REQUIRE_BROWSER=1
// (CI sets it) makes a missing one a failure; otherwise the tests skip.
// AGENTMEM_CHROMIUM names the browser (default: chromium on the PATH),
// AGENTMEM_AXE_JS the axe.min.js file (default: axe-core installed under
// $TMPDIR/agentmem-axe, or a node_modules folder above this one).
// AGENTMEM_CONSOLE_SCREENSHOTS=dir writes the screenshots of the main
// pages there (docs/console holds the committed ones).

func needBrowserPart(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("AGENTMEM_REQUIRE_BROWSER") == "1" {
		t.Fatalf("%s; AGENTMEM_REQUIRE_BROWSER=1 requires it (.ci/run installs it)", what)
	}
	t.Skipf("%s; set AGENTMEM_REQUIRE_BROWSER=1 to make this a failure", what)
}

func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AGENTMEM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	needBrowserPart(t, "no Chromium found (apt-get install chromium)")
	return ""
}

func axeSource(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("AGENTMEM_AXE_JS"), filepath.Join(os.TempDir(), "agentmem-axe", "node_modules", "axe-core", "axe.min.js")}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			candidates = append(candidates, filepath.Join(d, "node_modules", "axe-core", "axe.min.js"))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	needBrowserPart(t, "no axe-core found (npm install axe-core under $TMPDIR/agentmem-axe, or set AGENTMEM_AXE_JS)")
	return ""
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1024, 720))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	require.NoError(t, chromedp.Do(ctx), "start Chromium at %s", bin)
	return ctx
}

type journey struct {
	t    *testing.T
	ctx  context.Context
	f    *fixture
	axe  string
	shot string // screenshot folder, "" for none
}

func (j *journey) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	j.t.Helper()
	require.NoError(j.t, chromedp.Do(j.ctx, steps...), what)
}

// eval runs JavaScript in the page and returns its value.
func eval[T any](j *journey, what, expr string, opts ...chromedp.EvaluateOption) T {
	j.t.Helper()
	v, err := chromedp.Run(j.ctx, chromedp.Evaluate[T](expr, opts...))
	require.NoError(j.t, err, what)
	return v
}

func (j *journey) text(sel string) string {
	j.t.Helper()
	s, err := chromedp.Run(j.ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(j.t, err, "read %s", sel)
	return s
}

func (j *journey) heading() string { return j.text("h1") }

// checkA11y runs axe-core in the page and fails on a serious or critical
// violation.
func (j *journey) checkA11y(page string) {
	j.t.Helper()
	if !eval[bool](j, "look for axe", `typeof window.axe !== "undefined"`) {
		eval[chromedp.Void](j, "inject axe", j.axe+";undefined")
	}
	type violation struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target []any `json:"target"`
		} `json:"nodes"`
	}
	res := eval[[]violation](j, "run axe on "+page, `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations)`, chromedp.EvalAwaitPromise)
	for _, v := range res {
		if v.Impact == "serious" || v.Impact == "critical" {
			b, _ := json.Marshal(v.Nodes)
			j.t.Errorf("%s: accessibility violation %s (%s): %s at %s", page, v.ID, v.Impact, v.Help, b)
		}
	}
}

func (j *journey) screenshot(name string) {
	j.t.Helper()
	if j.shot == "" {
		return
	}
	png, err := chromedp.Run(j.ctx, chromedp.FullScreenshot(100))
	require.NoError(j.t, err, "screenshot %s", name)
	require.NoError(j.t, os.WriteFile(filepath.Join(j.shot, name+".png"), png, 0o644))
}

func (j *journey) at(path string) {
	j.t.Helper()
	j.run("open "+path, chromedp.Navigate(j.f.consoleBaseURL+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// navigating runs steps that load another page and waits until it has.
func (j *journey) navigating(what string, steps ...chromedp.Action[chromedp.Void]) {
	j.t.Helper()
	eval[chromedp.Void](j, "mark the page", `window.__stale = true; undefined`)
	j.run(what, steps...)
	// The old page's context goes away while the new page loads: an
	// evaluation may fail meanwhile, so ask again until the new page
	// answers.
	deadline := time.Now().Add(20 * time.Second)
	for {
		loaded, err := chromedp.Run(j.ctx, chromedp.Evaluate[bool](`window.__stale === undefined && document.readyState === "complete"`))
		if err == nil && loaded {
			return
		}
		require.True(j.t, time.Now().Before(deadline), "the page after %q did not load (%v)", what, err)
		time.Sleep(20 * time.Millisecond)
	}
}

func (j *journey) click(sel string) {
	j.t.Helper()
	j.navigating("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

func (j *journey) signIn(token string) {
	j.t.Helper()
	j.at("/signin")
	j.run("sign in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#repos-h")))
}

func TestBrowserJourney(t *testing.T) {
	axe := axeSource(t)
	ctx := browser(t)
	f := newFixture(t)
	j := &journey{t: t, ctx: ctx, f: f, axe: axe, shot: os.Getenv("AGENTMEM_CONSOLE_SCREENSHOTS")}
	if j.shot != "" {
		require.NoError(t, os.MkdirAll(j.shot, 0o755))
	}

	// Signed out, the console asks for a token; a wrong one is refused.
	j.at("/")
	assert.Equal(t, "Sign in", j.heading())
	j.checkA11y("sign-in")
	j.screenshot("signin")
	j.run("wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "amt_wrong"), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(".error")))
	assert.Contains(t, j.text(".error"), "not known")
	j.at("/signin")
	j.run("agent's token", chromedp.SendKeys(chromedp.CSS("#token"), f.robot), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(".error")))
	assert.Contains(t, j.text(".error"), "agent's token")
	assert.Equal(t, "Sign in", j.heading(), "an agent's token does not sign in")

	// Sign in and browse.
	j.signIn(f.alice)
	home := j.text("main")
	assert.Contains(t, home, "acme/shop")
	assert.Contains(t, home, "acme/api")
	assert.Contains(t, home, "notes")
	assert.NotContains(t, home, "globex")
	j.checkA11y("home")
	j.screenshot("home")

	// Keyboard: the first Tab reaches the skip link, which leads to the
	// content.
	j.run("tab", chromedp.KeyEvent(kb.Tab))
	focused := eval[string](j, "focus", `document.activeElement.textContent`)
	assert.Equal(t, "Skip to content", focused)

	j.click(`a[href="/console/repos/acme/shop"]`)
	assert.Contains(t, j.heading(), "acme/shop")
	assert.Contains(t, j.text("main"), "5 of 5 memories, page 1 of 2")
	j.checkA11y("memory list")
	j.screenshot("list")
	j.click(`a[rel="next"]`)
	assert.Contains(t, j.text("main"), "page 2 of 2")

	// Filter by type with the form, then by text with the keyboard alone.
	j.run("choose a type", chromedp.SetValue(chromedp.CSS("#f-type"), "project"))
	j.click(`.filters button[type="submit"]`)
	list := j.text("main")
	assert.Contains(t, list, "2 of 5 memories")
	assert.Contains(t, list, "oncall.md")
	assert.NotContains(t, list, "style.md")
	j.at("/repos/acme/shop")
	j.navigating("filter by text", chromedp.Focus(chromedp.CSS("#f-q")), chromedp.KeyEvent("carol"), chromedp.KeyEvent(kb.Enter))
	assert.Contains(t, j.text("main"), "1 of 5 memories")
	j.at("/repos/acme/shop?author=bob")
	assert.Contains(t, j.text("main"), "1 of 5 memories")

	// Open a memory: rendered and raw.
	j.at("/repos/acme/shop")
	j.click(`a[href="/console/repos/acme/shop/memory?key=deploys.md"]`)
	assert.Equal(t, "deploys.md", j.heading())
	assert.Contains(t, j.text(".rendered"), "Never deploy on Fridays.")
	assert.Contains(t, j.text("main"), "How we deploy")
	j.checkA11y("memory")
	j.screenshot("memory")

	// Its history; compare version 1 with version 2.
	j.click(`.actions a[href*="/history"]`)
	j.run("choose versions", chromedp.Click(chromedp.CSS("#from-1")), chromedp.Click(chromedp.CSS("#to-2")))
	j.click(`main form button[type="submit"]`)
	d := j.text(".diff")
	assert.Contains(t, d, "-Run `make deploy` from **main**.")
	assert.Contains(t, d, "+Run `make release` from **main**, then watch the dashboard.")
	j.checkA11y("history")
	j.screenshot("history")

	// Restore version 1, after its confirmation.
	j.click(`a[href*="restore?key=deploys.md&version=1"]`)
	assert.Contains(t, j.heading(), "Restore a version")
	j.checkA11y("restore confirmation")
	j.screenshot("restore")
	content, _ := f.repoContent(t, f.alice, "acme/shop", "deploys.md")
	assert.Equal(t, noteV3, content, "the confirmation page alone changes nothing")
	j.click(`form.confirm button[type="submit"]`)
	assert.Contains(t, j.text(".notice"), "restored")
	content, _ = f.repoContent(t, f.alice, "acme/shop", "deploys.md")
	assert.Equal(t, noteV1, content)

	// Delete a memory, after its confirmation.
	j.at("/repos/acme/shop/memory?key=oncall.md")
	j.click(`a.danger`)
	assert.Contains(t, j.heading(), "Delete")
	j.checkA11y("delete confirmation")
	j.click(`form.confirm button[type="submit"]`)
	assert.Contains(t, j.text(".notice"), "deleted")
	_, ok := f.repoContent(t, f.alice, "acme/shop", "oncall.md")
	assert.False(t, ok)

	// A memory holding a script and a javascript: link shows as text.
	j.at("/repos/acme/shop/memory?key=hostile.md")
	pwned := eval[string](j, "pwned", `String(window.pwned)`)
	links := eval[[]string](j, "links", `Array.from(document.querySelectorAll("a[href]")).map(a => a.getAttribute("href"))`)
	assert.Equal(t, "undefined", pwned, "no script of the memory ran")
	for _, l := range links {
		assert.False(t, strings.HasPrefix(strings.ToLower(strings.TrimSpace(l)), "javascript:"), "link %q", l)
	}
	scripts := eval[int](j, "count scripts", `document.querySelectorAll("main script, main img, main [onerror]").length`)
	assert.Zero(t, scripts)
	j.run("open raw", chromedp.Click(chromedp.CSS(".raw summary")))
	assert.Contains(t, j.text(".raw pre"), "<script>window.pwned=1</script>")
	assert.Contains(t, j.text(".raw pre"), "javascript:window.pwned=2")

	// The activity of each token.
	j.at("/activity")
	j.click(`.whos a[href="/console/activity?who=bob"]`)
	assert.Contains(t, j.text("main"), "oncall.md")
	j.checkA11y("activity")
	j.screenshot("activity")

	// A form posted from another origin is refused, though the browser
	// is signed in.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/repos/acme/shop/delete"><input name="key" value="style.md"><input name="csrf" value="guessed"></form><script>document.forms[0].submit()</script>`, f.consoleBaseURL)
	}))
	defer evil.Close()
	j.run("cross-origin form", chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.CSS(".error")))
	assert.Contains(t, j.text(".error"), "another site")
	_, ok = f.repoContent(t, f.alice, "acme/shop", "style.md")
	assert.True(t, ok, "the cross-origin form deleted nothing")

	// The phone layout.
	j.run("phone", chromedp.EmulateViewport(390, 800, chromedp.EmulateScale(1)))
	j.at("/repos/acme/shop")
	overflow := eval[bool](j, "no sideways scroll", `document.documentElement.scrollWidth > window.innerWidth + 1`)
	assert.False(t, overflow, "the list fits a phone's width")
	j.checkA11y("memory list on a phone")
	j.screenshot("list-phone")
	j.run("laptop", chromedp.EmulateViewport(1024, 720))

	// Sign out: the console asks for a token again.
	j.click(`.signout button`)
	assert.Equal(t, "Sign in", j.heading())
	j.at("/repos/acme/shop")
	assert.Equal(t, "Sign in", j.heading())

	// Another organization's token sees only its own repos.
	j.signIn(f.gina)
	home = j.text("main")
	assert.Contains(t, home, "globex/web")
	assert.NotContains(t, home, "acme/shop")
	j.at("/repos/acme/api")
	assert.Contains(t, j.text(".error"), "no repo of that name")
	j.at("/repos/acme/shop/memory?key=deploys.md")
	assert.NotContains(t, j.text("main"), "make deploy")
}

// TestBrowserReview: under review an agent's two writes wait; a person
// approves one and rejects the other in the browser.
func TestBrowserReview(t *testing.T) {
	axe := axeSource(t)
	ctx := browser(t)
	f := newFixture(t)
	j := &journey{t: t, ctx: ctx, f: f, axe: axe, shot: os.Getenv("AGENTMEM_CONSOLE_SCREENSHOTS")}
	if j.shot != "" {
		require.NoError(t, os.MkdirAll(j.shot, 0o755))
	}

	// A person puts the repo under review from the home page.
	j.signIn(f.alice)
	j.run("choose review", chromedp.SetValue(chromedp.CSS(`select[aria-label="Review policy of acme/shop"]`), "review"))
	j.click(`button[aria-label="Set the policy of acme/shop"]`)
	assert.Contains(t, j.text(".notice"), "acme/shop is now review")

	f.propose(t, f.robot, "acme/shop", map[string]string{"build.md": "---\ntype: project\ndescription: How to build\n---\nBuild with `make all`.\n"})
	f.propose(t, f.robot, "acme/shop", map[string]string{"style.md": "---\ntype: feedback\ndescription: Code style\n---\nSpaces, not tabs.\n"})
	ps, err := f.h.Proposals(context.Background(), "acme", teamserver.ProposalFilter{Status: teamserver.ProposalPending})
	require.NoError(t, err)
	ids := map[string]string{}
	for _, p := range ps {
		ids[p.Key] = p.ID
	}
	require.Len(t, ids, 2)

	j.at("/")
	assert.Contains(t, j.text(`nav a[href="/console/review"]`), "Review")
	j.click(`nav a[href="/console/review"]`)
	assert.Equal(t, "Review", j.heading())
	page := j.text("main")
	assert.Contains(t, page, "2 changes wait")
	assert.Contains(t, page, "+Spaces, not tabs.")
	assert.Contains(t, page, "robot")
	assert.Contains(t, page, "sess-42")
	j.checkA11y("review")
	j.screenshot("review")
	j.run("phone", chromedp.EmulateViewport(390, 800, chromedp.EmulateScale(1)))
	j.at("/review")
	overflow := eval[bool](j, "no sideways scroll", `document.documentElement.scrollWidth > window.innerWidth + 1`)
	assert.False(t, overflow, "the review queue fits a phone's width")
	j.checkA11y("review on a phone")
	j.run("laptop", chromedp.EmulateViewport(1024, 720))

	// Approve build.md after its confirmation.
	j.click(`a[href="/console/review/approve?id=` + ids["build.md"] + `"]`)
	assert.Contains(t, j.heading(), "Approve the change to build.md")
	j.checkA11y("approve confirmation")
	_, ok := f.repoContent(t, f.bob, "acme/shop", "build.md")
	assert.False(t, ok, "the confirmation page alone writes nothing")
	j.click(`form.confirm button[type="submit"]`)
	assert.Contains(t, j.text(".notice"), "approved")

	// Reject style.md with a reason typed in its labelled field.
	j.run("write a reason", chromedp.SendKeys(chromedp.CSS("#reason-"+ids["style.md"]), "We use tabs."))
	j.click(`#h-` + ids["style.md"] + ` ~ .decide form.reject button[type="submit"]`)
	assert.Contains(t, j.text(".notice"), "rejected")
	assert.Contains(t, j.text("main"), "No change waits")

	// What clients are served: the approved change, never the rejected one.
	content, ok := f.repoContent(t, f.bob, "acme/shop", "build.md")
	assert.True(t, ok)
	assert.Contains(t, content, "make all")
	content, _ = f.repoContent(t, f.bob, "acme/shop", "style.md")
	assert.Contains(t, content, "Tabs, not spaces.")
	assert.NotContains(t, content, "Spaces, not tabs.")
	p, _, err := f.h.Proposal(context.Background(), "acme", ids["style.md"])
	require.NoError(t, err)
	assert.Equal(t, "We use tabs.", p.Reason)
}
