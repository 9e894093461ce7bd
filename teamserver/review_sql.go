package teamserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Review in SQL: two tables beside the rest, created on open (an old
// database gets them too). Every change runs in one write transaction
// holding the target's lock.
const reviewSchema = `
CREATE TABLE IF NOT EXISTS review_policies (
	tenant TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL, policy TEXT NOT NULL,
	updated_ms BIGINT NOT NULL, updated_by TEXT NOT NULL,
	PRIMARY KEY (tenant, kind, target));
CREATE TABLE IF NOT EXISTS review_proposals (
	id TEXT PRIMARY KEY, tenant TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL,
	key TEXT NOT NULL, memory_id TEXT NOT NULL, op TEXT NOT NULL, content TEXT NOT NULL, base TEXT NOT NULL,
	author TEXT NOT NULL, token_sha TEXT NOT NULL,
	prov_door TEXT NOT NULL, prov_session TEXT NOT NULL, prov_origin TEXT NOT NULL, prov_reviewer TEXT NOT NULL,
	created_ms BIGINT NOT NULL, seq BIGINT NOT NULL, status TEXT NOT NULL,
	decided_by TEXT NOT NULL, decided_ms BIGINT NOT NULL, reason TEXT NOT NULL, screened TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS review_proposals_by_target ON review_proposals (tenant, kind, target, status);
`

const proposalColumns = `id, tenant, kind, target, key, memory_id, op, content, base, author, token_sha, ` + provSelect + `, created_ms, status, decided_by, decided_ms, reason, screened`

func scanProposal(row rowScanner) (Proposal, error) {
	var p Proposal
	var created, decided int64
	dest := append([]any{&p.ID, &p.Tenant, &p.Target.Kind, &p.Target.Name, &p.Key, &p.MemoryID, &p.Op, &p.Content, &p.Base, &p.Author, &p.TokenSHA256},
		provDest(&p.Provenance)...)
	dest = append(dest, &created, &p.Status, &p.DecidedBy, &decided, &p.Reason, &p.Screened)
	if err := row.Scan(dest...); err != nil {
		return Proposal{}, err
	}
	p.Created, p.Decided = fromMS(created), fromMS(decided)
	return p, nil
}

func reviewLock(tenant string, t Target) string {
	return "review\n" + tenant + "\n" + t.Kind + "\n" + t.Name
}

// Policy implements Reviews.
func (s *sqlStore) Policy(ctx context.Context, tenant string, t Target) (string, error) {
	var p string
	// Asked on every write: a connection an earlier, cancelled request
	// broke must not make it a 500.
	err := retryBadConn(ctx, func() error {
		return s.r.QueryRowContext(ctx, s.q(`SELECT policy FROM review_policies WHERE tenant = ? AND kind = ? AND target = ?`), tenant, t.Kind, t.Name).Scan(&p)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return PolicyOpen, nil
	}
	return p, overloaded(err)
}

// SetPolicy implements Reviews.
func (s *sqlStore) SetPolicy(ctx context.Context, tenant string, t Target, policy, by string, now time.Time) error {
	if !ValidPolicy(policy) {
		return fmt.Errorf("server: policy %q is not open, review or read-only", policy)
	}
	return s.write(ctx, reviewLock(tenant, t), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO review_policies (tenant, kind, target, policy, updated_ms, updated_by) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, kind, target) DO UPDATE SET policy = excluded.policy, updated_ms = excluded.updated_ms, updated_by = excluded.updated_by`),
			tenant, t.Kind, t.Name, policy, ms(now), by)
		return err
	})
}

// Propose implements Reviews.
func (s *sqlStore) Propose(ctx context.Context, p Proposal) (Proposal, error) {
	err := s.write(ctx, reviewLock(p.Tenant, p.Target), func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM review_proposals WHERE tenant = ? AND kind = ? AND target = ? AND status <> ? AND decided_ms < ?`),
			p.Tenant, p.Target.Kind, p.Target.Name, ProposalPending, ms(p.Created.Add(-DecidedProposalAge))); err != nil {
			return err
		}
		same, err := scanAll(ctx, tx, s.q(`SELECT `+proposalColumns+` FROM review_proposals
			WHERE tenant = ? AND kind = ? AND target = ? AND status IN (?, ?) AND token_sha = ? AND key = ? ORDER BY created_ms DESC, seq DESC`),
			scanProposal, p.Tenant, p.Target.Kind, p.Target.Name, ProposalPending, ProposalRejected, p.TokenSHA256, p.Key)
		if err != nil {
			return err
		}
		for _, q := range same {
			if !sameChange(q, p) {
				continue
			}
			if flag, added := moreFlagged(q, p); added {
				if _, err := tx.ExecContext(ctx, s.q(`UPDATE review_proposals SET screened = ? WHERE id = ?`), flag, q.ID); err != nil {
					return err
				}
				q.Screened = flag
			}
			p = q
			return nil
		}
		for _, q := range same {
			if q.Status != ProposalPending {
				continue
			}
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE review_proposals SET status = ?, decided_ms = ? WHERE id = ?`), ProposalSuperseded, ms(p.Created), q.ID); err != nil {
				return err
			}
		}
		var n int
		var seq int64
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*), COALESCE(MAX(seq), 0) + 1 FROM review_proposals WHERE tenant = ? AND kind = ? AND target = ? AND status = ?`),
			p.Tenant, p.Target.Kind, p.Target.Name, ProposalPending).Scan(&n, &seq); err != nil {
			return err
		}
		if n >= MaxPendingProposals {
			return ErrTooManyProposals
		}
		p.ID, p.Status = newID(proposalIDPrefix), ProposalPending
		p.Created = p.Created.UTC().Truncate(time.Millisecond)
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO review_proposals (id, tenant, kind, target, key, memory_id, op, content, base, author, token_sha, `+provSelect+`, created_ms, seq, status, decided_by, decided_ms, reason, screened)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0, '', ?)`),
			p.ID, p.Tenant, p.Target.Kind, p.Target.Name, p.Key, p.MemoryID, p.Op, p.Content, p.Base, p.Author, p.TokenSHA256,
			p.Door, p.Session, p.Origin, p.Reviewer, ms(p.Created), seq, p.Status, p.Screened)
		return err
	})
	if errors.Is(err, ErrTooManyProposals) {
		return Proposal{}, err
	}
	return p, err
}

// Proposals implements Reviews.
func (s *sqlStore) Proposals(ctx context.Context, tenant string, f ProposalFilter) ([]Proposal, error) {
	limit := positiveOr(f.Limit, 100)
	where, args := proposalWhere(tenant, f)
	query := `SELECT ` + proposalColumns + ` FROM review_proposals WHERE ` + where + ` ORDER BY created_ms DESC, seq DESC LIMIT ? OFFSET ?`
	args = append(args, limit, max(f.Offset, 0))
	var out []Proposal
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		out, err = scanAll(ctx, tx, s.q(query), scanProposal, args...)
		return err
	})
	return out, err
}

// CountProposals implements Reviews.
func (s *sqlStore) CountProposals(ctx context.Context, tenant string, f ProposalFilter) (int, error) {
	where, args := proposalWhere(tenant, f)
	var n int
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM review_proposals WHERE `+where), args...).Scan(&n)
	})
	return n, err
}

