package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/teammem"
	"golang.org/x/text/unicode/norm"
)

// Config configures the sync handler. Store is required.
type Config struct {
	Store  Store
	Tokens []TokenGrant
	// Path is the endpoint (default teammem.DefaultSyncPath).
	Path string
	// MaxEntries bounds the entries of one repo (default 2,000; negative
	// means no limit).
	MaxEntries int
	// MaxEntryBytes bounds one entry (default teammem.MaxEntryBytes).
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
}

// DefaultMaxEntries is the default entry limit of one repo.
const DefaultMaxEntries = 2000

// Handler serves the team memory sync protocol.
type Handler struct {
	cfg     Config
	grants  map[string]TokenGrant // by token hash
	log     *slog.Logger
	changes *changeFeed
}

// NewHandler returns the sync handler.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: Config needs a Store")
	}
	if cfg.Path == "" {
		cfg.Path = teammem.DefaultSyncPath
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxEntries < 0 {
		cfg.MaxEntries = 0
	}
	if cfg.MaxEntryBytes <= 0 {
		cfg.MaxEntryBytes = teammem.MaxEntryBytes
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = 1000
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = time.Second
	}
	h := &Handler{cfg: cfg, grants: map[string]TokenGrant{}, log: cfg.Logger, changes: newChangeFeed()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for i, g := range cfg.Tokens {
		if err := g.validate(); err != nil {
			return nil, fmt.Errorf("server: token %d: %w", i+1, err)
		}
		h.grants[g.TokenSHA256] = g
	}
	return h, nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	repo, tenant := h.serve(sw, r)
	h.log.Info("team memory request", "method", r.Method, "repo", repo, "tenant", tenant,
		"view", r.URL.Query().Get("view"), "status", sw.status, "duration_ms", time.Since(start).Milliseconds())
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (repoName, tenant string) {
	if r.URL.Path != h.cfg.Path {
		writeError(w, http.StatusNotFound, "not_found_error", "not_found", "no such endpoint")
		return "", ""
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPut {
		w.Header().Set("Allow", "GET, PUT")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", teammem.CodeMethodNotAllowed, "use GET or PUT")
		return "", ""
	}
	grant, ok := h.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="team memory"`)
		writeError(w, http.StatusUnauthorized, "authentication_error", teammem.CodeUnauthorized, "a valid bearer token is required")
		return "", ""
	}
	repoName = r.URL.Query().Get("repo")
	if !ValidRepoSlug(repoName) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teammem.CodeInvalidRepo, "repo must be owner/name")
		return "", grant.Organization
	}
	// Decided before the store is touched: a 403 says nothing about
	// whether the repo has data.
	if !grant.allows(repoName) {
		writeError(w, http.StatusForbidden, "permission_error", teammem.CodeForbidden, "this token may not use that repo")
		return repoName, grant.Organization
	}
	repo := Repo{Tenant: grant.Organization, Name: repoName}
	if r.Method == http.MethodGet {
		h.get(w, r, repo)
	} else {
		h.put(w, r, repo)
	}
	return repoName, grant.Organization
}

func (h *Handler) authenticate(r *http.Request) (TokenGrant, bool) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return TokenGrant{}, false
	}
	g, ok := h.grants[HashToken(strings.TrimSpace(token))]
	return g, ok
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, repo Repo) {
	view := r.URL.Query().Get("view")
	switch view {
	case "", "hashes":
	case "limits":
		writeJSON(w, http.StatusOK, teammem.LimitsView{MaxEntries: h.cfg.MaxEntries, MaxEntryBytes: h.cfg.MaxEntryBytes,
			MaxBodyBytes: h.cfg.MaxBodyBytes, MaxRepoBytes: h.maxRepoBytes()})
		return
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", teammem.CodeInvalidView, "unknown view (want hashes or limits)")
		return
	}
	hashes := view == "hashes"
	if hashes && r.URL.Query().Has("wait") {
		if !h.waitForChange(w, r, repo) {
			return
		}
	}
	snap, err := h.cfg.Store.Get(r.Context(), repo, !hashes)
	if errors.Is(err, ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found_error", "team_memory_not_found", "no team memory for this repo yet")
		return
	}
	if err != nil {
		h.internal(w, err)
		return
	}
	etag := `"` + snap.Checksum + `"`
	w.Header().Set("ETag", etag)
	if hashes {
		writeJSON(w, http.StatusOK, teammem.HashesView{Version: snap.Version, Checksum: snap.Checksum, EntryChecksums: snap.Checksums, DeletedEntries: nonEmpty(snap.Tombstones)})
		return
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && unquote(inm) == snap.Checksum {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, teammem.TeamMemoryData{
		OrganizationID: repo.Tenant, Repo: repo.Name, Version: snap.Version,
		LastModified: snap.LastModified.UTC().Format(time.RFC3339Nano), Checksum: snap.Checksum,
		Content: teammem.Content{Entries: snap.Entries, EntryChecksums: snap.Checksums, DeletedEntries: nonEmpty(snap.Tombstones)},
	})
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request, repo Repo) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", teammem.CodeBodyTooLarge,
			"the request body is over "+strconv.FormatInt(h.cfg.MaxBodyBytes, 10)+" bytes; send fewer entries per request")
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teammem.CodeMalformedJSON, "the request body could not be read")
		return
	}
	var in teammem.PutBody
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teammem.CodeMalformedJSON, "the request body is not valid JSON")
		return
	}
	n := 0
	for k, v := range in.Entries {
		n++
		if teammem.ValidateKeySyntax(k) != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teammem.CodeInvalidKey, "an entry key is not a valid team memory key; nothing was written")
			return
		}
		if !norm.NFC.IsNormalString(k) {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teammem.CodeKeyNotNFC, "an entry key is not in Unicode NFC form; send keys in NFC; nothing was written")
			return
		}
		if len(v) > h.cfg.MaxEntryBytes {
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", teammem.CodeEntryTooLarge,
				"an entry is over "+strconv.Itoa(h.cfg.MaxEntryBytes)+" bytes; nothing was written")
			return
		}
	}
	for _, k := range in.SoftDeleteKeys {
		if teammem.ValidateKeySyntax(k) != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teammem.CodeInvalidKey, "a key to delete is not a valid team memory key; nothing was written")
			return
		}
	}
	snap, err := h.cfg.Store.Put(r.Context(), repo, PutRequest{
		IfMatch: unquote(r.Header.Get("If-Match")), Entries: in.Entries, Deletes: in.SoftDeleteKeys,
		MaxEntries: h.cfg.MaxEntries, Now: h.cfg.Now(),
	})
	var tooMany *TooManyEntriesError
	var conflict *KeyConflictError
	switch {
	case errors.Is(err, ErrPreconditionFailed):
		writeError(w, http.StatusPreconditionFailed, "conflict_error", teammem.CodeConflict, "the repo changed since you read it; fetch the hashes and retry")
		return
	case errors.As(err, &conflict):
		writeJSON(w, http.StatusBadRequest, teammem.ErrorBody{Error: teammem.ErrorInfo{
			Type: "invalid_request_error", Message: "two keys could not both exist as files on a disk (one is a folder of the other, or they differ only in case or Unicode form); nothing was written",
			Details: teammem.ErrorDetails{ErrorCode: teammem.CodeKeyConflict, Keys: conflict.Keys},
		}})
		return
	case errors.As(err, &tooMany):
		writeJSON(w, http.StatusRequestEntityTooLarge, teammem.ErrorBody{Error: teammem.ErrorInfo{
			Type: "request_too_large", Message: "the repo would hold more entries than its limit; nothing was written",
			Details: teammem.ErrorDetails{ErrorCode: teammem.CodeTooManyEntries, MaxEntries: tooMany.Max, ReceivedEntries: tooMany.Received},
		}})
		return
	case err != nil:
		h.internal(w, err)
		return
	}
	h.changes.notify(repo)
	w.Header().Set("ETag", `"`+snap.Checksum+`"`)
	writeJSON(w, http.StatusOK, teammem.PutResult{Checksum: snap.Checksum, LastModified: snap.LastModified.UTC().Format(time.RFC3339Nano), Version: snap.Version})
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
	writeJSON(w, status, teammem.ErrorBody{Error: teammem.ErrorInfo{Type: typ, Message: msg, Details: teammem.ErrorDetails{ErrorCode: code}}})
}
