package teamserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// requestProvenance reads a request's provenance headers. The doors of
// the server's own faces (teamwire.DoorReview, DoorConsole) are taken
// only from a request made in the server's process (InProcess): sent by
// a client over the network they are recorded as teamwire.DoorHTTP, so a
// bot's write never shows as a review or a person's console edit.
func requestProvenance(r *http.Request) (teamwire.Provenance, error) {
	p, err := teamwire.ParseProvenance(r.Header.Get(teamwire.DoorHeader), r.Header.Get(teamwire.SessionHeader), r.Header.Get(teamwire.OriginHeader))
	if (p.Door == teamwire.DoorReview || p.Door == teamwire.DoorConsole) && r.Context().Value(inProcessKey{}) == nil {
		p.Door = teamwire.DoorHTTP
	}
	return p, err
}

type inProcessKey struct{}

// InProcess marks a request's context as made by code in the server's
// own process (the web console calling the Handler directly), whose
// provenance headers may name the server's own doors.
func InProcess(ctx context.Context) context.Context {
	return context.WithValue(ctx, inProcessKey{}, true)
}

// ErrReadOnly refuses a write to a target whose policy is read-only.
var ErrReadOnly = errors.New("server: the review policy makes this read-only")

// reviews returns the store's review data, or nil.
func (h *Handler) reviews() Reviews {
	r, _ := h.team.(Reviews)
	return r
}

// Policy returns the review policy of a repo or store of tenant
// (PolicyOpen on a store without Reviews).
func (h *Handler) Policy(ctx context.Context, tenant string, t Target) (string, error) {
	rv := h.reviews()
	if rv == nil {
		return PolicyOpen, nil
	}
	return rv.Policy(ctx, tenant, t)
}

// SetPolicy sets the review policy of a repo or store of tenant; by
// names who set it. The caller must have checked that by is a person
// allowed to (the HTTP endpoint asks for a person's token).
func (h *Handler) SetPolicy(ctx context.Context, tenant string, t Target, policy, by string) error {
	rv := h.reviews()
	if rv == nil {
		return ErrNoReview
	}
	return rv.SetPolicy(ctx, tenant, t, policy, by, h.cfg.Now())
}

// Proposals lists a tenant's proposals, newest first, and counts all
// that f matches (the page's Limit and Offset aside).
func (h *Handler) Proposals(ctx context.Context, tenant string, f ProposalFilter) ([]Proposal, int, error) {
	rv := h.reviews()
	if rv == nil {
		return nil, 0, nil
	}
	total, err := rv.CountProposals(ctx, tenant, f)
	if err != nil {
		return nil, 0, err
	}
	ps, err := rv.Proposals(ctx, tenant, f)
	return ps, total, err
}

// ProposalCurrent is what a proposal's key (or memory) holds now.
type ProposalCurrent struct {
	Exists  bool
	Content string
}

// Proposal returns one proposal of tenant with what its key (a repo
// entry, or the store's memory) holds now, to diff against.
func (h *Handler) Proposal(ctx context.Context, tenant, id string) (Proposal, ProposalCurrent, error) {
	rv := h.reviews()
	if rv == nil {
		return Proposal{}, ProposalCurrent{}, ErrNoProposal
	}
	p, err := rv.Proposal(ctx, tenant, id)
	if err != nil {
		return Proposal{}, ProposalCurrent{}, err
	}
	var cur ProposalCurrent
	switch p.Target.Kind {
	case TargetRepo:
		snap, err := h.team.Get(ctx, Repo{Tenant: tenant, Name: p.Target.Name}, true)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return p, cur, err
		}
		cur.Content, cur.Exists = snap.Entries[p.Key]
	case TargetStore:
		ms, ok := h.stores, h.stores != nil
		if !ok {
			return p, cur, nil
		}
		id := p.MemoryID
		if id == "" {
			// A creation: whatever now holds its path.
			_ = ms.EachMemory(ctx, tenant, p.Target.Name, false, func(MemStore) error { return nil }, func(m Memory) error {
				if m.Path == p.Key {
					id = m.ID
				}
				return nil
			})
		}
		if id != "" {
			m, err := ms.GetMemory(ctx, tenant, p.Target.Name, id)
			var api *APIError
			if err != nil && !(errors.As(err, &api) && api.Status == http.StatusNotFound) {
				return p, cur, err
			}
			cur.Exists, cur.Content = err == nil, m.Content
		}
	}
	return p, cur, nil
}

