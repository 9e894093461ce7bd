package teamserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/secrets"
)

// MemoryStores is the store interface of the Memory Stores protocol
// (storetest.RunMemoryStores checks it). Every Store has it; on a
// TeamStore without it the protocol's routes answer 404.
type MemoryStores interface {
	CreateMemStore(ctx context.Context, tenant string, st MemStore, limits StoreLimits, now time.Time) (MemStore, error)
	GetMemStore(ctx context.Context, tenant, id string) (MemStore, error)
	FindMemStore(ctx context.Context, tenant, idOrName string) (MemStore, error)
	ListMemStores(ctx context.Context, tenant string) ([]MemStore, error)
	UpdateMemStore(ctx context.Context, tenant, id string, p StorePatch, now time.Time) (MemStore, error)
	ArchiveMemStore(ctx context.Context, tenant, id string, now time.Time) (MemStore, error)
	DeleteMemStore(ctx context.Context, tenant, id string) error
	GetMemory(ctx context.Context, tenant, storeID, id string) (Memory, error)
	EachMemory(ctx context.Context, tenant, storeID string, withContent bool, head func(MemStore) error, fn func(Memory) error) error
	CreateMemory(ctx context.Context, tenant, storeID string, w MemoryWrite, limits StoreLimits, now time.Time) (Memory, error)
	UpdateMemory(ctx context.Context, tenant, storeID, id string, w MemoryWrite, limits StoreLimits, now time.Time) (Memory, error)
	DeleteMemory(ctx context.Context, tenant, storeID, id, ifSHA256 string, by Actor, now time.Time) error
	ListVersions(ctx context.Context, tenant, storeID string, f VersionFilter) ([]MemoryVersion, error)
	GetVersion(ctx context.Context, tenant, storeID, id string) (MemoryVersion, error)
	RedactVersion(ctx context.Context, tenant, storeID, id string, by Actor, now time.Time) (MemoryVersion, error)
}

// storesCall is one request to the Memory Stores API, authenticated.
type storesCall struct {
	h      *Handler
	ms     MemoryStores
	w      http.ResponseWriter
	r      *http.Request
	grant  TokenGrant
	tenant string
	code   bool // Claude Code's route
	// codeRef is the store's ID or name on Claude Code's route.
	codeRef string
	prov    teamwire.Provenance
}

// mayUse reports whether the token reaches a store: "*" reaches every
// store of its organization.
func (c *storesCall) mayUse(storeID string) bool { return c.grant.AllowsStore(storeID) }

// actor is who writes, in the shapes of the API's created_by: a
// person's token is a user_actor, an agent's that names its session a
// session_actor, any other token an api_actor.
func (c *storesCall) actor() Actor {
	a := Actor{Type: "api_actor", ID: c.grant.author(), Provenance: c.prov}
	switch {
	case c.grant.IsPerson():
		a.Type = "user_actor"
	case c.prov.Session != "":
		a.Type = "session_actor"
	}
	return a
}

// review applies the store's policy to a write: true when it may go on;
// otherwise the answer is given (403 for a read-only store, 202 with the
// proposal when it is kept for review).
func (c *storesCall) review(storeID string, p Proposal, withMetadata bool) bool {
	err := c.h.gate(c.r.Context(), c.tenant, Target{Kind: TargetStore, Name: storeID}, c.grant, c.prov)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrReadOnly):
		c.fail(&APIError{Status: http.StatusForbidden, Type: "permission_error", Code: teamwire.CodeReadOnly,
			Message: "this memory store is read-only (its review policy); nothing was written"})
		return false
	case !errors.Is(err, errPropose):
		c.fail(err)
		return false
	case withMetadata:
		// A proposal carries content only: metadata would be lost.
		c.fail(invalid("this memory store keeps this write for review, and a proposal carries no metadata: send it without metadata, or have a person's token write it; nothing was written"))
		return false
	}
	p.Tenant, p.Target, p.Author, p.TokenSHA256, p.Provenance, p.Created = c.tenant, Target{Kind: TargetStore, Name: storeID},
		c.grant.author(), c.grant.TokenSHA256, c.prov, c.now()
	got, err := c.h.reviews().Propose(c.r.Context(), c.h.judge(c.r.Context(), []Proposal{p})[0])
	if errors.Is(err, ErrTooManyProposals) {
		c.fail(&APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: teamwire.CodeTooManyProposals,
			Message: "this memory store holds " + strconv.Itoa(MaxPendingProposals) + " proposals waiting for review; a person must approve or reject some first; nothing was kept"})
		return false
	}
	if err != nil {
		c.fail(err)
		return false
	}
	c.h.log.Info("memory stores write kept for review", "store", storeID, "tenant", c.tenant, "author", got.Author, "door", got.Door)
	writeJSON(c.w, http.StatusAccepted, proposalJSON(got))
	return false
}

