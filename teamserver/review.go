package teamserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// Review policies of a repo or a store.
const (
	// PolicyOpen: every token's writes are stored at once (the default).
	PolicyOpen = "open"
	// PolicyReview: a write by an agent's token is kept as a Proposal,
	// served to nobody but reviewers (person tokens) and its author until
	// a person approves it; a person's write is stored at once.
	PolicyReview = "review"
	// PolicyReadOnly: every write is refused (403 teamwire.CodeReadOnly).
	PolicyReadOnly = "read-only"
)

// ValidPolicy reports whether p is one of the policies.
func ValidPolicy(p string) bool {
	return p == PolicyOpen || p == PolicyReview || p == PolicyReadOnly
}

// What a review target is.
const (
	TargetRepo  = "repo"
	TargetStore = "store"
)

// Target names what a policy or a proposal belongs to: a team repo
// ("owner/name") or a memory store (its ID).
type Target struct {
	Kind string // TargetRepo or TargetStore
	Name string
}

func (t Target) String() string { return t.Kind + " " + t.Name }

// Proposal states.
const (
	ProposalPending    = "pending"
	ProposalApproved   = "approved"
	ProposalRejected   = "rejected"
	ProposalSuperseded = "superseded" // its author proposed another change of the same key
)

// Proposal operations: a team key's upsert or deletion, or a memory's
// creation, modification or deletion (the Op* of versions).
const (
	ProposalPut    = "put"
	ProposalDelete = "delete"
)

// proposalIDPrefix starts every proposal ID.
const proposalIDPrefix = "prop_"

// Proposal is a write kept for review: what it would change, who asked
// for it and how, and what became of it.
type Proposal struct {
	ID     string
	Tenant string
	Target Target
	// Key is the team key, or the memory's path (its new path for a
	// move).
	Key string
	// MemoryID is the memory a modification or deletion is of.
	MemoryID string
	// Op is ProposalPut or ProposalDelete (repos), or OpCreated,
	// OpModified or OpDeleted (stores).
	Op      string
	Content string
	// Base is what the author changed: the entry checksum (repos) or the
	// content sha256 (stores) the server held when it was proposed ("":
	// nothing there).
	Base string
	// Author is the token's name; TokenSHA256 the token's hash (its
	// author sees it); Provenance how the write came.
	Author      string
	TokenSHA256 string
	teamwire.Provenance
	Created time.Time
	Status  string
	// Screened, when set, is the screens' finding that would have refused
	// the write outright (a high-confidence injection): under review an
	// agent's such write waits for a person instead, flagged.
	Screened string
	// DecidedBy, Decided and Reason record the approval or rejection
	// (Reason: why it was rejected).
	DecidedBy string
	Decided   time.Time
	Reason    string
}

// ProposalFilter narrows a proposal listing. Zero fields match all.
type ProposalFilter struct {
	Target Target
	Status string
	// TokenSHA256, when set, lists only that token's proposals.
	TokenSHA256 string
	Limit       int // default 100
	// Offset skips that many of the proposals the filter matches, newest
	// first: the next page starts at the previous page's Offset+Limit.
	Offset int
}

// Errors of review.
var (
	// ErrNoProposal: no such proposal in the tenant.
	ErrNoProposal = errors.New("server: no such proposal")
	// ErrProposalDecided: the proposal is no longer pending.
	ErrProposalDecided = errors.New("server: the proposal was already decided")
	// ErrTooManyProposals: the target holds MaxPendingProposals pending
	// proposals; reviewers must decide some first.
	ErrTooManyProposals = errors.New("server: too many proposals wait for review")
	// ErrNoReview: the store keeps no review data (a Store without
	// Reviews).
	ErrNoReview = errors.New("server: this store does not keep review policies")
)

// MaxPendingProposals bounds the pending proposals of one repo or store.
const MaxPendingProposals = 1000

// DecidedProposalAge is how long a decided (approved, rejected or
// superseded) proposal is kept: each new proposal of a repo or store
// drops that target's older ones. A rejected change sent again after
// that is proposed again.
const DecidedProposalAge = 90 * 24 * time.Hour

// Reviews is the store interface of review: policies and proposals.
// Every Store has it; on a TeamStore without it every repo and store is
// open, and setting a policy fails with ErrNoReview.
type Reviews interface {
	// Policy returns a target's policy (PolicyOpen when none was set).
	Policy(ctx context.Context, tenant string, t Target) (string, error)
	// SetPolicy sets a target's policy.
	SetPolicy(ctx context.Context, tenant string, t Target, policy, by string, now time.Time) error
	// Propose keeps p as pending and returns it with its ID, and drops
	// the target's proposals decided more than DecidedProposalAge before
	// p.Created. A pending
	// or rejected proposal of the same token for the same key with the
	// same change is returned instead (a client that pushes again adds
	// nothing, and learns of the rejection); a pending one with another
	// change is superseded.
	Propose(ctx context.Context, p Proposal) (Proposal, error)
	// Proposals lists a tenant's proposals, newest first.
	Proposals(ctx context.Context, tenant string, f ProposalFilter) ([]Proposal, error)
	// CountProposals counts the proposals f matches (its Limit and
	// Offset aside).
	CountProposals(ctx context.Context, tenant string, f ProposalFilter) (int, error)
	// Proposal returns one proposal of a tenant.
	Proposal(ctx context.Context, tenant, id string) (Proposal, error)
	// Decide moves a pending proposal to status (approved or rejected)
	// and returns it; ErrProposalDecided when it is no longer pending.
	Decide(ctx context.Context, tenant, id, status, by, reason string, now time.Time) (Proposal, error)
	// Reopen makes an approved proposal pending again: its write failed
	// after it was claimed (Handler.Approve claims, then writes).
	Reopen(ctx context.Context, tenant, id string) error
}

