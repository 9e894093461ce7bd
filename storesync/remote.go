package storesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// Remote is the Memory Stores driver of the sync engine: one store
// behind foldersync.Remote. Paths are the store's without the leading
// "/"; an Entry's Ref is the memory's ID. The store's export names its ID
// and generation (Listing.Store, Generation); a listing whose head has
// not moved since the previous one is answered Unchanged. Deletions are
// evidenced by the store's deleted versions where it serves them (the
// public /v1/memory_stores routes), and otherwise by the listing itself,
// which the store's identity and generation vouch for
// (Listing.DeletesByAbsence).
type Remote struct {
	conn *conn
	mu   sync.Mutex
	ids  map[string]string // path to memory ID, from the last listing and writes
	gen  int64             // the generation of the last listing, plus the writes since
	// idsTag is the Tag of the listing ids was built from ("" once a
	// write changed ids): an Unchanged answer to that Tag keeps ids as
	// they are instead of building them again.
	idsTag string
}

// NewRemote returns the driver for cfg's store (BaseURL, Token, Mount,
// HTTP, Retries, Door, Session, Origin; the sync options are the
// engine's).
func NewRemote(cfg Options) (*Remote, error) {
	cn, err := newConn(&cfg)
	if err != nil {
		return nil, err
	}
	return &Remote{conn: cn, ids: map[string]string{}}, nil
}

var _ foldersync.Remote = (*Remote)(nil)

// List implements foldersync.Remote.
func (r *Remote) List(ctx context.Context, prev foldersync.Listing) (foldersync.Listing, error) {
	var header []string
	if prev.Tag != "" {
		header = []string{"If-None-Match", strconv.Quote(prev.Tag)}
	}
	mems, head, err := r.conn.list(ctx, header...)
	if errors.Is(err, errNotModified) {
		// The store's ID and generation are those listed last; the IDs
		// are built again only when they came from another listing.
		r.mu.Lock()
		if r.idsTag != prev.Tag {
			ids := make(map[string]string, len(prev.Entries))
			for p, e := range prev.Entries {
				ids[p] = e.Ref
			}
			r.ids, r.idsTag = ids, prev.Tag
		}
		r.gen = prev.Generation
		r.mu.Unlock()
		return foldersync.Listing{Store: prev.Store, Generation: prev.Generation, Tag: prev.Tag, Unchanged: true, Entries: prev.Entries,
			DeletesByAbsence: prev.Store != "" && prev.Generation > 0 && !r.conn.public}, nil
	}
	if err != nil {
		return foldersync.Listing{}, err
	}
	out := foldersync.Listing{Store: head.ID, Entries: make(map[string]foldersync.Entry, len(mems))}
	if head.Generation != nil {
		out.Generation = *head.Generation
		out.DeletesByAbsence = head.ID != "" && !r.conn.public
		out.Tag = fmt.Sprintf("%s:%d", head.ID, out.Generation)
	}
	ids := make(map[string]string, len(mems))
	for p, m := range mems {
		rel := strings.TrimPrefix(p, "/")
		out.Entries[rel] = foldersync.Entry{Sum: m.SHA256, Ref: m.ID, Written: m.Updated}
		ids[rel] = m.ID
	}
	r.mu.Lock()
	r.ids, r.gen, r.idsTag = ids, out.Generation, out.Tag
	r.mu.Unlock()
	if out.Tag != "" && out.Tag == prev.Tag {
		out.Unchanged = true
	}
	return out, nil
}

// Get implements foldersync.Remote: each memory by its ID; a memory whose
// content does not match its sha256 is an error, and nothing is returned
// for it.
func (r *Remote) Get(ctx context.Context, paths []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, p := range paths {
		r.mu.Lock()
		id := r.ids[p]
		r.mu.Unlock()
		if id == "" {
			continue
		}
		m, err := r.conn.get(ctx, id)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
			continue // deleted since the listing
		}
		if err != nil {
			return out, err
		}
		if foldersync.Sum([]byte(m.Content)) != m.SHA256 {
			return out, fmt.Errorf("storesync: /%s arrived with content that does not match its sha256; nothing was written", p)
		}
		if normalPath(m.Path) != "/"+p {
			continue // the ID now holds another path: the next round sees it
		}
		out[p] = []byte(m.Content)
	}
	return out, nil
}