func proposalJSON(p Proposal) storewire.Proposal {
	out := storewire.Proposal{Type: storewire.ProposalType, ID: p.ID, Status: p.Status, MemoryStoreID: p.Target.Name,
		MemoryID: nullable(p.MemoryID), Path: p.Key, Operation: p.Op, CreatedAt: timeJSON(p.Created),
		Message: "kept for review: the store's policy sends an agent's writes to a person; it is served to nobody else until approved"}
	if p.Status == ProposalRejected {
		out.Reason = p.Reason
		out.Message = "a person already rejected this very change; nothing was kept"
	}
	return out
}

func (c *storesCall) now() time.Time { return c.h.cfg.Now() }

func (c *storesCall) limits() StoreLimits { return c.h.cfg.StoreLimits }

// fail answers an error: an *APIError as it says, a busy store 503 with
// Retry-After, anything else 500 (logged, never shown).
func (c *storesCall) fail(err error) {
	var api *APIError
	fault := c.h.storageFault(err)
	switch {
	case errors.As(err, &api):
		writeStoresError(c.w, api)
	case c.r.Context().Err() != nil && errors.Is(err, context.Canceled):
		// The client went away: nobody reads the answer.
		c.w.WriteHeader(statusClientClosed)
	case fault != nil:
		c.w.Header().Set("Retry-After", strconv.Itoa(int(faultRetry.Seconds())))
		writeStoresError(c.w, &APIError{Status: fault.status, Type: fault.typ, Message: fault.message})
	case errors.Is(err, ErrOverloaded) || errors.Is(err, context.DeadlineExceeded):
		c.h.log.Warn("memory stores: store busy", "error", err)
		c.w.Header().Set("Retry-After", "1")
		writeStoresError(c.w, &APIError{Status: http.StatusServiceUnavailable, Type: "overloaded_error", Message: "the server is busy; retry shortly"})
	default:
		c.h.log.Error("memory stores: store failed", "error", err)
		writeStoresError(c.w, &APIError{Status: http.StatusInternalServerError, Type: "api_error", Message: "the server could not complete the request"})
	}
}

// statusClientClosed is what the metrics and the log record for a request
// whose client went away before the answer.
const statusClientClosed = 499

func writeStoresError(w http.ResponseWriter, e *APIError) {
	info := storewire.ErrorInfo{Type: e.Type, Message: e.Message, ErrorCode: e.Code}
	if e.ConflictingID != "" {
		info.ConflictingID, info.ConflictingPath = e.ConflictingID, e.ConflictingPath
	}
	writeJSON(w, e.Status, storewire.ErrorBody{Type: storewire.TypeError, Error: info})
}

// decode reads a JSON body within MaxBodyBytes; unknown fields are
// refused, so a misspelt precondition is not silently ignored.
func (c *storesCall) decode(v any) bool {
	raw, ok := c.readBody()
	if !ok {
		return false
	}
	// Checked on the raw bytes: decoding would turn what JSON cannot carry
	// into U+FFFD silently, and the store would keep the damage.
	if err := synctext.CheckJSONBody(raw); err != nil {
		c.fail(&APIError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "a string of the request " + strings.TrimPrefix(err.Error(), "synctext: ") + "; send content and paths as valid UTF-8 without NUL (nothing was written)"})
		return false
	}
	if err := synctext.CheckJSONShape(raw); err != nil {
		c.fail(invalid("%s (nothing was written)", err.Error()))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		c.fail(invalid("the request body is not valid JSON for this call: %s", clip(err.Error())))
		return false
	}
	return true
}

// readBody reads the request body within MaxBodyBytes (false: refused,
// answered).
func (c *storesCall) readBody() ([]byte, bool) {
	raw, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, c.h.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		c.fail(&APIError{Status: http.StatusRequestEntityTooLarge, Type: "request_too_large", Message: "the request body is too large"})
		return nil, false
	}
	if err != nil {
		c.fail(invalid("the request body could not be read"))
		return nil, false
	}
	return raw, true
}