// proposalWhere is the WHERE clause of f, and its arguments.
func proposalWhere(tenant string, f ProposalFilter) (string, []any) {
	where := `tenant = ?`
	args := []any{tenant}
	if f.Target.Kind != "" {
		where += ` AND kind = ? AND target = ?`
		args = append(args, f.Target.Kind, f.Target.Name)
	}
	if f.Status != "" {
		where += ` AND status = ?`
		args = append(args, f.Status)
	}
	if f.TokenSHA256 != "" {
		where += ` AND token_sha = ?`
		args = append(args, f.TokenSHA256)
	}
	return where, args
}

// Proposal implements Reviews.
func (s *sqlStore) Proposal(ctx context.Context, tenant, id string) (Proposal, error) {
	var p Proposal
	err := retryBadConn(ctx, func() (err error) {
		p, err = s.proposal(ctx, s.r, tenant, id)
		return err
	})
	return p, overloaded(err)
}

// proposal reads proposal id of tenant in q.
func (s *sqlStore) proposal(ctx context.Context, q querier, tenant, id string) (Proposal, error) {
	p, err := scanProposal(q.QueryRowContext(ctx, s.q(`SELECT `+proposalColumns+` FROM review_proposals WHERE id = ? AND tenant = ?`), id, tenant))
	if errors.Is(err, sql.ErrNoRows) {
		return Proposal{}, ErrNoProposal
	}
	return p, err
}

// Decide implements Reviews.
func (s *sqlStore) Decide(ctx context.Context, tenant, id, status, by, reason string, now time.Time) (Proposal, error) {
	cur, err := s.Proposal(ctx, tenant, id)
	if err != nil {
		return Proposal{}, err
	}
	var out Proposal
	err = s.write(ctx, reviewLock(tenant, cur.Target), func(tx *sql.Tx) error {
		p, err := s.proposal(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		out = p
		if p.Status != ProposalPending {
			return ErrProposalDecided
		}
		out.Status, out.DecidedBy, out.Decided, out.Reason = status, by, now.UTC().Truncate(time.Millisecond), reason
		_, err = tx.ExecContext(ctx, s.q(`UPDATE review_proposals SET status = ?, decided_by = ?, decided_ms = ?, reason = ? WHERE id = ?`),
			status, by, ms(out.Decided), reason, id)
		return err
	})
	return out, err
}

// Reopen implements Reviews.
func (s *sqlStore) Reopen(ctx context.Context, tenant, id string) error {
	cur, err := s.Proposal(ctx, tenant, id)
	if err != nil {
		return err
	}
	return s.write(ctx, reviewLock(tenant, cur.Target), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`UPDATE review_proposals SET status = ?, decided_by = '', decided_ms = 0 WHERE id = ? AND tenant = ? AND status = ?`),
			ProposalPending, id, tenant, ProposalApproved)
		return err
	})
}
