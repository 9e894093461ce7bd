package teamserver

import (
	"context"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// The server's routes are net/http patterns on one ServeMux, one per
// path; the methods a path takes are dispatched by a table, so that a
// method it does not take is answered 405 with an Allow header and the
// JSON error body of its protocol (the ServeMux's own 405 is plain text).
// Every route runs through the same chain (protect): panics, the status
// for the metrics and the log, the request size, the failed-authentication
// limit, the token, the rate limit and the store's deadline.

// protocol is what the chain needs to know of one protocol: how it words
// its refusals, how long a request may wait for the store, what it checks
// before and after the token, and how it names a request for the log.
type protocol struct {
	// log is the message of the request's log line.
	log string
	// realm is the WWW-Authenticate realm of a 401.
	realm string
	// stores: the Memory Stores API's error bodies ({"type": "error",
	// "error": {...}}) instead of the team protocol's.
	stores bool
	// timeout bounds the request's wait for the store.
	timeout func(h *Handler) time.Duration
	// before runs before the token is looked at (false: answered).
	before func(h *Handler, w http.ResponseWriter, r *http.Request) bool
	// admit runs once the token is known and within its rate (false:
	// answered).
	admit func(h *Handler, w http.ResponseWriter, r *http.Request, c *request) bool
	// label names the request for the metrics (default: the route).
	label func(r *http.Request, c *request) string
}

// request is what the chain and a route learn of one request: the route's
// name, the token's grant and what the route adds for the log.
type request struct {
	route string
	grant TokenGrant
	// tenant is the grant's organization, once the token is known.
	tenant string
	// repo is the team repo the request named (team protocol).
	repo string
	// prov is the request's provenance (Memory Stores API).
	prov teamwire.Provenance
}

// refuse answers an error in the protocol's body. code is the team
// protocol's error code; the Memory Stores API's bodies of these
// refusals carry none, as the hosted API's do.
func (p *protocol) refuse(w http.ResponseWriter, status int, typ, code, msg string) {
	if p.stores {
		writeStoresError(w, &APIError{Status: status, Type: typ, Message: msg})
		return
	}
	writeError(w, status, typ, code, msg)
}

func (p *protocol) unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+p.realm+`"`)
	msg := "a valid bearer token is required"
	if p.stores {
		msg = "a valid API key (x-api-key) or bearer token is required"
	}
	p.refuse(w, http.StatusUnauthorized, "authentication_error", teamwire.CodeUnauthorized, msg)
}

func (p *protocol) notFound(w http.ResponseWriter) {
	if p.stores {
		writeStoresError(w, notFound("route"))
		return
	}
	writeError(w, http.StatusNotFound, "not_found_error", "not_found", "no such endpoint")
}

func (p *protocol) notAllowed(w http.ResponseWriter, allow []string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	msg := "use " + strings.Join(allow, ", ")
	if p == teamProtocol {
		msg = "use " + strings.Join(allow, " or ")
	}
	p.refuse(w, http.StatusMethodNotAllowed, "invalid_request_error", teamwire.CodeMethodNotAllowed, msg)
}

func (p *protocol) internal(w http.ResponseWriter) {
	p.refuse(w, http.StatusInternalServerError, "api_error", "internal_error", "the server could not complete the request")
}

