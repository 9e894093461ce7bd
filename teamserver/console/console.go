package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
)

// DefaultPrefix is where the console is served unless Options.Prefix
// says otherwise.
const DefaultPrefix = "/console"

// DefaultSessionTTL is how long a sign-in lasts unless
// Options.SessionTTL says otherwise.
const DefaultSessionTTL = 8 * time.Hour

// Options configures the console. The zero value means the documented
// defaults.
type Options struct {
	// Prefix is the path the console is served under (default
	// DefaultPrefix); no trailing slash.
	Prefix string
	// SessionTTL is how long a sign-in lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// MaxSessions bounds the sessions held at once (default 10,000); past
	// it the oldest is dropped.
	MaxSessions int
	// PageSize is the memories shown per page (default 50).
	PageSize int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives sign-ins, sign-outs and refused requests, never a
	// token, a cookie or memory content (nil discards).
	Logger *slog.Logger
}

// Console serves the web console over a sync handler. It is safe for
// concurrent use.
type Console struct {
	h        *teamserver.Handler
	opts     Options
	log      *slog.Logger
	tmpl     *template.Template
	mux      *http.ServeMux
	sessions *sessions
	cop      *http.CrossOriginProtection
	render   *renderer
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

//go:embed static/favicon.svg
var favicon []byte

// New returns the console over h, the handler that serves the protocols:
// the console reads and writes through it, with the signed-in token, so
// every rule of the server (grants, screens, limits, history) applies to
// what a person does in a browser as to what a client does.
func New(h *teamserver.Handler, opts Options) (*Console, error) {
	if h == nil {
		return nil, errors.New("console: New needs the server's Handler")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	opts.Prefix = strings.TrimRight(opts.Prefix, "/")
	if !strings.HasPrefix(opts.Prefix, "/") {
		return nil, errors.New("console: Options.Prefix must start with /")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 10_000
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Console{h: h, opts: opts, log: opts.Logger, sessions: newSessions(opts.MaxSessions), render: newRenderer()}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	tmpl, err := template.New("").Funcs(c.funcs()).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	c.tmpl = tmpl
	if _, err := assets(); err != nil {
		return nil, err
	}
	c.cop = http.NewCrossOriginProtection()
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.log.Warn("console: a cross-origin form was refused", "path", r.URL.Path)
		c.fail(w, r, nil, http.StatusForbidden, "This form was sent from another site, so it was refused. Open the console and send it from there.")
	}))
	c.routes()
	return c, nil
}

// Prefix is the path the console is served under.
func (c *Console) Prefix() string { return c.opts.Prefix }

// ServeHTTP implements http.Handler for every path under the prefix.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if strings.HasPrefix(r.URL.Path, c.opts.Prefix+"/static/") {
		hd.Set("Cache-Control", "public, max-age=3600")
		c.serveStatic(w, r)
		return
	}
	hd.Set("Cache-Control", "no-store")
	c.cop.Handler(c.mux).ServeHTTP(w, r)
}

// maySignIn reports whether a token may sign in to the console. It is
// the one place this is decided: only a person's token (grant kind
// "person") may; an agent's token, or a grant without a kind, is
// refused, since the console approves, rejects and sets review
// policies, which only people do.
func maySignIn(g teamserver.TokenGrant) bool {
	return g.Organization != "" && g.IsPerson()
}

const (
	sessionCookie = "agentmem_console"
	// preCookie carries the CSRF token of the sign-in form, before there
	// is a session to hold one.
	preCookie = "agentmem_console_pre"
)

// session is one sign-in. The token stays on the server, in memory only:
// the console acts with it through the handler.
type session struct {
	id      string
	token   string
	grant   teamserver.TokenGrant
	csrf    string
	expires time.Time
}

type sessions struct {
	mu  sync.Mutex
	max int
	m   map[string]*session
}

func newSessions(max int) *sessions { return &sessions{max: max, m: map[string]*session{}} }

func (s *sessions) add(se *session, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, o := range s.m {
		if !now.Before(o.expires) {
			delete(s.m, id)
		}
	}
	for len(s.m) >= s.max {
		var oldest *session
		for _, o := range s.m {
			if oldest == nil || o.expires.Before(oldest.expires) {
				oldest = o
			}
		}
		delete(s.m, oldest.id)
	}
	s.m[se.id] = se
}

func (s *sessions) get(id string, now time.Time) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.m[id]
	if !ok {
		return nil, false
	}
	if !now.Before(se.expires) {
		delete(s.m, id)
		return nil, false
	}
	return se, true
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// randomID returns 32 random bytes, URL-safe base64.
func randomID() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: c.opts.Prefix + "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
}

// overTLS reports whether the browser reached the console over TLS: the
// connection itself, or a reverse proxy in front that says so. Trusting
// the header can only add the Secure flag, never remove it.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// current returns the request's session, if it has a live one.
func (c *Console) current(r *http.Request) (*session, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil, false
	}
	return c.sessions.get(ck.Value, c.opts.Now())
}