// answer writes the view out gives (200), or the call's error.
func (c *storesCall) answer(err error, out func() any) {
	if err != nil {
		c.fail(err)
		return
	}
	writeJSON(c.w, http.StatusOK, out())
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

// ---- stores ----

func timeJSON(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timeJSON(t)
	return &s
}

func storeOut(st MemStore) storewire.Store {
	return storewire.Store{Type: storewire.TypeStore, ID: st.ID, Name: st.Name, Description: st.Description, Metadata: st.Metadata,
		CreatedAt: timeJSON(st.Created), UpdatedAt: timeJSON(st.Updated), ArchivedAt: optTime(st.Archived)}
}

func (c *storesCall) createStore() {
	if !slices.Contains(c.grant.Stores, "*") {
		c.fail(&APIError{Status: http.StatusForbidden, Type: "permission_error", Message: `this token may only use the stores it names; creating a store needs "stores": ["*"]`})
		return
	}
	var req storewire.CreateStore
	if !c.decode(&req) {
		return
	}
	if err := screenStore(&req.Name, &req.Description, req.Metadata); err != nil {
		c.fail(err)
		return
	}
	st, err := c.ms.CreateMemStore(c.r.Context(), c.tenant, MemStore{Name: req.Name, Description: req.Description, Metadata: req.Metadata}, c.limits(), c.now())
	c.answer(err, func() any { return storeOut(st) })
}

func (c *storesCall) getStore(id string) {
	st, err := c.ms.GetMemStore(c.r.Context(), c.tenant, id)
	c.answer(err, func() any { return storeOut(st) })
}

func (c *storesCall) updateStore(id string) {
	var req storewire.UpdateStore
	if !c.decode(&req) {
		return
	}
	if err := screenStore(req.Name, req.Description, req.Metadata); err != nil {
		c.fail(err)
		return
	}
	st, err := c.ms.UpdateMemStore(c.r.Context(), c.tenant, id, StorePatch{Name: req.Name, Description: req.Description, Metadata: req.Metadata}, c.now())
	c.answer(err, func() any { return storeOut(st) })
}

// mayManage answers 403 unless the token may archive or delete the
// store itself: a "*" token, or a grant with Manage.
func (c *storesCall) mayManage() bool {
	if slices.Contains(c.grant.Stores, "*") || c.grant.Manage {
		return true
	}
	c.fail(&APIError{Status: http.StatusForbidden, Type: "permission_error",
		Message: "this token may use the store's memories but not archive or delete the store; issue a token with --manage for that", Code: CodeStoreNotManaged})
	return false
}

// CodeStoreNotManaged is the error_code of a 403 to a token that may use a
// store but not archive or delete it (TokenGrant.Manage).
const CodeStoreNotManaged = "store_not_managed"

func (c *storesCall) archiveStore(id string) {
	if !c.mayManage() {
		return
	}
	st, err := c.ms.ArchiveMemStore(c.r.Context(), c.tenant, id, c.now())
	c.answer(err, func() any { return storeOut(st) })
}

func (c *storesCall) deleteStore(id string) {
	if !c.mayManage() {
		return
	}
	if err := c.ms.DeleteMemStore(c.r.Context(), c.tenant, id); err != nil {
		c.fail(err)
		return
	}
	writeJSON(c.w, http.StatusOK, storewire.Deleted{ID: id, Type: storewire.TypeStoreDeleted})
}

func (c *storesCall) listStores() {
	q := c.r.URL.Query()
	limit, ok := c.limit(q.Get("limit"), 100)
	if !ok {
		return
	}
	from, to, ok := c.timeRange(q.Get("created_at[gte]"), q.Get("created_at[lte]"))
	if !ok {
		return
	}
	all, err := c.ms.ListMemStores(c.r.Context(), c.tenant)
	if err != nil {
		c.fail(err)
		return
	}
	after, ok := c.cursor(q.Get("page"))
	if !ok {
		return
	}
	includeArchived := q.Get("include_archived") == "true"
	page := []storewire.Store{}
	next, last := "", ""
	for _, st := range all { // newest first: the key grows down the list
		key := fmt.Sprintf("%019d", math.MaxInt64-st.Seq)
		if (after != "" && key <= after) || !c.mayUse(st.ID) || (!includeArchived && !st.Archived.IsZero()) ||
			(!from.IsZero() && st.Created.Before(from)) || (!to.IsZero() && st.Created.After(to)) {
			continue
		}
		if len(page) == limit {
			next = encodeCursor(last)
			break
		}
		page = append(page, storeOut(st))
		last = key
	}
	writeJSON(c.w, http.StatusOK, storewire.Page{Data: page, NextPage: nullable(next)})
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---- paging and query parameters ----

func encodeCursor(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("c1:" + key))
}

// cursor decodes a page cursor; "" is the first page.
func (c *storesCall) cursor(page string) (string, bool) {
	if page == "" {
		return "", true
	}
	raw, err := base64.RawURLEncoding.DecodeString(page)
	key, ok := strings.CutPrefix(string(raw), "c1:")
	// A forged cursor could carry what no store can compare (invalid
	// UTF-8, a NUL): refused alike on every store.
	if err != nil || !ok || key == "" || synctext.CheckContent([]byte(key)) != nil {
		c.fail(invalid("page is not a next_page value this server gave"))
		return "", false
	}
	return key, true
}

// limit reads the limit parameter: 1 to 100, 20 when absent, at most
// maxLimit.
// page reads a listing's view (basic by default) and limit: at most 100
// items a page, 20 with their content (false: answered).
func (c *storesCall) page() (full bool, limit int, ok bool) {
	if full, ok = c.view("basic"); !ok {
		return false, 0, false
	}
	maxLimit := 100
	if full {
		maxLimit = 20
	}
	limit, ok = c.limit(c.r.URL.Query().Get("limit"), maxLimit)
	return full, limit, ok
}

func (c *storesCall) limit(v string, maxLimit int) (int, bool) {
	if v == "" {
		return min(20, maxLimit), true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100 {
		c.fail(invalid("limit must be an integer from 1 to 100"))
		return 0, false
	}
	return min(n, maxLimit), true
}

func (c *storesCall) timeRange(gte, lte string) (from, to time.Time, ok bool) {
	for _, p := range []struct {
		v   string
		out *time.Time
	}{{gte, &from}, {lte, &to}} {
		if p.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, p.v)
		if err != nil {
			c.fail(invalid("created_at filters must be RFC 3339 timestamps"))
			return from, to, false
		}
		*p.out = t
	}
	return from, to, true
}

// view reads the view parameter: def when absent.
func (c *storesCall) view(def string) (full bool, ok bool) {
	switch v := c.r.URL.Query().Get("view"); v {
	case "":
		return def == "full", true
	case "basic", "full":
		return v == "full", true
	}
	c.fail(invalid("view must be basic or full"))
	return false, false
}

// ---- memories ----

func memoryOut(m Memory, full bool) storewire.Memory {
	out := storewire.Memory{Type: storewire.TypeMemory, ID: m.ID, MemoryStoreID: m.StoreID, MemoryVersionID: m.VersionID, Path: m.Path,
		ContentSHA256: m.SHA256, ContentSize: m.Size, CreatedAt: timeJSON(m.Created), UpdatedAt: timeJSON(m.Updated), Metadata: m.Metadata}
	if full {
		content := m.Content
		out.Content = &content
	}
	return out
}

// secretScanner is the one scanner of every Memory Stores write: built
// once (its rules compile dozens of expressions), safe for concurrent
// use.
var secretScanner = sync.OnceValue(secrets.New)

// screenMemory refuses content that holds a credential, with the
// message the hosted service gives, and content that the screens refuse
// in shared memory (an invisible character, a high-confidence injection,
// a foreign link in a MEMORY.md at path), with their error code; and a
// path that holds a credential (it is shown wherever the memory is).
// screenMetadata refuses metadata no store keeps (validateMetadata), and
// keys and values that screenShown refuses. Metadata is never proposed
// for review, so an injection there is refused outright.
func screenMetadata(metadata map[string]string) error {
	if err := validateMetadata(metadata); err != nil || len(metadata) == 0 {
		return err
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(metadata)) {
		b.WriteString(k + ": " + metadata[k] + "\n")
	}
	return screenShown("metadata", b.String())
}

// screenShown refuses text shown beside the memories to every member and
// to the model (metadata, a store's name and description) that holds a
// credential, an invisible character or a high-confidence injection.
func screenShown(what, text string) error {
	if len(secretScanner().Scan(text)) > 0 {
		return invalid("%s holds a credential: remove it; nothing was written", what)
	}
	if se := screenEntry(what, text); se != nil {
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: what + ": " + se.Error(), Code: screenCode(se)}
	}
	return nil
}

