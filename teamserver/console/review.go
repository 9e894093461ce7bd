package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// maxQueue bounds the proposals the review page shows at once, each
// with its differences; the rest wait for the next page load.
const maxQueue = 50

// maxReason is the longest rejection reason the server keeps.
const maxReason = 2000

// reaches reports whether the signed-in token's grant names a review
// target: the server lists a tenant's proposals, the console shows a
// person only those of the repos and stores their token reaches.
func reaches(g teamserver.TokenGrant, t teamserver.Target) bool {
	switch t.Kind {
	case teamserver.TargetRepo:
		return g.Allows(t.Name)
	case teamserver.TargetStore:
		return g.AllowsStore(t.Name)
	}
	return false
}

// pending lists the pending proposals of the targets the token reaches
// (of one target, when only names it: all of its, at most
// MaxPendingProposals wait there), newest first: at most
// MaxPendingProposals, each with its content, so a page view stays
// bounded.
func (c *Console) pending(ctx context.Context, s *session, only ...teamserver.Target) ([]teamserver.Proposal, error) {
	f := teamserver.ProposalFilter{Status: teamserver.ProposalPending, Limit: teamserver.MaxPendingProposals}
	if len(only) > 0 {
		f.Target = only[0]
	}
	all, _, err := c.h.Proposals(ctx, s.grant.Organization, f)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(p teamserver.Proposal) bool { return !reaches(s.grant, p.Target) }), nil
}

type proposalRow struct {
	ID, Key, Op, Author, Door, Session, Origin, Screened string
	Target, TargetURL                                    string
	Created                                              time.Time
	Deletes, New                                         bool
	// Stale says how the key or memory changed since the proposal was
	// made ("" when it did not).
	Stale      string
	Diff       diffView
	ApproveURL string
}

// proposalView is one proposal as the pages show it: what it would
// change, against what its key holds now.
func (c *Console) proposalView(p teamserver.Proposal, cur teamserver.ProposalCurrent, storeNames map[string]string) proposalRow {
	row := proposalRow{ID: p.ID, Key: p.Key, Op: p.Op, Author: p.Author, Door: p.Door, Session: p.Session, Origin: p.Origin,
		Screened: p.Screened, Created: p.Created, New: !cur.Exists,
		Deletes:    p.Op == teamserver.ProposalDelete || p.Op == teamserver.OpDeleted,
		ApproveURL: c.opts.Prefix + "/review/approve?" + url.Values{"id": {p.ID}}.Encode()}
	switch p.Target.Kind {
	case teamserver.TargetRepo:
		row.Target, row.TargetURL = "repo "+p.Target.Name, c.opts.Prefix+"/repos/"+p.Target.Name
	case teamserver.TargetStore:
		name := storeNames[p.Target.Name]
		if name == "" {
			name = p.Target.Name
		}
		row.Target, row.TargetURL = "store "+name, c.opts.Prefix+"/stores/"+p.Target.Name
	}
	if changedSince(p, cur) {
		switch {
		case p.Op == teamserver.OpCreated:
			row.Stale = "A memory was written at this path since the change was proposed: approving fails until that memory moves or is deleted."
		case !cur.Exists:
			row.Stale = "This memory was deleted since the change was proposed: approving writes it again."
		default:
			row.Stale = "This memory changed since the change was proposed: the differences are against its text now, and approving replaces that text."
		}
		if row.Deletes && !cur.Exists {
			row.Stale = "This memory was deleted since the change was proposed."
		}
	}
	proposed := p.Content
	if row.Deletes {
		proposed = ""
	}
	now := p.Key + " (now)"
	if !cur.Exists {
		now = p.Key + " (not there yet)"
	}
	row.Diff = diff(now, p.Key+" (proposed)", cur.Content, proposed)
	return row
}