// The protocols the handler serves.
var (
	teamProtocol = &protocol{
		log: "team memory request", realm: "team memory",
		timeout: func(h *Handler) time.Duration { return h.cfg.StoreTimeout + teamwire.MaxLongPoll },
		label: func(r *http.Request, _ *request) string {
			return methodLabel(r.Method) + " " + viewLabel(r.URL.Query().Get("view"))
		},
	}
	reviewProtocol = &protocol{
		log: "review request", realm: "team memory",
		timeout: func(h *Handler) time.Duration { return h.cfg.StoreTimeout },
		admit: func(h *Handler, w http.ResponseWriter, _ *http.Request, _ *request) bool {
			if h.reviews() == nil {
				writeError(w, http.StatusNotFound, "not_found_error", "not_found", "this server's store keeps no review policies")
				return false
			}
			return true
		},
	}
	storesProtocol = &protocol{
		log: "memory stores request", realm: "memory stores", stores: true,
		timeout: func(h *Handler) time.Duration { return h.cfg.StoreTimeout },
		before: func(h *Handler, w http.ResponseWriter, _ *http.Request) bool {
			if h.stores == nil {
				writeStoresError(w, &APIError{Status: http.StatusNotFound, Type: "not_found_error", Message: "this server's store does not hold memory stores (use SQLite or PostgreSQL)"})
				return false
			}
			return true
		},
		admit: func(_ *Handler, w http.ResponseWriter, r *http.Request, c *request) bool {
			if len(c.grant.Stores) == 0 {
				writeStoresError(w, &APIError{Status: http.StatusForbidden, Type: "permission_error", Message: "this token may not use memory stores"})
				return false
			}
			prov, err := requestProvenance(r)
			if err != nil {
				writeStoresError(w, &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: teamwire.CodeInvalidProvenance,
					Message: strings.TrimPrefix(err.Error(), "wire: ") + "; nothing was written"})
				return false
			}
			c.prov = prov
			w.Header().Set(storewire.RequestIDHeader, newID("req_"))
			return true
		},
	}
)

// routeFunc answers one request that passed the chain.
type routeFunc func(w http.ResponseWriter, r *http.Request, c *request)

// op is one method of a path: the route's name and what answers it.
type op struct {
	name string
	run  routeFunc
}

// protect wraps a route in the chain. Without auth the route is answered
// before any token is looked at (the team protocol's 404 and 405).
func (h *Handler) protect(p *protocol, name string, auth bool, run routeFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		c := &request{route: name}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				h.log.Error("request panicked", "route", name, "panic", v)
				if sw.wrote {
					panic(http.ErrAbortHandler) // the status is sent: cut the reply
				}
				p.internal(sw)
			}
			label := c.route
			if p.label != nil {
				label = p.label(r, c)
			}
			elapsed := time.Since(start)
			h.metrics.Request(label, sw.status, elapsed)
			attrs := []any{"method", methodLabel(r.Method), "route", c.route, "tenant", c.tenant}
			if p == teamProtocol {
				attrs = []any{"method", methodLabel(r.Method), "repo", c.repo, "tenant", c.tenant, "view", viewLabel(r.URL.Query().Get("view"))}
			}
			h.log.Info(p.log, append(attrs, "status", sw.status, "duration_ms", elapsed.Milliseconds())...)
		}()
		if r.Body != nil {
			r.Body = http.MaxBytesReader(sw, r.Body, h.cfg.MaxBodyBytes)
		}
		if p.before != nil && !p.before(h, sw, r) {
			return
		}
		if auth {
			// A valid token is served even from an address that failed
			// too often (teammates share a NAT or the proxy in front);
			// a wrong one from there waits.
			grant, ok := h.authenticate(r)
			if !ok {
				if h.authRefused(sw, r, p.stores) {
					return
				}
				h.authFailed(r)
				p.unauthorized(sw)
				return
			}
			c.grant, c.tenant = grant, grant.Organization
			if wait, ok := h.limiter.allow(grant.TokenSHA256); !ok {
				sw.Header().Set(storewire.RetryAfterHeader, strconv.Itoa(int(wait.Seconds())+1))
				p.refuse(sw, http.StatusTooManyRequests, "rate_limit_error", teamwire.CodeRateLimited, "too many requests for this token; retry after the given seconds")
				return
			}
			if p.admit != nil && !p.admit(h, sw, r, c) {
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), p.timeout(h))
		defer cancel()
		if p.stores && auth {
			h.idempotent(sw, r.WithContext(ctx), c, func(w http.ResponseWriter, r *http.Request) { run(w, r, c) })
			return
		}
		run(sw, r.WithContext(ctx), c)
	})
}

