package teamserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/screen"
	"golang.org/x/text/unicode/norm"
)

// Options configures the sync handler.
type Options struct {
	Tokens []TokenGrant
	// Metrics receives request and store measurements (nil: none).
	Metrics Metrics
	// Path is the endpoint (default teamwire.DefaultSyncPath).
	Path string
	// MaxEntries bounds the entries of one repo (default 2,000; negative
	// means no limit).
	MaxEntries int
	// MaxEntryBytes bounds one entry (default teamwire.MaxEntryBytes).
	MaxEntryBytes int
	// MaxBodyBytes bounds a PUT body, enforced while reading (default 1 MiB).
	MaxBodyBytes int64
	// Logger receives one record per request: method, repo, tenant,
	// status, duration; never contents or tokens. nil discards.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxWaiters bounds the long-polls waiting at once (default 1,000);
	// past it a long-poll is answered at once.
	MaxWaiters int
	// PollEvery is how often a waiting long-poll re-reads the store, so
	// writes through another server on the same database are seen
	// (default 1 s); writes through this server wake it at once.
	PollEvery time.Duration
	// MaxRepos bounds the repos one organization may create (default
	// DefaultMaxRepos; negative: no limit).
	MaxRepos int
	// Retention bounds tombstones and history (defaults: tombstones for
	// 30 days and at most MaxEntries per repo; 20 revisions per key,
	// none older than 90 days but the newest).
	Retention Retention
	// RatePerToken and RateBurst bound each token's requests per second
	// (default 100 and 500); past them the answer is 429 with
	// Retry-After. RatePerToken < 0 turns the limit off.
	RatePerToken float64
	RateBurst    int
	// AuthFailRate and AuthFailBurst bound the failed authentications
	// of one client address (the connection's IP) per second (default
	// 0.5 and 20): past them every request from that address is answered
	// 429 with Retry-After, before its token is looked at, until the
	// budget refills. Behind a reverse proxy every client shares the
	// proxy's address. AuthFailRate < 0 turns the limit off.
	AuthFailRate  float64
	AuthFailBurst int
	// StoreTimeout bounds how long a request waits for the store (a free
	// connection, the writer); past it the answer is 503 with
	// Retry-After (default 10 s).
	StoreTimeout time.Duration
	// Judge, when set, reads every write proposed for review and may flag
	// it for the reviewer (ModelJudge asks a model); JudgeTimeout bounds
	// one call (default DefaultJudgeTimeout).
	Judge        Judge
	JudgeTimeout time.Duration
	// StoreLimits bound the Memory Stores API: stores per organization,
	// memories and bytes per store (defaults DefaultMaxStores,
	// DefaultMaxStoreMemories, DefaultMaxStoreBytes).
	StoreLimits StoreLimits
}

// Defaults of the handler's bounds.
const (
	DefaultMaxRepos     = 100
	DefaultRatePerToken = 100
	DefaultRateBurst    = 500
	// defaultAuthFailRate and defaultAuthFailBurst bound failed
	// authentications per client address.
	defaultAuthFailRate  = 0.5
	defaultAuthFailBurst = 20
)

// Operational endpoints, beside the sync path.
const (
	HealthPath = "/healthz"
	ReadyPath  = "/readyz"
)

// DefaultMaxEntries is the default entry limit of one repo.
const DefaultMaxEntries = 2000

// Handler serves the team memory sync protocol.
type Handler struct {
	cfg     Options
	grants  atomic.Pointer[map[string]TokenGrant] // by token hash; SetTokens swaps it
	log     *slog.Logger
	changes *changeFeed
	hashes  *hashCache
	indexes *storeIndexCache
	limiter *rateLimiter
	// verdicts are the review judge's flags of the changes it read.
	verdicts verdicts
	// authFails limits failed authentications per client address.
	authFails *rateLimiter
	metrics   Metrics
	// mux routes the requests (routes.go); unclean answers a path that
	// is not clean: 404 of the Memory Stores API, of the review endpoint.
	mux     *http.ServeMux
	unclean [2]http.Handler
	// team serves the team repo protocol; stores the Memory Stores
	// protocol (nil: the store holds none). Each protocol's routes use
	// only their own.
	team   TeamStore
	stores MemoryStores
	// draining is closed by Drain: long-polls answer at once.
	draining  chan struct{}
	drainOnce sync.Once
	// redactedTenants are the organizations RedactStoredCredentials has
	// gone through.
	redactedTenants sync.Map
	// fault is the last storage fault a write met (storageFault), which
	// /readyz reports for faultRetry after it.
	fault atomic.Pointer[storeFault]
}