// changedSince reports whether what a proposal's key or memory holds now
// is not what its author changed: Base is the entry checksum (repos) or
// the content's hex SHA-256 (stores) when it was proposed, "" for
// nothing there.
func changedSince(p teamserver.Proposal, cur teamserver.ProposalCurrent) bool {
	now := ""
	if cur.Exists {
		if p.Target.Kind == teamserver.TargetRepo {
			now = teamwire.EntryChecksum(cur.Content)
		} else {
			sum := sha256.Sum256([]byte(cur.Content))
			now = hex.EncodeToString(sum[:])
		}
	}
	return now != p.Base
}

func (c *Console) storeNames(ctx context.Context, s *session) (map[string]string, error) {
	stores, err := c.h.MemStores(ctx, s.grant)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(stores))
	for _, st := range stores {
		m[st.ID] = st.Name
	}
	return m, nil
}

// review is the queue: the pending proposals of the token's repos and
// stores, each beside what it would change.
func (c *Console) review(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	ps, err := c.pending(ctx, s)
	if err != nil {
		c.reviewFail(w, r, s, err)
		return
	}
	names, err := c.storeNames(ctx, s)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	waiting := len(ps)
	// ?repo= or ?store= narrows the queue to one repo or store, read on
	// its own (the organization's first page may not hold it).
	var only string
	if q := r.URL.Query(); q.Get("repo") != "" || q.Get("store") != "" {
		t := teamserver.Target{Kind: teamserver.TargetRepo, Name: q.Get("repo")}
		only = "repo " + t.Name
		if t.Name == "" {
			t = teamserver.Target{Kind: teamserver.TargetStore, Name: q.Get("store")}
			only = "store " + t.Name
			if n := names[t.Name]; n != "" {
				only = "store " + n
			}
		}
		if ps, err = c.pending(ctx, s, t); err != nil {
			c.reviewFail(w, r, s, err)
			return
		}
	}
	total := len(ps)
	// ?page=N shows the Nth maxQueue of the queue, newest first.
	pg := pageOf(r.URL.Query(), total, maxQueue)
	ps = ps[pg.first:pg.last]
	pageURL := func(n int) string {
		q := url.Values{}
		for _, k := range []string{"repo", "store"} {
			if v := r.URL.Query().Get(k); v != "" {
				q.Set(k, v)
			}
		}
		return pageLink(c.opts.Prefix+"/review", q, n)
	}
	rows := make([]proposalRow, 0, len(ps))
	// A repo's current entries are read once for all its proposals; a
	// store's memory is looked up per proposal.
	repoNow := map[string]map[string]string{}
	for _, p := range ps {
		var cur teamserver.ProposalCurrent
		if p.Target.Kind == teamserver.TargetRepo {
			entries, ok := repoNow[p.Target.Name]
			if !ok {
				src := &repoSource{c: c, r: r, s: s, repo: p.Target.Name}
				var data teamwire.TeamMemoryData
				err := src.get0(ctx, url.Values{}, &data)
				var ae *refusal
				if err != nil && !(errors.As(err, &ae) && ae.Status == http.StatusNotFound) {
					c.apiFail(w, r, s, err)
					return
				}
				entries = data.Content.Entries
				repoNow[p.Target.Name] = entries
			}
			cur.Content, cur.Exists = entries[p.Key]
		} else {
			var err error
			p, cur, err = c.h.Proposal(ctx, s.grant.Organization, p.ID)
			if errors.Is(err, teamserver.ErrNoProposal) {
				continue // dropped meanwhile
			}
			if err != nil {
				c.reviewFail(w, r, s, err)
				return
			}
			if p.Status != teamserver.ProposalPending {
				continue // decided meanwhile
			}
		}
		rows = append(rows, c.proposalView(p, cur, names))
	}
	data := map[string]any{"Rows": rows, "Waiting": waiting, "Total": total, "Action": c.opts.Prefix + "/review", "Only": only,
		"From": pg.first + 1, "To": pg.last, "Paged": pg.pages > 1}
	pg.link(data, "Newer", "Older", pageURL)
	q := r.URL.Query()
	count, _ := strconv.Atoi(q.Get("count"))
	switch {
	case count > 0 && q.Get("done") == "approved":
		data["Done"] = strconv.Itoa(count) + " changes were approved and written: clients receive them with their next sync."
	case count > 0 && q.Get("done") == "rejected":
		data["Done"] = strconv.Itoa(count) + " changes were rejected. They are never served; their authors' clients report the reason."
	case q.Get("done") == "approved":
		data["Done"] = "The change to " + q.Get("key") + " was approved and written: clients receive it with their next sync."
	case q.Get("done") == "rejected":
		data["Done"] = "The change to " + q.Get("key") + " was rejected. It is never served; its author's client reports the reason."
	}
	c.page(w, r, s, http.StatusOK, "review", data)
}