// screenStore applies screenShown to a store's name, description and
// metadata as a create or an update sends them (nil: kept).
func screenStore(name, description *string, metadata map[string]string) error {
	if err := screenMetadata(metadata); err != nil {
		return err
	}
	if name != nil {
		if err := screenShown("the store's name", *name); err != nil {
			return err
		}
	}
	if description != nil {
		return screenShown("the store's description", *description)
	}
	return nil
}

func screenMemory(path string, content *string) error {
	if len(secretScanner().Scan(path)) > 0 {
		return invalid("path appears to contain a credential or API key; remove it before writing. If the credential is real, rotate it.")
	}
	if content == nil {
		return nil
	}
	if len(secretScanner().Scan(*content)) > 0 {
		return invalid(msgSecret)
	}
	if se := screenEntry(path, *content); se != nil {
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: se.Error(), Code: screenCode(se)}
	}
	return nil
}

// screen applies screenMemory to a write (false: refused, answered). A
// high-confidence injection in a write to a store under review that
// waits for a person (needsReview) is not refused: it is returned, to flag the proposal it becomes.
func (c *storesCall) screen(storeID, path string, content *string) (string, bool) {
	err := screenMemory(path, content)
	if err == nil {
		return "", true
	}
	var api *APIError
	if errors.As(err, &api) && api.Code == teamwire.CodeInjection && needsReview(c.grant, c.prov) {
		if policy, perr := c.h.Policy(c.r.Context(), c.tenant, Target{Kind: TargetStore, Name: storeID}); perr == nil && policy == PolicyReview {
			return api.Code + ": " + api.Message, true
		}
	}
	c.fail(err)
	return "", false
}