// Drain answers every waiting long-poll at once (304, as if its wait had
// ended) and makes every later one answer without waiting, so that
// http.Server.Shutdown, which waits for running requests, finishes at
// once even with watchers connected. Register it with
// srv.RegisterOnShutdown(h.Drain). Other requests are served as before.
// Safe to call more than once, and concurrently.
func (h *Handler) Drain() {
	h.drainOnce.Do(func() { close(h.draining) })
}

// NewHandler returns the handler of every protocol store has: the team
// repo protocol always, the Memory Stores API and review when store is
// also MemoryStores and Reviews (as NewMemoryStore's and NewSQLStore's
// are); the routes of a protocol it lacks answer 404.
func NewHandler(store TeamStore, cfg Options) (*Handler, error) {
	if store == nil {
		return nil, errors.New("server: NewHandler needs a store (NewMemoryStore, NewSQLStore, or a TeamStore of your own)")
	}
	if cfg.Path == "" {
		cfg.Path = teamwire.DefaultSyncPath
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxEntries < 0 {
		cfg.MaxEntries = 0
	}
	cfg.MaxEntryBytes = positiveOr(cfg.MaxEntryBytes, teamwire.MaxEntryBytes)
	cfg.MaxBodyBytes = positiveOr(cfg.MaxBodyBytes, 1<<20)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.MaxWaiters = positiveOr(cfg.MaxWaiters, 1000)
	cfg.PollEvery = positiveOr(cfg.PollEvery, time.Second)
	if cfg.MaxRepos == 0 {
		cfg.MaxRepos = DefaultMaxRepos
	}
	if cfg.MaxRepos < 0 {
		cfg.MaxRepos = 0
	}
	r := &cfg.Retention
	if r.TombstoneAge == 0 {
		r.TombstoneAge = 30 * 24 * time.Hour
	}
	if r.MaxTombstones == 0 {
		r.MaxTombstones = max(cfg.MaxEntries, DefaultMaxEntries)
	}
	if r.HistoryKeep == 0 {
		r.HistoryKeep = 20
	}
	if r.HistoryAge == 0 {
		r.HistoryAge = 90 * 24 * time.Hour
	}
	if cfg.RatePerToken == 0 {
		cfg.RatePerToken = DefaultRatePerToken
	}
	cfg.RateBurst = positiveOr(cfg.RateBurst, DefaultRateBurst)
	cfg.StoreTimeout = positiveOr(cfg.StoreTimeout, 10*time.Second)
	cfg.JudgeTimeout = positiveOr(cfg.JudgeTimeout, DefaultJudgeTimeout)
	if cfg.AuthFailRate == 0 {
		cfg.AuthFailRate = defaultAuthFailRate
	}
	cfg.AuthFailBurst = positiveOr(cfg.AuthFailBurst, defaultAuthFailBurst)
	h := &Handler{cfg: cfg, log: cfg.Logger, changes: newChangeFeed(), hashes: newHashCache(1024), indexes: newStoreIndexCache(200_000), draining: make(chan struct{})}
	if cfg.RatePerToken > 0 {
		h.limiter = newRateLimiter(cfg.RatePerToken, cfg.RateBurst, cfg.Now)
	}
	if cfg.AuthFailRate > 0 {
		h.authFails = newRateLimiter(cfg.AuthFailRate, cfg.AuthFailBurst, cfg.Now)
	}
	h.metrics = cfg.Metrics
	if h.metrics == nil {
		h.metrics = noMetrics{}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.team = store
	h.stores, _ = store.(MemoryStores)
	h.mux = h.routes()
	h.unclean = [2]http.Handler{
		h.protect(storesProtocol, "stores", true, func(w http.ResponseWriter, _ *http.Request, _ *request) { storesProtocol.notFound(w) }),
		h.protect(reviewProtocol, "review", true, func(w http.ResponseWriter, _ *http.Request, _ *request) { reviewProtocol.notFound(w) }),
	}
	if err := h.SetTokens(cfg.Tokens); err != nil {
		return nil, err
	}
	return h, nil
}

// positiveOr is v when it is positive, else def (an option left unset).
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// SetTokens replaces the grants the handler accepts (Options.Tokens) at
// once, for every request that starts after it: a token file read again
// (agentmem team serve does when the file changes) takes effect without
// a restart. Invalid grants are refused whole and the old ones stay.
func (h *Handler) SetTokens(grants []TokenGrant) error {
	m := make(map[string]TokenGrant, len(grants))
	for i, g := range grants {
		if err := g.validate(); err != nil {
			return fmt.Errorf("server: token %d: %w", i+1, err)
		}
		m[g.TokenSHA256] = g
	}
	h.grants.Store(&m)
	return nil
}

// grantOf returns the grant of a token hash.
func (h *Handler) grantOf(hash string) (TokenGrant, bool) {
	g, ok := (*h.grants.Load())[hash]
	return g, ok
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool // the status is sent
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// ServeHTTP implements http.Handler: the routes of routes.go, on a path
// tidied by tidyPath.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	p, clean := tidyPath(r.URL.Path)
	if !clean {
		if strings.HasPrefix(p, teamwire.ReviewPath) {
			h.unclean[1].ServeHTTP(w, r)
		} else {
			h.unclean[0].ServeHTTP(w, r)
		}
		return
	}
	if p != r.URL.Path {
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = p, ""
	}
	h.mux.ServeHTTP(w, r)
}

// methodLabel is the method as the metrics and the log name it: one of
// a fixed set, whatever the client sent.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodOptions, http.MethodPatch:
		return m
	}
	return "other"
}