// proposalFor reads one pending proposal the token reaches.
func (c *Console) proposalFor(ctx context.Context, s *session, id string) (teamserver.Proposal, teamserver.ProposalCurrent, error) {
	p, cur, err := c.h.Proposal(ctx, s.grant.Organization, id)
	if err != nil {
		return p, cur, err
	}
	if !reaches(s.grant, p.Target) {
		// The same answer as for a proposal that does not exist.
		return teamserver.Proposal{}, teamserver.ProposalCurrent{}, teamserver.ErrNoProposal
	}
	if p.Status != teamserver.ProposalPending {
		return p, cur, teamserver.ErrProposalDecided
	}
	return p, cur, nil
}

// chosenProposals reads the pending proposals a form named (one or
// more, at most maxQueue), each one the token reaches.
func (c *Console) chosenProposals(ctx context.Context, s *session, ids []string) ([]teamserver.Proposal, []teamserver.ProposalCurrent, error) {
	ids = chosenKeys(ids)
	if len(ids) == 0 || len(ids) > maxQueue {
		return nil, nil, errNoChoice
	}
	ps := make([]teamserver.Proposal, 0, len(ids))
	curs := make([]teamserver.ProposalCurrent, 0, len(ids))
	for _, id := range ids {
		p, cur, err := c.proposalFor(ctx, s, id)
		if err != nil {
			return nil, nil, err
		}
		ps, curs = append(ps, p), append(curs, cur)
	}
	return ps, curs, nil
}

// errNoChoice: a bulk form named no proposal, or too many.
var errNoChoice = errors.New("console: no proposal chosen")

// decideConfirm shows the changes an approval or a rejection decides.
func (c *Console) decideConfirm(w http.ResponseWriter, r *http.Request, s *session, page string) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	ps, curs, err := c.chosenProposals(ctx, s, r.URL.Query()["id"])
	if err != nil {
		c.reviewFail(w, r, s, err)
		return
	}
	names, err := c.storeNames(ctx, s)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	rows := make([]proposalRow, len(ps))
	for i := range ps {
		rows[i] = c.proposalView(ps[i], curs[i], names)
	}
	c.page(w, r, s, http.StatusOK, page, map[string]any{"Ps": rows,
		"Action": c.opts.Prefix + "/review/" + page, "Back": c.opts.Prefix + "/review"})
}

func (c *Console) approveConfirm(w http.ResponseWriter, r *http.Request, s *session) {
	c.decideConfirm(w, r, s, "approve")
}

func (c *Console) rejectConfirm(w http.ResponseWriter, r *http.Request, s *session) {
	c.decideConfirm(w, r, s, "reject")
}

