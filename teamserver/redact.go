package teamserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// withoutCredentials returns content with the credentials the routes
// refuse (secrets.Scanner.Scan) redacted, and nothing else: what the
// server shows of a past version or a proposal goes through it, since
// those were stored before the routes refused credentials.
func withoutCredentials(content string) string {
	if len(secretScanner().Scan(content)) == 0 {
		return content
	}
	return secretScanner().RedactBlocking(content)
}

// ServerAuthor is the author of the writes the server makes itself
// (RedactStoredCredentials), recorded with the door teamwire.DoorServer.
const ServerAuthor = "agentmem server"

// Redacted says what RedactStoredCredentials rewrote, and what it could
// not.
type Redacted struct {
	// Entries are the team entries rewritten, as "tenant repo key".
	Entries []string
	// Memories are the Memory Stores memories rewritten, as
	// "tenant store path".
	Memories []string
	// Versions counts the older Memory Stores versions redacted.
	Versions int
	// Failed says what could not be rewritten and why (an archived
	// store takes no write); the rest was.
	Failed []string
}

// RedactStoredCredentials rewrites what the store holds from before the
// routes refused credentials, for every organization a token of the
// handler names that it has not redacted yet: each live team entry and
// Memory Stores memory that holds a credential the routes refuse is
// written again with each such credential replaced by [REDACTED], as a
// write of the server's own (ServerAuthor, door teamwire.DoorServer) that
// every client pulls like any other change; the older Memory Stores
// versions that hold one are redacted, as the protocol's redaction does.
// A team entry's past revisions and a proposal are redacted when shown.
// A host calls it once the handler is made, and again after SetTokens
// names a new organization (team serve does both); it writes nothing
// where nothing holds a credential. A repo, memory or version it cannot
// rewrite is listed in Failed and the rest is done; the error says only
// that an organization could not be listed (it is tried again on the
// next call).
func (h *Handler) RedactStoredCredentials(ctx context.Context) (Redacted, error) {
	var out Redacted
	tenants := map[string]bool{}
	for _, g := range *h.grants.Load() {
		tenants[g.Organization] = true
	}
	var errs []error
	for _, tenant := range slices.Sorted(maps.Keys(tenants)) {
		if _, done := h.redactedTenants.Load(tenant); done {
			continue
		}
		err := errors.Join(h.redactRepos(ctx, tenant, &out), h.redactStores(ctx, tenant, &out))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.redactedTenants.Store(tenant, true)
	}
	return out, errors.Join(errs...)
}

// redactRepos rewrites the team entries of tenant's repos that hold a
// credential.
func (h *Handler) redactRepos(ctx context.Context, tenant string, out *Redacted) error {
	rl, ok := h.team.(RepoLister)
	if !ok {
		return nil
	}
	repos, err := rl.ListRepos(ctx, tenant)
	if err != nil {
		return fmt.Errorf("server: listing the repos of %s to redact credentials: %w", tenant, err)
	}
	for _, info := range repos {
		repo := Repo{Tenant: tenant, Name: info.Name}
		keys, err := h.redactRepo(ctx, repo)
		for attempt := 0; (errors.Is(err, ErrPreconditionFailed) || errors.Is(err, errBrokenMidStream)) && attempt < 5; attempt++ {
			keys, err = h.redactRepo(ctx, repo) // a teammate wrote meanwhile, or the read broke: read again
		}
		if err != nil {
			out.Failed = append(out.Failed, fmt.Sprintf("%s %s: %v", tenant, repo.Name, err))
			continue
		}
		for _, k := range keys {
			out.Entries = append(out.Entries, tenant+" "+repo.Name+" "+withoutCredentials(k))
		}
	}
	return nil
}

// redactRepo writes repo's entries that hold a credential again, redacted,
// in one write conditional on what it read; it returns their keys. It
// streams the repo, holding only the entries it rewrites, so a server's
// start costs no more memory than a full GET.
func (h *Handler) redactRepo(ctx context.Context, repo Repo) ([]string, error) {
	entries := map[string]string{}
	snap, err := h.team.Stream(ctx, repo, func(Snapshot) error { return nil }, func(k, v string) error {
		if r := withoutCredentials(v); r != v {
			entries[k] = r
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	_, err = h.team.Put(ctx, repo, PutRequest{
		IfMatch: snap.Checksum, Entries: entries, Retention: h.cfg.Retention,
		Author: ServerAuthor, Provenance: teamwire.Provenance{Door: teamwire.DoorServer}, Now: h.cfg.Now(),
	})
	if err != nil {
		return nil, err
	}
	h.hashes.forget(repo)
	h.changes.notify(repo)
	return slices.Sorted(maps.Keys(entries)), nil
}

// redactStores rewrites the memories of tenant's memory stores that hold
// a credential, and redacts their older versions that hold one.
func (h *Handler) redactStores(ctx context.Context, tenant string, out *Redacted) error {
	if h.stores == nil {
		return nil
	}
	stores, err := h.stores.ListMemStores(ctx, tenant)
	if err != nil {
		return fmt.Errorf("server: listing the memory stores of %s to redact credentials: %w", tenant, err)
	}
	by := Actor{Type: "api_actor", ID: ServerAuthor, Provenance: teamwire.Provenance{Door: teamwire.DoorServer}}
	for _, st := range stores {
		var held []Memory // with the content to write
		err := h.stores.EachMemory(ctx, tenant, st.ID, true, func(MemStore) error { return nil }, func(m Memory) error {
			if r := withoutCredentials(m.Content); r != m.Content {
				m.Content = r
				held = append(held, m)
			}
			return nil
		})
		if err != nil {
			out.Failed = append(out.Failed, fmt.Sprintf("reading memory store %s: %v", st.ID, err))
			continue
		}
		for _, m := range held {
			_, err := h.stores.UpdateMemory(ctx, tenant, st.ID, m.ID, MemoryWrite{Content: &m.Content, IfSHA256: m.SHA256, By: by}, h.cfg.StoreLimits, h.cfg.Now())
			if err != nil {
				out.Failed = append(out.Failed, fmt.Sprintf("%s %s %s: %v", tenant, st.ID, withoutCredentials(m.Path), err))
				continue
			}
			out.Memories = append(out.Memories, tenant+" "+st.ID+" "+withoutCredentials(m.Path))
		}
		if err := h.redactVersions(ctx, tenant, st.ID, by, out); err != nil {
			out.Failed = append(out.Failed, err.Error())
		}
	}
	return nil
}

// redactVersions redacts the versions of a memory store that hold a
// credential, a page at a time, newest first.
func (h *Handler) redactVersions(ctx context.Context, tenant, storeID string, by Actor, out *Redacted) error {
	f := VersionFilter{Content: true, Limit: 500}
	for {
		versions, err := h.stores.ListVersions(ctx, tenant, storeID, f)
		if err != nil {
			return fmt.Errorf("server: reading the versions of memory store %s to redact credentials: %w", storeID, err)
		}
		for _, v := range versions {
			if v.Redacted.IsZero() && withoutCredentials(v.Content) != v.Content {
				if _, err := h.stores.RedactVersion(ctx, tenant, storeID, v.ID, by, h.cfg.Now()); err != nil {
					return fmt.Errorf("server: redacting version %s of memory store %s: %w", v.ID, storeID, err)
				}
				out.Versions++
			}
		}
		if len(versions) < f.Limit {
			return nil
		}
		f.BeforeSeq = versions[len(versions)-1].Seq
	}
}