// Approve writes a pending proposal as its author asked, recorded with
// its author, door, session and origin and with reviewer as the
// Reviewer. It first claims the proposal (pending → approved, so a
// concurrent rejection or approval finds it decided and writes nothing),
// then writes; a write the store refuses (a path taken since, a limit)
// makes it pending again and returns the store's error. The caller must
// have checked that reviewer is a person allowed to review the
// proposal's target (the HTTP endpoint asks for a person's token).
func (h *Handler) Approve(ctx context.Context, tenant, id, reviewer string) (Proposal, error) {
	rv := h.reviews()
	if rv == nil {
		return Proposal{}, ErrNoProposal
	}
	// Under read-only nobody writes, an approval included: the proposal
	// stays pending until a person changes the policy.
	pending, err := rv.Proposal(ctx, tenant, id)
	if err != nil {
		return pending, err
	}
	if pol, err := rv.Policy(ctx, tenant, pending.Target); err != nil {
		return pending, err
	} else if pol == PolicyReadOnly {
		return pending, ErrReadOnly
	}
	now := h.cfg.Now()
	p, err := rv.Decide(ctx, tenant, id, ProposalApproved, reviewer, "", now)
	if err != nil {
		return p, err
	}
	if err := h.apply(ctx, tenant, p, reviewer, now); err != nil {
		// Reopened with a context of its own: the request's may be
		// what ended the write.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.StoreTimeout)
		defer cancel()
		if rerr := rv.Reopen(rctx, tenant, id); rerr != nil {
			h.log.Error("review: an approved proposal whose write failed could not be reopened", "id", id, "error", rerr)
		}
		p.Status, p.DecidedBy, p.Decided = ProposalPending, "", time.Time{}
		return p, err
	}
	return p, nil
}

// apply writes an approved proposal.
func (h *Handler) apply(ctx context.Context, tenant string, p Proposal, reviewer string, now time.Time) error {
	prov := p.Provenance
	prov.Reviewer = reviewer
	switch p.Target.Kind {
	case TargetRepo:
		repo := Repo{Tenant: tenant, Name: p.Target.Name}
		req := PutRequest{MaxEntries: h.cfg.MaxEntries, MaxRepos: h.cfg.MaxRepos, Retention: h.cfg.Retention,
			Author: p.Author, Provenance: prov, Now: now}
		if p.Op == ProposalDelete {
			req.Deletes = []string{p.Key}
		} else {
			req.Entries = map[string]string{p.Key: withoutCredentials(p.Content)}
		}
		if _, err := h.team.Put(ctx, repo, req); err != nil {
			return err
		}
		h.hashes.forget(repo)
		h.changes.notify(repo)
	case TargetStore:
		ms, ok := h.stores, h.stores != nil
		if !ok {
			return ErrNoReview
		}
		by := Actor{Type: "api_actor", ID: p.Author, Provenance: prov}
		if p.Session != "" {
			by.Type = "session_actor"
		}
		content := withoutCredentials(p.Content)
		var err error
		switch p.Op {
		case OpCreated:
			_, err = ms.CreateMemory(ctx, tenant, p.Target.Name, MemoryWrite{Path: p.Key, Content: &content, By: by}, h.cfg.StoreLimits, now)
		case OpModified:
			_, err = ms.UpdateMemory(ctx, tenant, p.Target.Name, p.MemoryID, MemoryWrite{Path: p.Key, Content: &content, By: by}, h.cfg.StoreLimits, now)
		case OpDeleted:
			err = ms.DeleteMemory(ctx, tenant, p.Target.Name, p.MemoryID, "", by, now)
		}
		return err
	}
	return nil
}