// decide approves or rejects every proposal the form names, in its
// order; one that cannot be decided stops the rest, and the page says
// how many were decided before it.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *session, approve bool, reason string) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, s, http.StatusBadRequest, "The form could not be read. Go back and decide again.")
		return
	}
	ps, _, err := c.chosenProposals(ctx, s, r.PostForm["id"])
	if err != nil {
		c.reviewFail(w, r, s, err)
		return
	}
	for i, p := range ps {
		if approve {
			_, err = c.h.Approve(ctx, s.grant.Organization, p.ID, s.grant.Author())
		} else {
			_, err = c.h.Reject(ctx, s.grant.Organization, p.ID, s.grant.Author(), reason)
		}
		if err != nil {
			if i > 0 {
				err = &partlyDone{done: i, of: len(ps), key: p.Key, did: "decided", err: err}
			}
			c.reviewFail(w, r, s, err)
			return
		}
		c.log.Info("console: a proposal was decided", "tenant", s.grant.Organization, "who", s.grant.Author(), "target", p.Target.Kind, "proposal", p.ID, "approved", approve)
		if approve && p.Target.Kind == teamserver.TargetRepo {
			// The memory's index line comes with it (or goes), so no
			// teammate's MEMORY.md is left short of it or pointing to
			// nothing whatever becomes of the author's own index change.
			src := &repoSource{c: c, r: r, s: s, repo: p.Target.Name}
			err := src.indexFollows(ctx, p.Key)
			if err != nil { // once more: a teammate may have written the repo just then
				err = src.indexFollows(ctx, p.Key)
			}
			if err != nil {
				c.log.Warn("console: the index could not follow an approval", "repo", p.Target.Name, "error", err)
			}
		}
	}
	done := "rejected"
	if approve {
		done = "approved"
	}
	q := url.Values{"done": {done}, "key": {ps[0].Key}}
	if len(ps) > 1 {
		q = url.Values{"done": {done}, "count": {strconv.Itoa(len(ps))}}
	}
	http.Redirect(w, r, c.opts.Prefix+"/review?"+q.Encode(), http.StatusSeeOther)
}

func (c *Console) approve(w http.ResponseWriter, r *http.Request, s *session) {
	c.decide(w, r, s, true, "")
}

func (c *Console) reject(w http.ResponseWriter, r *http.Request, s *session) {
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" || len(reason) > maxReason || !utf8.ValidString(reason) {
		c.fail(w, r, s, http.StatusBadRequest, "A rejection needs a reason (up to 2,000 bytes): its author's client shows it. Go back, write one, and reject again.")
		return
	}
	c.decide(w, r, s, false, reason)
}

// policyWords say what each review policy does, as the confirmation
// page shows it.
var policyWords = map[string]string{
	teamserver.PolicyOpen:     "every token's writes are written at once",
	teamserver.PolicyReview:   "an agent's writes wait here until a person approves them; a person's are written at once",
	teamserver.PolicyReadOnly: "nobody writes, an approval included; clients still read",
}

// policyChoice checks a policy form: a repo or store the token reaches
// and a policy there is (false: answered).
func (c *Console) policyChoice(w http.ResponseWriter, r *http.Request, s *session, kind, name, policy string) (teamserver.Target, string, bool) {
	t := teamserver.Target{Kind: kind, Name: name}
	if (t.Kind == teamserver.TargetRepo && !teamserver.ValidRepoSlug(t.Name)) || !reaches(s.grant, t) {
		c.fail(w, r, s, http.StatusNotFound, "Your token reaches no repo or store of that name.")
		return t, "", false
	}
	if !teamserver.ValidPolicy(policy) {
		c.fail(w, r, s, http.StatusBadRequest, "A policy is open, review or read-only. Choose one of them.")
		return t, "", false
	}
	return t, policy, true
}

// policyConfirm shows what a policy change does before it is made.
func (c *Console) policyConfirm(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	q := r.URL.Query()
	t, policy, ok := c.policyChoice(w, r, s, q.Get("kind"), q.Get("name"), q.Get("policy"))
	if !ok {
		return
	}
	cur, err := c.h.Policy(ctx, s.grant.Organization, t)
	if err != nil {
		c.reviewFail(w, r, s, err)
		return
	}
	label := t.Name
	if t.Kind == teamserver.TargetStore {
		if names, err := c.storeNames(ctx, s); err == nil && names[t.Name] != "" {
			label = names[t.Name]
		}
	}
	c.page(w, r, s, http.StatusOK, "setpolicy", map[string]any{"Kind": t.Kind, "Name": t.Name, "Label": label, "Policy": policy, "Current": cur,
		"Does": policyWords[policy], "Did": policyWords[cur], "Action": c.opts.Prefix + "/policy", "Back": c.opts.Prefix + "/"})
}