func (c *storesCall) createMemory(storeID string) {
	full, ok := c.view("basic")
	if !ok {
		return
	}
	var req storewire.CreateMemory
	if !c.decode(&req) {
		return
	}
	if req.Precondition != nil && req.Precondition.Type != storewire.PreconditionNotExists {
		c.fail(invalid(`a create takes only the precondition {"type": "not_exists"}`))
		return
	}
	if err := screenMetadata(req.Metadata); err != nil {
		c.fail(err)
		return
	}
	screened, ok := c.screen(storeID, req.Path, req.Content)
	if !ok {
		return
	}
	if req.Content != nil && validateMemoryPath(req.Path) == nil && validateContent(*req.Content) == nil &&
		!c.review(storeID, Proposal{Key: req.Path, Op: OpCreated, Content: *req.Content, Screened: screened}, len(req.Metadata) > 0) {
		return
	}
	m, err := c.ms.CreateMemory(c.r.Context(), c.tenant, storeID, MemoryWrite{Path: req.Path, Content: req.Content, Metadata: req.Metadata, By: c.actor()}, c.limits(), c.now())
	c.answer(err, func() any { return memoryOut(m, full) })
}

func (c *storesCall) getMemory(storeID, id string) {
	full, ok := c.view("full")
	if !ok {
		return
	}
	m, err := c.ms.GetMemory(c.r.Context(), c.tenant, storeID, id)
	c.answer(err, func() any { return memoryOut(m, full) })
}

func (c *storesCall) updateMemory(storeID, id string) {
	full, ok := c.view("basic")
	if !ok {
		return
	}
	var req storewire.UpdateMemory
	if !c.decode(&req) {
		return
	}
	w := MemoryWrite{Content: req.Content, Metadata: req.Metadata, By: c.actor()}
	if req.Path != nil {
		if *req.Path == "" {
			c.fail(invalid("path must be absolute (start with /)"))
			return
		}
		w.Path = *req.Path
	}
	if p := req.Precondition; p != nil {
		if p.Type != storewire.PreconditionSHA256 || !hexRe.MatchString(p.ContentSHA256) {
			c.fail(invalid(`an update takes the precondition {"type": "content_sha256", "content_sha256": "<64 lower-case hex digits>"}`))
			return
		}
		w.IfSHA256 = p.ContentSHA256
	}
	if err := screenMetadata(req.Metadata); err != nil {
		c.fail(err)
		return
	}
	screened, ok := c.screen(storeID, w.Path, req.Content)
	if !ok {
		return
	}
	proceed, unchanged := c.reviewUpdate(storeID, id, w, screened)
	if unchanged != nil {
		c.answer(nil, func() any { return memoryOut(*unchanged, full) })
		return
	}
	if !proceed {
		return
	}
	m, err := c.ms.UpdateMemory(c.r.Context(), c.tenant, storeID, id, w, c.limits(), c.now())
	c.answer(err, func() any { return memoryOut(m, full) })
}