// sameChange reports whether two proposals ask for the same thing.
// moreFlagged returns q's flag with what p, the same change as pending q
// sent again, is flagged with beyond it (a judge that had no time for it
// the first time), and whether that adds anything: a flag is only ever
// added to, never replaced.
func moreFlagged(q, p Proposal) (string, bool) {
	if q.Status != ProposalPending || p.Screened == "" {
		return q.Screened, false
	}
	flag, added := q.Screened, false
	for part := range strings.SplitSeq(p.Screened, "; ") {
		if part != "" && !strings.Contains(flag, part) {
			if flag != "" {
				flag += "; "
			}
			flag, added = flag+part, true
		}
	}
	return flag, added
}

func sameChange(a, b Proposal) bool {
	return a.Op == b.Op && a.Content == b.Content && a.MemoryID == b.MemoryID
}

// ---- memoryStore ----

type memReviews struct {
	policies  map[string]string // tenant\x00kind\x00name
	proposals []Proposal        // oldest first
}

func policyKey(tenant string, t Target) string { return tenant + "\x00" + t.Kind + "\x00" + t.Name }

// Policy implements Reviews.
func (s *memoryStore) Policy(_ context.Context, tenant string, t Target) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.reviews.policies[policyKey(tenant, t)]; ok {
		return p, nil
	}
	return PolicyOpen, nil
}

// SetPolicy implements Reviews.
func (s *memoryStore) SetPolicy(_ context.Context, tenant string, t Target, policy, _ string, _ time.Time) error {
	if !ValidPolicy(policy) {
		return fmt.Errorf("server: policy %q is not open, review or read-only", policy)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reviews.policies == nil {
		s.reviews.policies = map[string]string{}
	}
	s.reviews.policies[policyKey(tenant, t)] = policy
	return nil
}

// Propose implements Reviews.
func (s *memoryStore) Propose(_ context.Context, p Proposal) (Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := p.Created.Add(-DecidedProposalAge)
	kept := s.reviews.proposals[:0]
	for _, q := range s.reviews.proposals {
		if q.Tenant == p.Tenant && q.Target == p.Target && q.Status != ProposalPending && q.Decided.Before(cutoff) {
			continue
		}
		kept = append(kept, q)
	}
	s.reviews.proposals = kept
	pending := 0
	for i, q := range s.reviews.proposals {
		if q.Tenant != p.Tenant || q.Target != p.Target {
			continue
		}
		if q.TokenSHA256 == p.TokenSHA256 && q.Key == p.Key && q.Status == ProposalRejected && sameChange(q, p) {
			return q, nil
		}
		if q.Status != ProposalPending {
			continue
		}
		if q.TokenSHA256 == p.TokenSHA256 && q.Key == p.Key {
			if sameChange(q, p) {
				if flag, added := moreFlagged(q, p); added {
					s.reviews.proposals[i].Screened = flag
					q.Screened = flag
				}
				return q, nil
			}
			s.reviews.proposals[i].Status = ProposalSuperseded
			s.reviews.proposals[i].Decided = p.Created
			continue
		}
		pending++
	}
	if pending >= MaxPendingProposals {
		return Proposal{}, ErrTooManyProposals
	}
	p.ID, p.Status = newID(proposalIDPrefix), ProposalPending
	s.reviews.proposals = append(s.reviews.proposals, p)
	return p, nil
}

func matches(p Proposal, tenant string, f ProposalFilter) bool {
	return p.Tenant == tenant && (f.Target.Kind == "" || p.Target == f.Target) &&
		(f.Status == "" || p.Status == f.Status) && (f.TokenSHA256 == "" || p.TokenSHA256 == f.TokenSHA256)
}

// Proposals implements Reviews.
func (s *memoryStore) Proposals(_ context.Context, tenant string, f ProposalFilter) ([]Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := positiveOr(f.Limit, 100)
	var out []Proposal
	skip := f.Offset
	for i := len(s.reviews.proposals) - 1; i >= 0 && len(out) < limit; i-- {
		if p := s.reviews.proposals[i]; matches(p, tenant, f) {
			if skip > 0 {
				skip--
				continue
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// CountProposals implements Reviews.
func (s *memoryStore) CountProposals(_ context.Context, tenant string, f ProposalFilter) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.reviews.proposals {
		if matches(p, tenant, f) {
			n++
		}
	}
	return n, nil
}

// Proposal implements Reviews.
func (s *memoryStore) Proposal(_ context.Context, tenant, id string) (Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.reviews.proposals {
		if p.ID == id && p.Tenant == tenant {
			return p, nil
		}
	}
	return Proposal{}, ErrNoProposal
}

// Decide implements Reviews.
func (s *memoryStore) Decide(_ context.Context, tenant, id, status, by, reason string, now time.Time) (Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.reviews.proposals {
		if p.ID != id || p.Tenant != tenant {
			continue
		}
		if p.Status != ProposalPending {
			return p, ErrProposalDecided
		}
		p.Status, p.DecidedBy, p.Decided, p.Reason = status, by, now.UTC().Truncate(time.Millisecond), reason
		s.reviews.proposals[i] = p
		return p, nil
	}
	return Proposal{}, ErrNoProposal
}

// Reopen implements Reviews.
func (s *memoryStore) Reopen(_ context.Context, tenant, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.reviews.proposals {
		if p.ID == id && p.Tenant == tenant && p.Status == ProposalApproved {
			p.Status, p.DecidedBy, p.Decided = ProposalPending, "", time.Time{}
			s.reviews.proposals[i] = p
			return nil
		}
	}
	return ErrNoProposal
}