// csrfOK reports whether a form carries the expected CSRF token.
func csrfOK(r *http.Request, want string) bool {
	got := r.PostFormValue("csrf")
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// authed wraps a page that needs a session: without one it sends the
// browser to the sign-in page; a POST must carry the session's CSRF token.
func (c *Console) authed(fn func(w http.ResponseWriter, r *http.Request, s *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.current(r)
		if !ok {
			if r.Method != http.MethodGet {
				c.fail(w, r, nil, http.StatusUnauthorized, "Your session has ended. Sign in again, then repeat what you were doing.")
				return
			}
			http.Redirect(w, r, c.opts.Prefix+"/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if !csrfOK(r, s.csrf) {
				c.log.Warn("console: a form without its CSRF token was refused", "path", r.URL.Path)
				c.fail(w, r, s, http.StatusForbidden, "This form has expired or was not sent from the console. Reload the page and try again.")
				return
			}
		}
		fn(w, r, s)
	}
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.current(r); ok {
		http.Redirect(w, r, c.opts.Prefix+"/", http.StatusSeeOther)
		return
	}
	pre := randomID()
	c.setCookie(w, r, preCookie, pre, 3600)
	c.page(w, r, nil, http.StatusOK, "signin", map[string]any{"Pre": pre, "Next": safeNext(c.opts.Prefix, r.URL.Query().Get("next"))})
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	pre, err := r.Cookie(preCookie)
	if err != nil || !csrfOK(r, pre.Value) {
		c.fail(w, r, nil, http.StatusForbidden, "The sign-in form has expired or was not sent from the console. Open the sign-in page again.")
		return
	}
	next := safeNext(c.opts.Prefix, r.PostFormValue("next"))
	g, err := c.h.Authenticate(r, r.PostFormValue("token"))
	var limited *teamserver.AuthRateLimitedError
	switch {
	case errors.As(err, &limited):
		w.Header().Set("Retry-After", strconv.Itoa(int(limited.RetryAfter.Seconds())+1))
		c.signinError(w, r, http.StatusTooManyRequests, "Too many failed sign-ins from this address. Wait a minute, then try again.", next)
		return
	case err != nil:
		c.log.Info("console: sign-in refused", "reason", "unknown token")
		c.signinError(w, r, http.StatusUnauthorized, "This token is not known to the server. Paste the whole token (it starts with amt_).", next)
		return
	case !maySignIn(g):
		c.log.Info("console: sign-in refused", "reason", "not a person's token", "tenant", g.Organization, "who", g.Author())
		c.signinError(w, r, http.StatusForbidden, "This is an agent's token: only a person's token signs in to the console. Sign in with your own token (one issued with agentmem team token --kind person).", next)
		return
	}
	se := &session{id: randomID(), token: strings.TrimSpace(r.PostFormValue("token")), grant: g, csrf: randomID(), expires: c.opts.Now().Add(c.opts.SessionTTL)}
	c.sessions.add(se, c.opts.Now())
	c.setCookie(w, r, sessionCookie, se.id, int(c.opts.SessionTTL.Seconds()))
	c.setCookie(w, r, preCookie, "", -1)
	c.log.Info("console: signed in", "tenant", g.Organization, "who", g.Author())
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signinError(w http.ResponseWriter, r *http.Request, status int, msg, next string) {
	pre := randomID()
	c.setCookie(w, r, preCookie, pre, 3600)
	c.page(w, r, nil, status, "signin", map[string]any{"Pre": pre, "Next": next, "Error": msg})
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.drop(s.id)
	c.setCookie(w, r, sessionCookie, "", -1)
	c.log.Info("console: signed out", "tenant", s.grant.Organization, "who", s.grant.Author())
	http.Redirect(w, r, c.opts.Prefix+"/signin", http.StatusSeeOther)
}

// safeNext keeps a post-sign-in destination inside the console.
func safeNext(prefix, next string) string {
	if strings.HasPrefix(next, prefix+"/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return prefix + "/"
}

// fail shows an error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	c.page(w, r, s, status, "error", map[string]any{"Message": msg, "Status": status})
}

// page renders a template inside the layout.
func (c *Console) page(w http.ResponseWriter, r *http.Request, s *session, status int, name string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Prefix"] = c.opts.Prefix
	data["Page"] = name
	if s != nil {
		data["Me"] = s.grant.Author()
		data["Org"] = s.grant.Organization
		data["CSRF"] = s.csrf
		if _, ok := data["Waiting"]; !ok {
			// The navigation counts what waits for review; a page
			// renders without the count rather than fail for it.
			ctx, cancel := reqCtx(r)
			if ps, err := c.pending(ctx, s); err == nil {
				data["Waiting"] = len(ps)
			}
			cancel()
		}
	}
	var b strings.Builder
	if err := c.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		c.log.Error("console: a page could not be rendered", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// ctx bounds what one page asks of the server.
func reqCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}

// Wrap returns a handler that serves the console under its prefix (and
// its icon at /favicon.ico) and passes every other request to next (the
// server's handler) untouched.
func (c *Console) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == c.opts.Prefix || strings.HasPrefix(r.URL.Path, c.opts.Prefix+"/") {
			c.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/favicon.ico" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			// What a browser asks the host for, whatever the page says.
			w.Header().Set("Content-Type", "image/svg+xml")
			w.Header().Set("Cache-Control", "public, max-age=86400")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(favicon)
			return
		}
		next.ServeHTTP(w, r)
	})
}