// reviewUpdate applies the store's policy to an update (true: go on):
// under review the proposal holds the memory's whole next state.
//
// An update that changes nothing is answered with the memory as it is
// (unchanged), never written: written, it could put back what a person
// changed meanwhile, past the policy.
func (c *storesCall) reviewUpdate(storeID, id string, w MemoryWrite, screened string) (proceed bool, unchanged *Memory) {
	policy, err := c.h.Policy(c.r.Context(), c.tenant, Target{Kind: TargetStore, Name: storeID})
	if err != nil {
		c.fail(err)
		return false, nil
	}
	if policy == PolicyOpen {
		return true, nil
	}
	cur, err := c.ms.GetMemory(c.r.Context(), c.tenant, storeID, id)
	if err != nil {
		c.fail(err)
		return false, nil
	}
	if err := w.check(false); err != nil {
		c.fail(err)
		return false, nil
	}
	next := Proposal{Key: cur.Path, MemoryID: id, Op: OpModified, Content: cur.Content, Base: cur.SHA256, Screened: screened}
	if w.Path != "" {
		next.Key = w.Path
	}
	if w.Content != nil {
		next.Content = *w.Content
	}
	sameMetadata := w.Metadata == nil || maps.Equal(w.Metadata, cur.Metadata)
	if next.Key == cur.Path && next.Content == cur.Content && sameMetadata && screened == "" {
		return false, &cur // changes nothing
	}
	if w.IfSHA256 != "" && w.IfSHA256 != cur.SHA256 {
		c.fail(preconditionFailed(cur))
		return false, nil
	}
	if sameMetadata {
		w.Metadata = nil
	}
	return c.review(storeID, next, w.Metadata != nil), nil
}

func (c *storesCall) deleteMemory(storeID, id string) {
	expected := c.r.URL.Query().Get("expected_content_sha256")
	if expected != "" && !hexRe.MatchString(expected) {
		c.fail(invalid("expected_content_sha256 must be 64 lower-case hex digits"))
		return
	}
	if policy, err := c.h.Policy(c.r.Context(), c.tenant, Target{Kind: TargetStore, Name: storeID}); err != nil || policy != PolicyOpen {
		cur, err := c.ms.GetMemory(c.r.Context(), c.tenant, storeID, id)
		if err != nil {
			c.fail(err)
			return
		}
		if expected != "" && expected != cur.SHA256 {
			c.fail(preconditionFailed(cur))
			return
		}
		if !c.review(storeID, Proposal{Key: cur.Path, MemoryID: id, Op: OpDeleted, Base: cur.SHA256}, false) {
			return
		}
	}
	if err := c.ms.DeleteMemory(c.r.Context(), c.tenant, storeID, id, expected, c.actor(), c.now()); err != nil {
		c.fail(err)
		return
	}
	if c.code {
		c.w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(c.w, http.StatusOK, storewire.Deleted{ID: id, Type: storewire.TypeMemoryDeleted})
}

// listItem is a memory or a memory_prefix of a listing; key orders them.
type listItem struct {
	key     string
	prefix  bool
	m       Memory
	fetched bool // m holds its content
}

// listMemories serves one page of a store's memories under path_prefix,
// in path order. With depth N, memories more than N segments below the
// prefix are rolled into one memory_prefix item per folder at depth N.
func (c *storesCall) listMemories(storeID string) {
	q := c.r.URL.Query()
	full, limit, ok := c.page()
	if !ok {
		return
	}
	prefix := q.Get("path_prefix")
	if err := validatePathPrefix(prefix); err != nil {
		c.fail(err)
		return
	}
	if prefix == "" {
		prefix = "/"
	}
	depth := 0
	if v := q.Get("depth"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxMemoryPathSegments {
			c.fail(invalid("depth must be an integer from 0 to 20"))
			return
		}
		depth = n
	}
	if by := q.Get("order_by"); by != "" && by != "path" {
		c.fail(invalid("order_by must be path"))
		return
	}
	desc := false
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		desc = true
	default:
		c.fail(invalid("order must be asc or desc"))
		return
	}
	after, ok := c.cursor(q.Get("page"))
	if !ok {
		return
	}
	_, index, err := c.index(storeID)
	if err != nil {
		c.fail(err)
		return
	}
	var items []listItem
	for _, m := range index {
		if !strings.HasPrefix(m.Path, prefix) {
			continue
		}
		if depth > 0 {
			segs := strings.Split(m.Path[len(prefix):], "/")
			if len(segs) > depth {
				items = append(items, listItem{key: prefix + strings.Join(segs[:depth], "/") + "/", prefix: true})
				continue
			}
		}
		items = append(items, listItem{key: m.Path, m: m})
	}
	// The index is in byte order, so a folder's memories sit together and
	// its prefix items are neighbours.
	items = slices.CompactFunc(items, func(a, b listItem) bool { return a.prefix && b.prefix && a.key == b.key })
	if desc {
		slices.Reverse(items)
	}
	start := 0
	if after != "" {
		start = slices.IndexFunc(items, func(it listItem) bool { return (!desc && it.key > after) || (desc && it.key < after) })
		if start < 0 {
			start = len(items)
		}
	}
	page := items[start:min(len(items), start+limit)]
	next := ""
	if start+limit < len(items) {
		next = encodeCursor(page[len(page)-1].key)
	}
	if full {
		for i := range page {
			if page[i].prefix {
				continue
			}
			m, err := c.ms.GetMemory(c.r.Context(), c.tenant, storeID, page[i].m.ID)
			if err != nil {
				var api *APIError
				if errors.As(err, &api) && api.Status == http.StatusNotFound {
					continue // deleted since the listing: served without content
				}
				c.fail(err)
				return
			}
			page[i].m, page[i].fetched = m, true
		}
	}
	data := make([]any, 0, len(page))
	prefixes := []any{}
	for _, it := range page {
		if it.prefix {
			p := storewire.Prefix{Type: storewire.TypePrefix, Path: it.key}
			if c.code {
				prefixes = append(prefixes, p)
			} else {
				data = append(data, p)
			}
			continue
		}
		data = append(data, memoryOut(it.m, it.fetched))
	}
	body := storewire.Page{Data: data, NextPage: nullable(next)}
	if c.code {
		body.Prefixes = &prefixes
	}
	writeJSON(c.w, http.StatusOK, body)
}