// viewLabel is the view parameter as the metrics and the log name it:
// one of the views the protocol knows, or "other".
func viewLabel(v string) string {
	switch v {
	case "", "hashes", "limits", "history", "log":
		return v
	}
	return "other"
}

// clientAddr is the address failed authentications are counted by: the
// connection's IP.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// authRefused answers a request with a token that is not valid from an
// address that has failed authentication too often (429, true).
func (h *Handler) authRefused(w http.ResponseWriter, r *http.Request, stores bool) bool {
	wait, blocked := h.authFails.exhausted(clientAddr(r))
	if !blocked {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	const msg = "too many failed authentications from this address; retry after the given seconds"
	if stores {
		writeStoresError(w, &APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: msg, Code: teamwire.CodeAuthRateLimited})
	} else {
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", teamwire.CodeAuthRateLimited, msg)
	}
	return true
}

// authFailed counts a failed authentication against the request's
// address.
func (h *Handler) authFailed(r *http.Request) { h.authFails.allow(clientAddr(r)) }

// Flush lets a streamed reply reach the client as it is written.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// serveTeam answers a GET or PUT of the team repo protocol, once the
// chain has checked the token.
func (h *Handler) serveTeam(w http.ResponseWriter, r *http.Request, c *request) {
	repoName := r.URL.Query().Get("repo")
	if !ValidRepoSlug(repoName) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidRepo, "repo must be owner/name")
		return
	}
	c.repo = repoName
	// Decided before the store is touched: a 403 says nothing about
	// whether the repo has data.
	if !c.grant.allows(repoName) {
		writeError(w, http.StatusForbidden, "permission_error", teamwire.CodeForbidden, "this token may not use that repo")
		return
	}
	repo := Repo{Tenant: c.grant.Organization, Name: repoName}
	w.Header().Set(teamwire.StoreIDHeader, h.team.ID())
	if r.Method == http.MethodGet {
		h.get(w, r, repo)
	} else {
		h.put(w, r, repo, c.grant)
	}
}