// Reject marks a pending proposal rejected with its reason; it is kept,
// and never written. The caller must have checked that reviewer is a
// person allowed to review its target.
func (h *Handler) Reject(ctx context.Context, tenant, id, reviewer, reason string) (Proposal, error) {
	rv := h.reviews()
	if rv == nil {
		return Proposal{}, ErrNoProposal
	}
	return rv.Decide(ctx, tenant, id, ProposalRejected, reviewer, reason, h.cfg.Now())
}

// gate applies a target's policy to a write by grant with provenance
// prov: nil to write it, ErrReadOnly to refuse it, or errPropose to keep
// it as a proposal (see needsReview).
func (h *Handler) gate(ctx context.Context, tenant string, t Target, grant TokenGrant, prov teamwire.Provenance) error {
	policy, err := h.Policy(ctx, tenant, t)
	if err != nil {
		return err
	}
	switch {
	case policy == PolicyReadOnly:
		return ErrReadOnly
	case policy == PolicyReview && needsReview(grant, prov):
		return errPropose
	}
	return nil
}

// needsReview reports whether a write waits for a person under the
// policy "review": an agent's token's always, and a person's token's too
// when its client says the content came from untrusted input
// (teamwire.UntrustedOrigin: a tool's output or fetched content), since a
// person's session that read a web page writes what the page said.
func needsReview(grant TokenGrant, prov teamwire.Provenance) bool {
	return !grant.IsPerson() || teamwire.UntrustedOrigin(prov.Origin)
}

var errPropose = errors.New("server: the write is kept for review")

// proposeTeam keeps a team PUT by an agent's token under review: each
// key it would change becomes a proposal; the repo is not changed. The
// answer is 202 with the repo's unchanged checksum and the keys in
// review.
func (h *Handler) proposeTeam(w http.ResponseWriter, r *http.Request, repo Repo, grant TokenGrant, prov teamwire.Provenance, in teamwire.PutBody, screened map[string]string) {
	ctx := r.Context()
	cur, err := h.team.Get(ctx, repo, false)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		h.storeError(w, err)
		return
	}
	if ifMatch := unquote(r.Header.Get("If-Match")); ifMatch != "" && (!exists || ifMatch != cur.Checksum) {
		writeError(w, http.StatusPreconditionFailed, "conflict_error", teamwire.CodeConflict, "the repo changed since you read it; fetch the hashes and retry")
		return
	}
	rv := h.reviews()
	base := Proposal{Tenant: repo.Tenant, Target: Target{Kind: TargetRepo, Name: repo.Name}, Author: grant.author(),
		TokenSHA256: grant.TokenSHA256, Provenance: prov, Created: h.cfg.Now()}
	var keys, rejected []string
	reasons := map[string]string{}
	var ps []Proposal
	for _, k := range entryKeys(in.Entries) {
		if sum, ok := cur.Checksums[k]; ok && sum == teamwire.EntryChecksum(in.Entries[k]) {
			continue
		}
		p := base
		p.Key, p.Op, p.Content, p.Base, p.Screened = k, ProposalPut, in.Entries[k], cur.Checksums[k], screened[k]
		ps = append(ps, p)
	}
	for _, k := range in.SoftDeleteKeys {
		sum, live := cur.Checksums[k]
		if !live {
			continue
		}
		p := base
		p.Key, p.Op, p.Base = k, ProposalDelete, sum
		ps = append(ps, p)
	}
	for _, p := range h.judge(ctx, ps) {
		got, err := rv.Propose(ctx, p)
		if err != nil {
			h.reviewError(w, err)
			return
		}
		if got.Status == ProposalRejected {
			rejected = append(rejected, p.Key)
			reasons[p.Key] = got.Reason
		} else {
			keys = append(keys, p.Key)
		}
	}
	checksum := cur.Checksum
	if checksum == "" {
		checksum = teamwire.RepoChecksum(nil)
	}
	status := http.StatusOK
	if len(keys)+len(rejected) > 0 {
		status = http.StatusAccepted
		h.log.Info("team memory write kept for review", "repo", repo.Name, "tenant", repo.Tenant, "keys", len(keys), "author", grant.author(), "door", prov.Door)
	}
	w.Header().Set("ETag", `"`+checksum+`"`)
	writeJSON(w, status, teamwire.PutResult{Checksum: checksum, LastModified: cur.LastModified.UTC().Format(time.RFC3339Nano), Version: cur.Version, InReview: keys, Rejected: rejected, RejectedReasons: reasons})
}