// export streams every memory of a store as NDJSON, from one read: a
// "store" line, a "memory" line per memory (without content under
// view=basic), and a "complete" line with the count. A reply without its
// "complete" line was cut short.
func (c *storesCall) export(storeID string) {
	full, ok := c.view("full")
	if !ok {
		return
	}
	bw := bufio.NewWriterSize(c.w, 64<<10)
	enc := json.NewEncoder(bw)
	started := false
	count := 0
	head := func(st MemStore) error {
		c.w.Header().Set("Content-Type", "application/x-ndjson")
		c.w.WriteHeader(http.StatusOK)
		started = true
		// The ID and the generation (which only grows, and goes back only
		// when the database is restored from a backup) let a sync client
		// tell a replaced or restored store from deletions.
		generation := st.Generation
		line := storewire.StoreLine{Type: storewire.LineStore, ID: st.ID, Name: st.Name, Generation: &generation}
		if !full {
			line.View = "basic"
		}
		return enc.Encode(line)
	}
	each := func(m Memory) error {
		line := storewire.ExportMemory{Type: storewire.LineMemory, ID: m.ID, Path: m.Path, ContentSHA256: m.SHA256, ContentSize: m.Size, UpdatedAt: timeJSON(m.Updated)}
		if full {
			content := m.Content
			line.Content = &content
		}
		count++
		return enc.Encode(line)
	}
	var err error
	if full {
		err = c.ms.EachMemory(c.r.Context(), c.tenant, storeID, true, head, each)
	} else {
		// The basic view answers 304 to a client that names the store's
		// ID and generation it listed last (If-None-Match): nothing moved.
		if st, gerr := c.ms.GetMemStore(c.r.Context(), c.tenant, storeID); gerr == nil {
			tag := fmt.Sprintf("%q", fmt.Sprintf("%s:%d", st.ID, st.Generation))
			c.w.Header().Set("ETag", tag)
			if c.r.Header.Get("If-None-Match") == tag {
				c.w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		var st MemStore
		var index []Memory
		if st, index, err = c.index(storeID); err == nil {
			if err = head(st); err == nil {
				for _, m := range index {
					if err = each(m); err != nil {
						break
					}
				}
			}
		}
	}
	if err != nil {
		if !started {
			c.fail(err)
			return
		}
		// Headers are gone: leave the "complete" line out, so the client
		// sees a cut-short export and does not trust it.
		c.h.log.Error("memory stores: export cut short", "error", err)
		_ = bw.Flush()
		return
	}
	_ = enc.Encode(storewire.CompleteLine{Type: storewire.LineComplete, MemoryCount: count})
	_ = bw.Flush()
}

// index returns a store's memories without content, in byte order of
// their paths, as of one generation of the store: from the cache while
// the store's generation has not moved, else read in one transaction.
func (c *storesCall) index(storeID string) (MemStore, []Memory, error) {
	st, err := c.ms.GetMemStore(c.r.Context(), c.tenant, storeID)
	if err != nil {
		return MemStore{}, nil, err
	}
	if index, ok := c.h.indexes.get(st.ID, st.Generation); ok {
		return st, index, nil
	}
	var index []Memory
	err = c.ms.EachMemory(c.r.Context(), c.tenant, storeID, false, func(head MemStore) error {
		st = head
		return nil
	}, func(m Memory) error {
		index = append(index, m)
		return nil
	})
	if err != nil {
		return MemStore{}, nil, err
	}
	slices.SortFunc(index, func(a, b Memory) int { return strings.Compare(a.Path, b.Path) })
	c.h.indexes.put(st.ID, st.Generation, index)
	return st, index, nil
}

// ---- versions ----

func actorOut(a Actor) *storewire.Actor {
	out := &storewire.Actor{Type: a.Type}
	switch a.Type {
	case "user_actor":
		out.UserID = a.ID
	case "session_actor":
		out.SessionID = a.Session
	default:
		out.APIKeyID = a.ID
	}
	return out
}

func versionOut(v MemoryVersion, full bool) storewire.Version {
	out := storewire.Version{Type: storewire.TypeVersion, ID: v.ID, MemoryStoreID: v.StoreID, MemoryID: v.MemoryID, Operation: v.Operation,
		CreatedAt: timeJSON(v.Created), CreatedBy: actorOut(v.By), RedactedAt: optTime(v.Redacted),
		Provenance: &storewire.Provenance{Author: v.By.ID, Provenance: v.By.Provenance}}
	if !v.Redacted.IsZero() {
		out.RedactedBy = actorOut(v.RedactedBy)
		return out
	}
	path := v.Path
	out.Path = &path
	if v.Operation == OpDeleted {
		// A deleted version has no content: content, its hash and its size
		// are null; the version before it records what was deleted.
		return out
	}
	sha, size := v.SHA256, v.Size
	out.ContentSHA256, out.ContentSize = &sha, &size
	if full {
		content := v.Content
		out.Content = &content
	}
	return out
}

func (c *storesCall) listVersions(storeID string) {
	q := c.r.URL.Query()
	full, limit, ok := c.page()
	if !ok {
		return
	}
	from, to, ok := c.timeRange(q.Get("created_at[gte]"), q.Get("created_at[lte]"))
	if !ok {
		return
	}
	op := q.Get("operation")
	if op != "" && op != OpCreated && op != OpModified && op != OpDeleted {
		c.fail(invalid("operation must be created, modified or deleted"))
		return
	}
	after, ok := c.cursor(q.Get("page"))
	if !ok {
		return
	}
	var before int64
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n <= 0 {
			c.fail(invalid("page is not a next_page value this server gave"))
			return
		}
		before = n
	}
	f := VersionFilter{MemoryID: q.Get("memory_id"), Operation: op, ActorID: q.Get("api_key_id"), From: from, To: to,
		BeforeSeq: before, Limit: limit + 1, Content: full}
	f.Session = q.Get("session_id")
	if q.Get("service_account_id") != "" {
		// No service-account actors write here: nothing matches.
		writeJSON(c.w, http.StatusOK, storewire.Page{Data: []any{}})
		return
	}
	vs, err := c.ms.ListVersions(c.r.Context(), c.tenant, storeID, f)
	if err != nil {
		c.fail(err)
		return
	}
	next := ""
	if len(vs) > limit {
		vs = vs[:limit]
		next = encodeCursor(strconv.FormatInt(vs[limit-1].Seq, 10))
	}
	data := make([]storewire.Version, len(vs))
	for i, v := range vs {
		data[i] = versionOut(v, full)
	}
	writeJSON(c.w, http.StatusOK, storewire.Page{Data: data, NextPage: nullable(next)})
}

func (c *storesCall) getVersion(storeID, id string) {
	full, ok := c.view("full")
	if !ok {
		return
	}
	v, err := c.ms.GetVersion(c.r.Context(), c.tenant, storeID, id)
	c.answer(err, func() any { return versionOut(v, full) })
}

func (c *storesCall) redactVersion(storeID, id string) {
	v, err := c.ms.RedactVersion(c.r.Context(), c.tenant, storeID, id, c.actor(), c.now())
	c.answer(err, func() any { return versionOut(v, true) })
}

// storeIndexCache keeps stores' content-free indexes by generation, up to
// a total number of memories; past it, entries are dropped.
type storeIndexCache struct {
	mu    sync.Mutex
	max   int
	total int
	byID  map[string]cachedIndex
}

type cachedIndex struct {
	generation int64
	memories   []Memory
}

func newStoreIndexCache(maxMemories int) *storeIndexCache {
	return &storeIndexCache{max: maxMemories, byID: map[string]cachedIndex{}}
}

func (c *storeIndexCache) get(id string, generation int64) ([]Memory, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	return e.memories, ok && e.generation == generation
}

func (c *storeIndexCache) put(id string, generation int64, memories []Memory) {
	if len(memories) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byID[id]; ok {
		if old.generation > generation {
			return // a newer one is already here
		}
		c.total -= len(old.memories)
	}
	for k, e := range c.byID {
		if c.total+len(memories) <= c.max {
			break
		}
		c.total -= len(e.memories)
		delete(c.byID, k)
	}
	c.byID[id] = cachedIndex{generation: generation, memories: memories}
	c.total += len(memories)
}