// handle registers a path's methods on mux: each method runs its op
// through the chain; any other method is answered 405 (after the token,
// when auth), as is HEAD on a path without it.
func (h *Handler) handle(mux *http.ServeMux, p *protocol, pattern string, auth bool, ops map[string]op, notAllowed string) {
	allow := make([]string, 0, len(ops))
	byMethod := map[string]http.Handler{}
	for m, o := range ops {
		allow = append(allow, m)
		byMethod[m] = h.protect(p, o.name, auth, o.run)
	}
	slices.SortFunc(allow, func(a, b string) int { return methodOrder(a) - methodOrder(b) })
	refuse := h.protect(p, notAllowed, auth, func(w http.ResponseWriter, _ *http.Request, _ *request) { p.notAllowed(w, allow) })
	mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if next, ok := byMethod[r.Method]; ok {
			next.ServeHTTP(w, r)
			return
		}
		refuse.ServeHTTP(w, r)
	}))
}

// methodOrder orders the methods of an Allow header.
func methodOrder(m string) int {
	return slices.Index([]string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete}, m)
}

// routes builds the handler's ServeMux.
func (h *Handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc(ReadyPath, h.ready)

	// The team repo protocol: one path, GET and PUT; anything else is
	// answered before the token.
	none := h.protect(teamProtocol, "", false, func(w http.ResponseWriter, _ *http.Request, _ *request) { teamProtocol.notFound(w) })
	mux.Handle("/", none)
	mux.Handle(strings.TrimSuffix(storewire.CodeStorePrefix, "/"), none)
	serve := h.protect(teamProtocol, "", true, h.serveTeam)
	refuse := h.protect(teamProtocol, "", false, func(w http.ResponseWriter, _ *http.Request, _ *request) {
		teamProtocol.notAllowed(w, []string{http.MethodGet, http.MethodPut})
	})
	mux.Handle(h.cfg.Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodPut {
			serve.ServeHTTP(w, r)
			return
		}
		refuse.ServeHTTP(w, r)
	}))

	h.reviewRoutes(mux)
	h.storesRoutes(mux)
	return mux
}

// ready answers the readiness probe: the store answers a ping, and no
// write met a full disk or a read-only database in the last faultRetry.
func (h *Handler) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := h.team.Ping(ctx); err != nil {
		h.log.Warn("team memory store not ready", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "store unavailable"})
		return
	}
	if f := h.fault.Load(); f != nil && h.cfg.Now().Sub(f.at) < faultRetry {
		w.Header().Set("Retry-After", strconv.Itoa(int(faultRetry.Seconds())))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "writes failing", "cause": f.message})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// reviewRoutes registers the review endpoint (teamwire.ReviewPath).
func (h *Handler) reviewRoutes(mux *http.ServeMux) {
	base := teamwire.ReviewPath
	call := func(fn func(c *reviewCall)) routeFunc {
		return func(w http.ResponseWriter, r *http.Request, c *request) {
			fn(&reviewCall{h: h, w: w, r: r, grant: c.grant})
		}
	}
	none := h.protect(reviewProtocol, "review", true, func(w http.ResponseWriter, _ *http.Request, _ *request) { reviewProtocol.notFound(w) })
	mux.Handle(base, none)
	mux.Handle(base+"/", none)
	h.handle(mux, reviewProtocol, base+"/policy", true, map[string]op{
		http.MethodGet: {"review.policy", call((*reviewCall).getPolicy)},
		http.MethodPut: {"review.policy", call((*reviewCall).setPolicy)},
	}, "review.policy")
	h.handle(mux, reviewProtocol, base+"/proposals", true, map[string]op{
		http.MethodGet: {"review.list", call((*reviewCall).list)},
	}, "review.list")
	h.handle(mux, reviewProtocol, base+"/proposals/{id}", true, map[string]op{
		http.MethodGet: {"review.show", call(func(c *reviewCall) { c.show(c.r.PathValue("id")) })},
	}, "review.show")
	h.handle(mux, reviewProtocol, base+"/proposals/{id}/approve", true, map[string]op{
		http.MethodPost: {"review.approve", call(func(c *reviewCall) { c.decide(c.r.PathValue("id"), true) })},
	}, "review.approve")
	h.handle(mux, reviewProtocol, base+"/proposals/{id}/reject", true, map[string]op{
		http.MethodPost: {"review.reject", call(func(c *reviewCall) { c.decide(c.r.PathValue("id"), false) })},
	}, "review.reject")
}