// reviewError answers a review failure with its code.
func (h *Handler) reviewError(w http.ResponseWriter, err error) {
	var api *APIError
	var conflict *KeyConflictError
	var tooMany *TooManyEntriesError
	switch {
	case errors.Is(err, ErrNoProposal), errors.Is(err, ErrNoReview):
		writeError(w, http.StatusNotFound, "not_found_error", teamwire.CodeNoProposal, "no such proposal for this token (or the server keeps no review data)")
	case errors.Is(err, ErrProposalDecided):
		writeError(w, http.StatusConflict, "conflict_error", teamwire.CodeProposalDecided, "the proposal was already approved, rejected or superseded")
	case errors.Is(err, ErrTooManyProposals):
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", teamwire.CodeTooManyProposals,
			"this repo or store holds "+strconv.Itoa(MaxPendingProposals)+" proposals waiting for review; a person must approve or reject some first; nothing was kept")
	case errors.Is(err, ErrReadOnly):
		writeError(w, http.StatusForbidden, "permission_error", teamwire.CodeReadOnly, "this repo or store is read-only (its review policy); nothing was written")
	case errors.As(err, &api):
		writeError(w, api.Status, api.Type, api.Code, api.Message+" (the proposal stays pending)")
	case errors.As(err, &conflict):
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeKeyConflict, "the key cannot exist beside another key now (the proposal stays pending)")
	case errors.As(err, &tooMany):
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", teamwire.CodeTooManyEntries, "the repo would hold more entries than its limit (the proposal stays pending)")
	case errors.Is(err, ErrTooManyRepos):
		writeError(w, http.StatusForbidden, "permission_error", teamwire.CodeTooManyRepos, "the organization holds as many repos as the server allows (the proposal stays pending)")
	default:
		h.storeError(w, err)
	}
}

type reviewCall struct {
	h     *Handler
	w     http.ResponseWriter
	r     *http.Request
	grant TokenGrant
}

// mayReach reports whether the token reaches a target: a repo its
// grant covers, or a store of its organization it may use.
func (c *reviewCall) mayReach(t Target) bool {
	switch t.Kind {
	case TargetRepo:
		return c.grant.allows(t.Name)
	case TargetStore:
		if !slices.Contains(c.grant.Stores, "*") && !slices.Contains(c.grant.Stores, t.Name) {
			return false
		}
		ms, ok := c.h.stores, c.h.stores != nil
		if !ok {
			return false
		}
		_, err := ms.GetMemStore(c.r.Context(), c.grant.Organization, t.Name)
		return err == nil
	}
	return false
}

// target reads ?repo= or ?store= and checks that the token reaches it
// (false: answered).
func (c *reviewCall) target() (Target, bool) {
	q := c.r.URL.Query()
	repo, store := q.Get("repo"), q.Get("store")
	var t Target
	switch {
	case repo != "" && store == "":
		if !ValidRepoSlug(repo) {
			writeError(c.w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidRepo, "repo must be owner/name")
			return t, false
		}
		t = Target{Kind: TargetRepo, Name: repo}
	case store != "" && repo == "":
		if !strings.HasPrefix(store, StoreIDPrefix) || len(store) > 64 || !utf8.ValidString(store) {
			writeError(c.w, http.StatusBadRequest, "invalid_request_error", "invalid_store", "store must be a store ID ("+StoreIDPrefix+"...)")
			return t, false
		}
		t = Target{Kind: TargetStore, Name: store}
	default:
		writeError(c.w, http.StatusBadRequest, "invalid_request_error", "invalid_target", "name exactly one of repo=owner/name or store=ID")
		return t, false
	}
	if !c.mayReach(t) {
		writeError(c.w, http.StatusForbidden, "permission_error", teamwire.CodeForbidden, "this token may not use that "+t.Kind)
		return t, false
	}
	return t, true
}