// authenticate finds the grant of the request's token: a bearer token
// (Authorization: Bearer), or an API key (x-api-key) as Anthropic's SDKs
// send it. Both are the same tokens of the token file.
func (h *Handler) authenticate(r *http.Request) (TokenGrant, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		token = r.Header.Get("X-Api-Key")
	}
	if strings.TrimSpace(token) == "" {
		return TokenGrant{}, false
	}
	g, ok := h.grantOf(HashToken(strings.TrimSpace(token)))
	return g, ok
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, repo Repo) {
	view := r.URL.Query().Get("view")
	switch view {
	case "", "hashes", "history", "log":
	case "limits":
		writeJSON(w, http.StatusOK, teamwire.LimitsView{MaxEntries: h.cfg.MaxEntries, MaxEntryBytes: h.cfg.MaxEntryBytes,
			MaxBodyBytes: h.cfg.MaxBodyBytes, MaxRepoBytes: h.maxRepoBytes()})
		return
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidView, "unknown view (want hashes, limits, history or log)")
		return
	}
	switch view {
	case "hashes":
		if r.URL.Query().Has("wait") && !h.waitForChange(w, r, repo) {
			return
		}
		h.getHashes(w, r, repo)
	case "history":
		h.getHistory(w, r, repo)
	case "log":
		h.getLog(w, r, repo)
	default:
		h.getFull(w, r, repo)
	}
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request, repo Repo, grant TokenGrant) {
	prov, err := requestProvenance(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidProvenance, strings.TrimPrefix(err.Error(), "wire: ")+"; nothing was written")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", teamwire.CodeBodyTooLarge,
			"the request body is over "+strconv.FormatInt(h.cfg.MaxBodyBytes, 10)+" bytes; send fewer entries per request")
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeMalformedJSON, "the request body could not be read")
		return
	}
	// Checked on the raw bytes: decoding would turn what JSON cannot
	// carry into U+FFFD silently, and the store would keep the damage.
	if err := synctext.CheckJSONBody(body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidText,
			"a key or entry "+strings.TrimPrefix(err.Error(), "synctext: ")+"; send every entry exactly as valid UTF-8 without NUL; nothing was written")
		return
	}
	if err := synctext.CheckJSONShape(body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeMalformedJSON, err.Error()+"; nothing was written")
		return
	}
	var in teamwire.PutBody
	// A field the body does not take is refused, not ignored: a client
	// that misspells soft_delete_keys must not be told its deletion
	// was written.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeUnknownField,
				"the request body has a field this route does not take ("+strings.TrimPrefix(err.Error(), "json: ")+"); it takes entries and soft_delete_keys; nothing was written")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeMalformedJSON, "the request body is not valid JSON")
		return
	}
	n := 0
	for k, v := range in.Entries {
		n++
		if teamwire.ValidateKeySyntax(k) != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidKey, "an entry key is not a valid team memory key; nothing was written")
			return
		}
		if !norm.NFC.IsNormalString(k) {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeKeyNotNFC, "an entry key is not in Unicode NFC form; send keys in NFC; nothing was written")
			return
		}
		if len(v) > h.cfg.MaxEntryBytes {
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", teamwire.CodeEntryTooLarge,
				"an entry is over "+strconv.Itoa(h.cfg.MaxEntryBytes)+" bytes; nothing was written")
			return
		}
	}
	// An injection found in a write to a repo under review that waits for
	// a person (needsReview) goes to that person, flagged, instead of being refused: the rest of the
	// screens refuse everywhere.
	var screened map[string]string
	var injected *screen.Error
	var injectedKey string
	for _, k := range entryKeys(in.Entries) {
		what := "an entry's key" // shown wherever the entry is
		m, ok := secretScanner().First(k)
		if !ok {
			what = "an entry"
			m, ok = secretScanner().First(in.Entries[k])
		}
		if ok {
			writeJSON(w, http.StatusBadRequest, teamwire.ErrorBody{Error: teamwire.ErrorInfo{
				Type:    "invalid_request_error",
				Message: what + " holds a credential (" + m.Label + "): remove it from the memory; nothing was written",
				Details: teamwire.ErrorDetails{ErrorCode: teamwire.CodeSecret, Keys: []string{k}},
			}})
			return
		}
		if se := screenEntry(k, in.Entries[k]); se != nil {
			if se.Screen == screen.ScreenInjection {
				if screened == nil {
					screened = map[string]string{}
					injected, injectedKey = se, k
				}
				screened[k] = screenCode(se) + ": " + se.Error()
				continue
			}
			writeJSON(w, http.StatusBadRequest, teamwire.ErrorBody{Error: teamwire.ErrorInfo{
				Type: "invalid_request_error", Message: se.Error() + "; nothing was written",
				Details: teamwire.ErrorDetails{ErrorCode: screenCode(se), Keys: []string{k}},
			}})
			return
		}
	}
	for _, k := range in.SoftDeleteKeys {
		if teamwire.ValidateKeySyntax(k) != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidKey, "a key to delete is not a valid team memory key; nothing was written")
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.StoreTimeout)
	defer cancel()
	switch err := h.gate(ctx, repo.Tenant, Target{Kind: TargetRepo, Name: repo.Name}, grant, prov); {
	case errors.Is(err, errPropose):
		h.proposeTeam(w, r.WithContext(ctx), repo, grant, prov, in, screened)
		return
	case err != nil:
		h.reviewError(w, err)
		return
	case injected != nil:
		writeJSON(w, http.StatusBadRequest, teamwire.ErrorBody{Error: teamwire.ErrorInfo{
			Type: "invalid_request_error", Message: injected.Error() + "; nothing was written",
			Details: teamwire.ErrorDetails{ErrorCode: screenCode(injected), Keys: []string{injectedKey}},
		}})
		return
	}
	start := time.Now()
	snap, err := h.team.Put(ctx, repo, PutRequest{
		IfMatch: unquote(r.Header.Get("If-Match")), Entries: in.Entries, Deletes: in.SoftDeleteKeys,
		MaxEntries: h.cfg.MaxEntries, MaxRepos: h.cfg.MaxRepos, Retention: h.cfg.Retention,
		Author: grant.author(), Provenance: prov, Now: h.cfg.Now(),
	})
	h.metrics.StoreCall("put", time.Since(start))
	var tooMany *TooManyEntriesError
	var conflict *KeyConflictError
	switch {
	case errors.Is(err, ErrPreconditionFailed):
		writeError(w, http.StatusPreconditionFailed, "conflict_error", teamwire.CodeConflict, "the repo changed since you read it; fetch the hashes and retry")
		return
	case errors.As(err, &conflict):
		writeJSON(w, http.StatusBadRequest, teamwire.ErrorBody{Error: teamwire.ErrorInfo{
			Type: "invalid_request_error", Message: "two keys could not both exist as files on a disk (one is a folder of the other, or they differ only in case or Unicode form); nothing was written",
			Details: teamwire.ErrorDetails{ErrorCode: teamwire.CodeKeyConflict, Keys: conflict.Keys},
		}})
		return
	case errors.Is(err, ErrTooManyRepos):
		writeError(w, http.StatusForbidden, "permission_error", teamwire.CodeTooManyRepos, "the organization holds as many repos as the server allows; nothing was written")
		return
	case errors.As(err, &tooMany):
		writeJSON(w, http.StatusRequestEntityTooLarge, teamwire.ErrorBody{Error: teamwire.ErrorInfo{
			Type: "request_too_large", Message: "the repo would hold more entries than its limit; nothing was written",
			Details: teamwire.ErrorDetails{ErrorCode: teamwire.CodeTooManyEntries, MaxEntries: tooMany.Max, ReceivedEntries: tooMany.Received},
		}})
		return
	case err != nil:
		h.storeError(w, err)
		return
	}
	h.hashes.forget(repo)
	h.changes.notify(repo)
	w.Header().Set("ETag", `"`+snap.Checksum+`"`)
	writeJSON(w, http.StatusOK, teamwire.PutResult{Checksum: snap.Checksum, LastModified: snap.LastModified.UTC().Format(time.RFC3339Nano), Version: snap.Version})
}

// storeError answers a store failure: 503 with Retry-After when the store
// is busy or the request waited too long for it (the client retries),
// 500 otherwise.
func (h *Handler) storeError(w http.ResponseWriter, err error) {
	if f := h.storageFault(err); f != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(faultRetry.Seconds())))
		writeError(w, f.status, f.typ, f.code, f.message)
		return
	}
	if errors.Is(err, ErrOverloaded) || errors.Is(err, context.DeadlineExceeded) {
		h.log.Warn("team memory store busy", "error", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "overloaded_error", teamwire.CodeOverloaded, "the server is busy; retry shortly")
		return
	}
	h.internal(w, err)
}

func (h *Handler) internal(w http.ResponseWriter, err error) {
	h.log.Error("team memory store failed", "error", err)
	writeError(w, http.StatusInternalServerError, "api_error", "internal_error", "the server could not complete the request")
}

func nonEmpty(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	return m
}

// unquote strips the quotes (and a weak-validator prefix) of an ETag.
func unquote(tag string) string {
	tag = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tag), "W/"))
	return strings.Trim(tag, `"`)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, teamwire.ErrorBody{Error: teamwire.ErrorInfo{Type: typ, Message: msg, Details: teamwire.ErrorDetails{ErrorCode: code}}})
}
