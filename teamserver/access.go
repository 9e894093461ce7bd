package teamserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// What a web front end over the handler (package teamserver/console)
// needs beside the protocols: the same token lookup, the same grant
// matching and a list of the repos and memory stores a token reaches.

// ErrUnknownToken is returned by Handler.Authenticate for a token that
// is not in the token file; the caller asks for another token.
var ErrUnknownToken = errors.New("server: the token is not in the server's token file")

// AuthRateLimitedError is returned by Handler.Authenticate when the
// client address has failed authentication too often: the caller waits
// RetryAfter before trying again, and no token was looked at.
type AuthRateLimitedError struct {
	RetryAfter time.Duration
}

func (e *AuthRateLimitedError) Error() string {
	return fmt.Sprintf("server: too many failed authentications from this address; retry in %s", e.RetryAfter.Round(time.Second))
}

// Authenticate finds the grant of token as the protocols do, under the
// same limit of failed authentications per client address (r's
// connection): ErrUnknownToken for a token the token file does not hold
// (counted as a failure), *AuthRateLimitedError past the limit.
func (h *Handler) Authenticate(r *http.Request, token string) (TokenGrant, error) {
	if wait, blocked := h.authFails.exhausted(clientAddr(r)); blocked {
		return TokenGrant{}, &AuthRateLimitedError{RetryAfter: wait}
	}
	token = strings.TrimSpace(token)
	g, ok := h.grantOf(HashToken(token))
	if token == "" || !ok {
		h.authFailed(r)
		return TokenGrant{}, ErrUnknownToken
	}
	return g, nil
}

// Allows reports whether the grant covers repo ("owner/name"): the
// check every sync request passes before the store is read.
func (g TokenGrant) Allows(repo string) bool { return g.allows(repo) }

// AllowsStore reports whether the grant reaches the memory store with
// that ID: "*" reaches every store of its organization.
func (g TokenGrant) AllowsStore(id string) bool {
	return slices.Contains(g.Stores, "*") || slices.Contains(g.Stores, id)
}

// Author is the name the grant's writes carry in the history and the
// log: its Name, or "token:" and the first 12 hex digits of its hash.
func (g TokenGrant) Author() string { return g.author() }

// RepoInfo is one repo as a listing shows it.
type RepoInfo struct {
	Name         string // owner/name
	Version      int64
	LastModified time.Time
	Entries      int
}

// RepoLister is a store that lists a tenant's repos, for the console
// (Handler.Repos); every Store is one.
type RepoLister interface {
	// ListRepos lists the tenant's repos in name order.
	ListRepos(ctx context.Context, tenant string) ([]RepoInfo, error)
}

// ErrNoRepoListing is returned by Handler.Repos when the server's store
// cannot list repos (it does not implement RepoLister).
var ErrNoRepoListing = errors.New("server: this store cannot list repos")

// Repos lists the repos of the grant's organization that the grant
// covers, in name order; repos it does not cover are never returned.
func (h *Handler) Repos(ctx context.Context, g TokenGrant) ([]RepoInfo, error) {
	rl, ok := h.team.(RepoLister)
	if !ok {
		return nil, ErrNoRepoListing
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.StoreTimeout)
	defer cancel()
	all, err := rl.ListRepos(ctx, g.Organization)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(r RepoInfo) bool { return !g.allows(r.Name) }), nil
}

// MemStores lists the memory stores of the grant's organization that
// the grant reaches, archived ones included, newest first; none when the
// server's store holds no memory stores.
func (h *Handler) MemStores(ctx context.Context, g TokenGrant) ([]MemStore, error) {
	ms, ok := h.stores, h.stores != nil
	if !ok || len(g.Stores) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.StoreTimeout)
	defer cancel()
	all, err := ms.ListMemStores(ctx, g.Organization)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(st MemStore) bool { return !g.AllowsStore(st.ID) }), nil
}

// ListRepos implements RepoLister.
func (s *memoryStore) ListRepos(_ context.Context, tenant string) ([]RepoInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []RepoInfo
	for r, snap := range s.repos {
		if r.Tenant == tenant {
			out = append(out, RepoInfo{Name: r.Name, Version: snap.Version, LastModified: snap.LastModified, Entries: len(snap.Checksums)})
		}
	}
	slices.SortFunc(out, func(a, b RepoInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ListRepos implements RepoLister.
func (s *sqlStore) ListRepos(ctx context.Context, tenant string) ([]RepoInfo, error) {
	var out []RepoInfo
	err := s.read(ctx, func(tx *sql.Tx) (err error) {
		out, err = scanAll(ctx, tx, s.q(`SELECT r.name, r.version, r.last_modified_ms,
			(SELECT COUNT(*) FROM team_entries e WHERE e.tenant = r.tenant AND e.name = r.name)
			FROM team_repos r WHERE r.tenant = ? ORDER BY r.name`), func(row rowScanner) (ri RepoInfo, err error) {
			var ms int64
			err = row.Scan(&ri.Name, &ri.Version, &ms, &ri.Entries)
			ri.LastModified = time.UnixMilli(ms).UTC()
			return ri, err
		}, tenant)
		return err
	})
	return out, err
}

// SyncPath is the endpoint the handler serves the team memory sync
// protocol at (Options.Path).
func (h *Handler) SyncPath() string { return h.cfg.Path }