// person answers 403 unless the token is a person's.
func (c *reviewCall) person(what string) bool {
	if c.grant.IsPerson() {
		return true
	}
	writeError(c.w, http.StatusForbidden, "permission_error", teamwire.CodeNotPerson,
		"only a person's token may "+what+`; this token is an agent's (a grant without "kind": "person"); issue one with agentmem team token --kind person`)
	return false
}

func (c *reviewCall) getPolicy() {
	t, ok := c.target()
	if !ok {
		return
	}
	p, err := c.h.Policy(c.r.Context(), c.grant.Organization, t)
	if err != nil {
		c.h.storeError(c.w, err)
		return
	}
	writeJSON(c.w, http.StatusOK, teamwire.PolicyView{Kind: t.Kind, Target: t.Name, Policy: p})
}

func (c *reviewCall) setPolicy() {
	t, ok := c.target()
	if !ok || !c.person("change a review policy") {
		return
	}
	var in struct {
		Policy string `json:"policy"`
	}
	if !c.decode(&in) {
		return
	}
	if !ValidPolicy(in.Policy) {
		writeError(c.w, http.StatusBadRequest, "invalid_request_error", "invalid_policy", "policy must be open, review or read-only")
		return
	}
	if err := c.h.SetPolicy(c.r.Context(), c.grant.Organization, t, in.Policy, c.grant.author()); err != nil {
		c.h.storeError(c.w, err)
		return
	}
	c.h.log.Info("review policy set", "tenant", c.grant.Organization, "kind", t.Kind, "target", t.Name, "policy", in.Policy, "by", c.grant.author())
	writeJSON(c.w, http.StatusOK, teamwire.PolicyView{Kind: t.Kind, Target: t.Name, Policy: in.Policy})
}

// decode reads a small JSON body.
func (c *reviewCall) decode(v any) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, 64<<10))
	if err == nil {
		err = synctext.CheckJSONShape(raw)
	}
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields() // a field the call does not take is refused, not ignored
		err = dec.Decode(v)
	}
	if err != nil {
		writeError(c.w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeMalformedJSON, "the request body is not the JSON this call takes ("+strings.TrimPrefix(err.Error(), "json: ")+")")
		return false
	}
	return true
}

func proposalOut(p Proposal, withContent bool) teamwire.ProposalView {
	out := teamwire.ProposalView{ID: p.ID, Kind: p.Target.Kind, Target: p.Target.Name, Key: p.Key, MemoryID: p.MemoryID, Op: p.Op,
		Author: p.Author, Created: p.Created.UTC().Format(time.RFC3339Nano), Status: p.Status, DecidedBy: p.DecidedBy,
		Reason: p.Reason, Screened: p.Screened, Provenance: p.Provenance}
	if !p.Decided.IsZero() {
		out.Decided = p.Decided.UTC().Format(time.RFC3339Nano)
	}
	if withContent {
		content := withoutCredentials(p.Content)
		out.Content = &content
	}
	return out
}

// visible reports whether the token may see a proposal: a person's
// token that reaches its target, or its author's token.
func (c *reviewCall) visible(p Proposal) bool {
	return p.TokenSHA256 == c.grant.TokenSHA256 || (c.grant.IsPerson() && c.mayReach(p.Target))
}