// storesRoutes registers the Memory Stores API: the public routes under
// storewire.StoresPath and Claude Code's under storewire.CodeStorePrefix.
func (h *Handler) storesRoutes(mux *http.ServeMux) {
	base := storewire.StoresPath
	// top calls a route on no store; inStore one below a store, once the
	// store is resolved and the token may use it.
	top := func(fn func(c *storesCall)) routeFunc {
		return func(w http.ResponseWriter, r *http.Request, c *request) { fn(h.storesCall(w, r, c)) }
	}
	inStore := func(fn func(c *storesCall, storeID string)) routeFunc {
		return func(w http.ResponseWriter, r *http.Request, c *request) {
			sc := h.storesCall(w, r, c)
			if id, ok := sc.resolveStore(); ok {
				fn(sc, id)
			}
		}
	}
	memoryID := func(fn func(c *storesCall, storeID, id string)) func(c *storesCall, storeID string) {
		return func(c *storesCall, storeID string) { fn(c, storeID, c.r.PathValue("memory_id")) }
	}
	versionID := func(fn func(c *storesCall, storeID, id string)) func(c *storesCall, storeID string) {
		return func(c *storesCall, storeID string) { fn(c, storeID, c.r.PathValue("version_id")) }
	}
	noRoute := func(c *storesCall) { c.fail(notFound("route")) }
	mux.Handle(base+"/", h.protect(storesProtocol, "stores", true, top(noRoute)))
	mux.Handle(base+"/{store_id}/", h.protect(storesProtocol, "stores", true, inStore(func(c *storesCall, _ string) { noRoute(c) })))
	h.handle(mux, storesProtocol, base, true, map[string]op{
		http.MethodPost: {"stores.create", top((*storesCall).createStore)},
		http.MethodGet:  {"stores.list", top((*storesCall).listStores)},
	}, "stores")
	h.handle(mux, storesProtocol, base+"/{store_id}", true, map[string]op{
		http.MethodGet:    {"stores.get", inStore((*storesCall).getStore)},
		http.MethodPost:   {"stores.update", inStore((*storesCall).updateStore)},
		http.MethodDelete: {"stores.delete", inStore((*storesCall).deleteStore)},
	}, "stores")
	h.handle(mux, storesProtocol, base+"/{store_id}/archive", true, map[string]op{
		http.MethodPost: {"stores.archive", inStore((*storesCall).archiveStore)},
	}, "stores")
	memories := func(mux *http.ServeMux, pattern string) {
		h.handle(mux, storesProtocol, pattern+"/memories", true, map[string]op{
			http.MethodPost: {"memories.create", inStore((*storesCall).createMemory)},
			http.MethodGet:  {"memories.list", inStore((*storesCall).listMemories)},
		}, "stores")
		h.handle(mux, storesProtocol, pattern+"/memories/export", true, map[string]op{
			http.MethodGet: {"memories.export", inStore((*storesCall).export)},
		}, "stores")
		h.handle(mux, storesProtocol, pattern+"/memories/{memory_id}", true, map[string]op{
			http.MethodGet:    {"memories.get", inStore(memoryID((*storesCall).getMemory))},
			http.MethodPost:   {"memories.update", inStore(memoryID((*storesCall).updateMemory))},
			http.MethodDelete: {"memories.delete", inStore(memoryID((*storesCall).deleteMemory))},
		}, "stores")
	}
	memories(mux, base+"/{store_id}")
	h.handle(mux, storesProtocol, base+"/{store_id}/memory_versions", true, map[string]op{
		http.MethodGet: {"versions.list", inStore((*storesCall).listVersions)},
	}, "stores")
	h.handle(mux, storesProtocol, base+"/{store_id}/memory_versions/{version_id}", true, map[string]op{
		http.MethodGet: {"versions.get", inStore(versionID((*storesCall).getVersion))},
	}, "stores")
	h.handle(mux, storesProtocol, base+"/{store_id}/memory_versions/{version_id}/redact", true, map[string]op{
		http.MethodPost: {"versions.redact", inStore(versionID((*storesCall).redactVersion))},
	}, "stores")

	// Claude Code names a store by its path, its ID or its name, which
	// may hold a "/": codeRoutes finds the store's part before
	// "/memories" and serves the rest from its own mux.
	code := http.NewServeMux()
	memories(code, "/{store_id}")
	code.Handle("/", h.protect(storesProtocol, "stores", true, top(noRoute)))
	code.Handle("/{store_id}/memories/", h.protect(storesProtocol, "stores", true, inStore(func(c *storesCall, _ string) { noRoute(c) })))
	mux.Handle(storewire.CodeStorePrefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(storewire.CodeStorePrefix, "/"))
		ref, tail, found := strings.Cut(strings.TrimPrefix(rest, "/"), "/memories")
		r2 := r.Clone(r.Context())
		r2.URL.RawPath = ""
		if !found || ref == "" || (tail != "" && !strings.HasPrefix(tail, "/")) {
			r2.URL.Path = "/"
		} else {
			// The store's reference is one segment of the inner mux,
			// whatever it holds; the route puts it back.
			r2.URL.Path = "/" + codeRef + "/memories" + tail
		}
		r2 = r2.WithContext(context.WithValue(r2.Context(), codeStoreKey{}, ref))
		code.ServeHTTP(w, r2)
	}))
}