// setPolicy sets the review policy of a repo or store the token reaches.
func (c *Console) setPolicy(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	t, policy, ok := c.policyChoice(w, r, s, r.PostFormValue("kind"), r.PostFormValue("name"), r.PostFormValue("policy"))
	if !ok {
		return
	}
	if err := c.h.SetPolicy(ctx, s.grant.Organization, t, policy, s.grant.Author()); err != nil {
		c.reviewFail(w, r, s, err)
		return
	}
	c.log.Info("console: a review policy was set", "tenant", s.grant.Organization, "who", s.grant.Author(), "target", t.Kind, "policy", policy)
	http.Redirect(w, r, c.opts.Prefix+"/?"+url.Values{"done": {"policy"}, "name": {t.Name}, "policy": {policy}}.Encode(), http.StatusSeeOther)
}

// reviewFail shows what went wrong with a review action.
// An approval whose write the store refuses leaves the proposal pending
// (Handler.Approve reopens it); the page says why.
func (c *Console) reviewFail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var partly *partlyDone
	if errors.As(err, &partly) {
		// Say what was done before what could not be.
		_, why := reviewMessage(partly.err)
		c.fail(w, r, s, http.StatusConflict, fmt.Sprintf("%d of %d changes were decided before %s, which was not: %s Reload the review queue to see what still waits.",
			partly.done, partly.of, partly.key, why))
		return
	}
	if errors.Is(err, errNoChoice) {
		c.fail(w, r, s, http.StatusBadRequest, "No change was chosen, or more than 50. Go back, tick the changes to decide, and press the button again.")
		return
	}
	status, msg := reviewMessage(err)
	if status == http.StatusInternalServerError {
		c.log.Error("console: a review action failed", "path", r.URL.Path, "error", err)
	}
	c.fail(w, r, s, status, msg)
}

// reviewMessage is the status and the words for a review action that
// failed.
func reviewMessage(err error) (int, string) {
	var api *teamserver.APIError
	var conflict *teamserver.KeyConflictError
	var tooMany *teamserver.TooManyEntriesError
	switch {
	case errors.As(err, &api):
		return api.Status, "The store refused the change: " + api.Message + ". The proposal still waits; reject it, or approve it once the store can take it."
	case errors.As(err, &conflict):
		return http.StatusConflict, "The key cannot exist beside another key of the repo now. The proposal still waits; reject it, or approve it once the other key is gone."
	case errors.As(err, &tooMany):
		return http.StatusRequestEntityTooLarge, "The repo would hold more memories than the server allows. The proposal still waits; delete some memories first, or reject it."
	case errors.Is(err, teamserver.ErrTooManyRepos):
		return http.StatusForbidden, "The organization holds as many repos as the server allows. The proposal still waits."
	case errors.Is(err, teamserver.ErrNoProposal):
		return http.StatusNotFound, "No such proposal waits in a repo or store your token reaches."
	case errors.Is(err, teamserver.ErrProposalDecided):
		return http.StatusConflict, "This proposal was already decided (approved, rejected, or replaced by a newer change of its author). Reload the review queue."
	case errors.Is(err, teamserver.ErrReadOnly):
		return http.StatusForbidden, "This repo or store is read-only (its review policy): nobody writes, an approval included. The proposal still waits; set the policy to review to approve it."
	case errors.Is(err, teamserver.ErrNoReview):
		return http.StatusNotImplemented, "This server's store keeps no review policies: every repo and store is open."
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "The server took too long to answer. Try again."
	default:
		return http.StatusInternalServerError, "The server could not complete the review action; nothing was decided and the proposal still waits. Try again; if it persists, see the server's log."
	}
}