func (c *reviewCall) list() {
	t, ok := c.target()
	if !ok {
		return
	}
	status := c.r.URL.Query().Get("status")
	switch status {
	case "":
		status = ProposalPending
	case "all":
		status = ""
	case ProposalPending, ProposalApproved, ProposalRejected, ProposalSuperseded:
	default:
		writeError(c.w, http.StatusBadRequest, "invalid_request_error", "invalid_status", "status must be pending, approved, rejected, superseded or all")
		return
	}
	f := ProposalFilter{Target: t, Status: status, Limit: teamwire.DefaultProposalPage}
	for name, into := range map[string]*int{"limit": &f.Limit, "offset": &f.Offset} {
		if v := c.r.URL.Query().Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (name == "limit" && (n < 1 || n > teamwire.MaxProposalPage)) {
				writeError(c.w, http.StatusBadRequest, "invalid_request_error", "invalid_page",
					"limit must be 1 to "+strconv.Itoa(teamwire.MaxProposalPage)+" and offset 0 or more")
				return
			}
			*into = n
		}
	}
	if !c.grant.IsPerson() {
		f.TokenSHA256 = c.grant.TokenSHA256 // an agent sees its own
	}
	ps, total, err := c.h.Proposals(c.r.Context(), c.grant.Organization, f)
	if err != nil {
		c.h.storeError(c.w, err)
		return
	}
	out := teamwire.ProposalList{Proposals: []teamwire.ProposalView{}, Total: total, Offset: f.Offset}
	for _, p := range ps {
		out.Proposals = append(out.Proposals, proposalOut(p, false))
	}
	if next := f.Offset + len(ps); next < total {
		out.NextOffset = &next
	}
	writeJSON(c.w, http.StatusOK, out)
}

// proposal finds a proposal the token may see (false: answered 404).
func (c *reviewCall) proposal(id string) (Proposal, bool) {
	if !strings.HasPrefix(id, proposalIDPrefix) || len(id) > 64 {
		c.h.reviewError(c.w, ErrNoProposal)
		return Proposal{}, false
	}
	p, err := c.h.reviews().Proposal(c.r.Context(), c.grant.Organization, id)
	if err == nil && !c.visible(p) {
		err = ErrNoProposal // the same answer as none: nothing leaks
	}
	if err != nil {
		c.h.reviewError(c.w, err)
		return Proposal{}, false
	}
	return p, true
}

func (c *reviewCall) show(id string) {
	if _, ok := c.proposal(id); !ok {
		return
	}
	p, cur, err := c.h.Proposal(c.r.Context(), c.grant.Organization, id)
	if err != nil {
		c.h.reviewError(c.w, err)
		return
	}
	writeJSON(c.w, http.StatusOK, teamwire.ProposalDetail{Proposal: proposalOut(p, true), Current: teamwire.CurrentView{Exists: cur.Exists, Content: cur.Content}})
}

func (c *reviewCall) decide(id string, approve bool) {
	p, ok := c.proposal(id)
	if !ok {
		return
	}
	if !c.person("approve or reject a proposal") || !c.mayReach(p.Target) {
		if c.grant.IsPerson() {
			c.h.reviewError(c.w, ErrNoProposal)
		}
		return
	}
	var err error
	if approve {
		p, err = c.h.Approve(c.r.Context(), c.grant.Organization, id, c.grant.author())
	} else {
		var in teamwire.RejectBody
		if !c.decode(&in) {
			return
		}
		if strings.TrimSpace(in.Reason) == "" || len(in.Reason) > teamwire.MaxReasonLength || !utf8.ValidString(in.Reason) {
			writeError(c.w, http.StatusBadRequest, "invalid_request_error", "invalid_reason", "a rejection needs a reason: 1 to 2000 bytes of UTF-8 text")
			return
		}
		p, err = c.h.Reject(c.r.Context(), c.grant.Organization, id, c.grant.author(), in.Reason)
	}
	if err != nil {
		c.h.reviewError(c.w, err)
		return
	}
	c.h.log.Info("proposal decided", "tenant", c.grant.Organization, "id", p.ID, "status", p.Status, "by", c.grant.author())
	writeJSON(c.w, http.StatusOK, proposalOut(p, false))
}