// codeRef stands for the store's reference in the path of Claude Code's
// route as its inner mux sees it; codeStoreKey carries the reference.
const codeRef = "store"

type codeStoreKey struct{}

// storesCall starts a Memory Stores call.
func (h *Handler) storesCall(w http.ResponseWriter, r *http.Request, c *request) *storesCall {
	ms := h.stores
	ref, code := r.Context().Value(codeStoreKey{}).(string)
	return &storesCall{h: h, ms: ms, w: w, r: r, grant: c.grant, tenant: c.tenant, prov: c.prov, code: code, codeRef: ref}
}

// resolveStore finds the store a call names (false: answered). An ID no
// store can hold (a NUL, a control character, invalid UTF-8) is refused
// alike on every store, before any is asked; a store the token may not
// use is answered as one that does not exist, so nothing leaks.
func (c *storesCall) resolveStore() (string, bool) {
	ref := c.r.PathValue("store_id")
	if c.code {
		ref = c.codeRef
	}
	for _, v := range []string{c.r.URL.Path, ref, c.r.PathValue("memory_id"), c.r.PathValue("version_id")} {
		if synctext.CheckName(v) != nil {
			c.fail(&APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "a store or memory ID in the URL is not valid UTF-8 or holds a control character"})
			return "", false
		}
	}
	if c.code {
		st, err := c.ms.FindMemStore(c.r.Context(), c.tenant, ref)
		if err != nil {
			c.fail(err)
			return "", false
		}
		ref = st.ID
	}
	if !c.mayUse(ref) {
		c.fail(notFound("memory store"))
		return "", false
	}
	return ref, true
}

// tidyPath is the path the routes match: a trailing "/" of a Memory
// Stores or review path is dropped (clients add one); a path that is
// not clean otherwise ("//", "." or ".." segments) is kept as it is, and
// answered 404 by its protocol rather than redirected.
func tidyPath(p string) (string, bool) {
	if !strings.HasPrefix(p, storewire.StoresPath) && !strings.HasPrefix(p, storewire.CodeStorePrefix) && !strings.HasPrefix(p, teamwire.ReviewPath) {
		return p, true
	}
	if len(p) > 1 && strings.HasSuffix(p, "/") && !strings.HasSuffix(p, "//") {
		p = p[:len(p)-1]
	}
	return p, path.Clean(p) == p
}