// Deleted implements foldersync.Remote: where the store serves its
// versions, the newest deleted version of each path asked, from the
// newest 1,000 deletions.
func (r *Remote) Deleted(ctx context.Context, paths []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if !r.conn.public || len(paths) == 0 {
		return out, nil
	}
	want := map[string]bool{}
	for _, p := range paths {
		want["/"+p] = true
	}
	page := ""
	for range 10 {
		q := url.Values{"operation": {"deleted"}, "limit": {"100"}}
		if page != "" {
			q.Set("page", page)
		}
		_, body, err := r.conn.do(ctx, http.MethodGet, "/memory_versions?"+q.Encode(), nil)
		var apiErr *APIError
		if errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed) {
			return out, nil // no versions here: no evidence
		}
		if err != nil {
			return nil, err
		}
		var reply struct {
			Data []struct {
				Path      *string `json:"path"`
				CreatedAt string  `json:"created_at"`
			} `json:"data"`
			NextPage *string `json:"next_page"`
		}
		if err := json.Unmarshal(body, &reply); err != nil {
			return nil, fmt.Errorf("storesync: the versions listing is not JSON: %w", err)
		}
		for _, v := range reply.Data {
			if v.Path == nil || !want[normalPath(*v.Path)] {
				continue
			}
			p := strings.TrimPrefix(normalPath(*v.Path), "/")
			if _, seen := out[p]; seen {
				continue // newest first: the first one found is the newest
			}
			if t, err := time.Parse(time.RFC3339Nano, v.CreatedAt); err == nil {
				out[p] = t
			}
		}
		if reply.NextPage == nil || *reply.NextPage == "" || *reply.NextPage == page {
			break
		}
		page = *reply.NextPage
	}
	return out, nil
}

// Apply implements foldersync.Remote: a create (not_exists), an update
// or a deletion conditional on the sha256 the change expects. A refusal
// of one path is that path's outcome; a network error or a server error
// stops the batch.
func (r *Remote) Apply(ctx context.Context, changes []foldersync.Change) ([]foldersync.Outcome, error) {
	var outs []foldersync.Outcome
	for _, c := range changes {
		o, err := r.apply(ctx, c)
		if err != nil {
			return outs, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func (r *Remote) apply(ctx context.Context, c foldersync.Change) (foldersync.Outcome, error) {
	o := foldersync.Outcome{Path: c.Path}
	var m remoteMemory
	var err error
	cn := r.connFor(c.Wrote) // with the door, session and origin that wrote it
	switch {
	case c.Delete:
		err = cn.remove(ctx, c.Expect.Ref, c.Expect.Sum)
	case c.Expect.Sum == "":
		m, err = cn.create(ctx, "/"+c.Path, string(c.Content))
	default:
		m, err = cn.update(ctx, c.Expect.Ref, string(c.Content), c.Expect.Sum)
	}
	var rej *rejectedError
	var apiErr *APIError
	switch {
	case errors.Is(err, errInReview):
		o.Status = foldersync.InReview
		return o, nil
	case errors.As(err, &rej):
		o.Status, o.Reason = foldersync.Rejected, rej.reason
		return o, nil
	case errors.As(err, &apiErr) && apiErr.Type == FolderConflictType:
		o.Status, o.Reason = foldersync.Refused, foldersync.SkipPathClash+": "+orDefault(strings.TrimPrefix(apiErr.ConflictingPath, "/"), "another memory")+" is in the way in the store"
		return o, nil
	case errors.As(err, &apiErr) && (apiErr.Status == http.StatusConflict || apiErr.Status == http.StatusPreconditionFailed || apiErr.Status == http.StatusNotFound):
		if c.Delete && apiErr.Status == http.StatusNotFound {
			o.Status = foldersync.Applied // gone already
			r.forget(c.Path)
			return o, nil
		}
		o.Status = foldersync.Mismatch
		return o, nil
	case errors.As(err, &apiErr) && (apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusRequestEntityTooLarge || apiErr.Status == http.StatusUnprocessableEntity):
		o.Status, o.Reason = foldersync.Refused, apiErr.Message
		return o, nil
	case err != nil:
		return o, err
	}
	r.mu.Lock()
	r.gen++ // every write moves the store's generation on by one at least
	o.Generation = r.gen
	r.idsTag = ""
	if c.Delete {
		delete(r.ids, c.Path)
	} else {
		r.ids[c.Path] = m.ID
		o.Entry = foldersync.Entry{Sum: foldersync.Sum(c.Content), Ref: m.ID, Written: m.Updated}
	}
	r.mu.Unlock()
	o.Status = foldersync.Applied
	return o, nil
}

func (r *Remote) forget(p string) {
	r.mu.Lock()
	delete(r.ids, p)
	r.idsTag = ""
	r.mu.Unlock()
}

// Check implements foldersync.Remote: what the store protocol cannot
// carry exactly (foldersync.SkipNotUTF8, SkipNULByte, SkipBadName) or a
// store does not take (larger than MaxContentBytes).
func (r *Remote) Check(p string, content []byte) string {
	if skip := foldersync.SkipText(p, content); skip != "" {
		return skip
	}
	if len(content) > MaxContentBytes {
		return "oversized: larger than a store takes"
	}
	return ""
}
