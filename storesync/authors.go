package storesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// AuthorsName is agentmem's file beside the manifests that says who wrote
// each memory of the folder as it is and when, as the store's versions
// said after the last round (a dot file: neither agentmem nor Claude Code
// syncs it). Attributions reads it for the prompt.
const AuthorsName = ".memory-sync-authors.json"

// Budgets of one round's author lookups. The store's versions are
// listed newest first, at most maxAuthorPages pages of 100; a memory
// whose newest version lies deeper is looked up on its own
// (memory_versions?memory_id=ID&limit=1), at most maxAuthorLookups a
// round, the rest on later rounds. Up to fewAuthorLookups memories are
// looked up on their own straight away: a small answer each costs less
// than a page of 100 versions.
const (
	maxAuthorPages   = 25
	maxAuthorLookups = 50
	fewAuthorLookups = 3
)

type authorsFile struct {
	V int `json:"v"`
	// Files maps a store path ("/deploy.md") to the author of the
	// content with that sha256; no author: the memory's newest version
	// vouches for no one (redacted), and is not asked again while the
	// content stays.
	Files map[string]authorEntry `json:"files"`
}

type authorEntry struct {
	SHA256 string    `json:"sha256"`
	Author string    `json:"author"`
	Time   time.Time `json:"time"`
}

// Attributions returns who wrote each memory of the mount folder dir as
// it is and when, keyed by its path in the folder ("/"-separated, no
// leading "/"), as the store's versions said at the last round
// (AuthorsName): for a team store at <memory>/team/<mount>, prefix the
// keys with "<mount>/" to have them in memdir.PromptOptions.TeamAuthors.
// A missing or unreadable file says nothing.
func Attributions(fsys afero.Fs, dir string) map[string]memdir.Attribution {
	raw, err := afero.ReadFile(fsys, filepath.Join(dir, AuthorsName))
	var f authorsFile
	if err != nil || json.Unmarshal(raw, &f) != nil {
		return nil
	}
	out := map[string]memdir.Attribution{}
	for p, e := range f.Files {
		if e.Author != "" {
			out[strings.TrimPrefix(p, "/")] = memdir.Attribution{Author: e.Author, Time: e.Time}
		}
	}
	return out
}

// saveAuthors brings AuthorsName up to the memories the round ended with
// (the basis): an entry whose content is unchanged is kept, the author of
// a new or changed one is the creator of its memory's newest version in
// store storeID, when that version holds the entry's very content
// (learnAuthors). It is best effort: a memory not settled this round
// stays unattributed until a later one, and the round's result does not
// depend on it. It reports whether every memory was settled (false: a
// later round should look again).
func (c *Client) saveAuthors(ctx context.Context, b basis, storeID string) (complete bool) {
	var f authorsFile
	if raw, err := afero.ReadFile(c.fs, filepath.Join(c.dir, AuthorsName)); err == nil {
		_ = json.Unmarshal(raw, &f) // an unreadable file starts again
	}
	old := f.Files
	f.V, f.Files = 1, map[string]authorEntry{}
	changed := len(old) != len(b.Entries)
	want := map[string]string{} // memory ID to its path, for the entries to attribute
	for p, e := range b.Entries {
		if prev, ok := old[p]; ok && prev.SHA256 == e.SHA256 {
			f.Files[p] = prev
			continue
		}
		changed = true
		if e.ID != "" {
			want[e.ID] = p
		}
	}
	complete = true
	if versions := c.versionsConn(storeID); versions != nil && len(want) > 0 {
		l := &authorLookup{versions: versions, entries: b.Entries, want: want, found: map[string]authorEntry{}}
		complete = c.learnAuthors(ctx, l)
		for p, a := range l.found {
			f.Files[p] = a
		}
	}
	if !changed {
		return complete
	}
	raw, err := json.Marshal(f)
	if err == nil {
		_, err = c.gate.WriteFile(ctx, filepath.Join(c.dir, AuthorsName), raw, 0o644)
	}
	return complete && err == nil
}

// learnAuthors settles the memories of l.want by their newest versions.
// Many are settled by listing the store's versions newest first (the
// first version listed of a memory is its newest), page by page until
// every one is settled, at most maxAuthorPages pages. Those the pages did
// not reach are remembered (c.deepAuthors) and looked up one by one, at
// most maxAuthorLookups a round, so that later rounds do not list the
// same pages again for them; a few are looked up one by one straight
// away. Every round starts from the newest version: a cursor kept from
// an earlier round would miss the versions written since. It reports
// whether every memory was settled for good.
func (c *Client) learnAuthors(ctx context.Context, l *authorLookup) (complete bool) {
	deep := map[string]bool{}
	for id := range c.deepAuthors {
		if _, ok := l.want[id]; ok {
			deep[id] = true
		}
	}
	var err error
	if len(l.want) > fewAuthorLookups {
		err = l.walk(ctx, deep)
	}
	lookups := 0
	for _, id := range slices.Sorted(maps.Keys(l.want)) {
		if err != nil || lookups == maxAuthorLookups {
			break
		}
		if _, ok := l.want[id]; !ok {
			continue // settled by an earlier answer
		}
		lookups++
		err = l.lookup(ctx, id)
	}
	c.deepAuthors = map[string]bool{}
	for id := range deep {
		if _, ok := l.want[id]; ok {
			c.deepAuthors[id] = true
		}
	}
	if errors.Is(err, errNoVersions) {
		return true // this server keeps no versions: nothing to ask
	}
	return err == nil && len(l.want) == 0 && !l.again
}

// errNoVersions: the server has no versions API (404 or 405).
var errNoVersions = errors.New("storesync: the server keeps no memory versions")

// authorLookup is one round's search for the authors of new or changed
// memories.
type authorLookup struct {
	versions *conn
	entries  map[string]basisEntry // the basis, by path
	want     map[string]string     // memory ID to path: not settled yet
	found    map[string]authorEntry
	// again: a memory's newest version is not the basis's (the store
	// moved on since the round): the round that pulls it looks again.
	again bool
}

// settle reads the newest version v of its memory, if that memory is
// wanted: the memory is settled unless the store moved on since the
// round. One that no one can vouch for is recorded without an author,
// so that later rounds do not ask again while its content stays.
func (l *authorLookup) settle(v storewire.Version) {
	p, ok := l.want[v.MemoryID]
	if !ok {
		return
	}
	delete(l.want, v.MemoryID)
	a, movedOn := authorOf(v, p, l.entries[p].SHA256)
	if movedOn {
		l.again = true
		return
	}
	l.found[p] = a
}

// authorOf says who wrote content sha at path p, by its memory's newest
// version v: only when v holds that very content at that path. A version
// that is newer than the round's content (or deletes the memory) moved
// on; a redacted one vouches for no one (no Author).
func authorOf(v storewire.Version, p, sha string) (e authorEntry, movedOn bool) {
	e.SHA256 = sha
	if v.RedactedAt != nil {
		return e, false
	}
	if v.Operation == "deleted" || v.ContentSHA256 == nil || *v.ContentSHA256 != sha || v.Path == nil || normalPath(*v.Path) != p {
		return e, true
	}
	names := []string{}
	if v.Provenance != nil {
		names = append(names, v.Provenance.Author)
	}
	if v.CreatedBy != nil {
		names = append(names, v.CreatedBy.UserID, v.CreatedBy.APIKeyID, v.CreatedBy.SessionID)
	}
	for _, name := range names {
		if name != "" {
			e.Author = name
			break
		}
	}
	if e.Author != "" {
		e.Time, _ = time.Parse(time.RFC3339Nano, v.CreatedAt)
	}
	return e, false
}

// walk lists the store's versions newest first until every wanted memory
// not in deep is settled, at most maxAuthorPages pages; the memories
// still wanted when the budget is spent are added to deep. Listed to the
// end, a memory no version names is settled unattributed.
func (l *authorLookup) walk(ctx context.Context, deep map[string]bool) error {
	page := ""
	for range maxAuthorPages {
		if !l.pending(deep) {
			return nil
		}
		q := url.Values{"limit": {"100"}}
		if page != "" {
			q.Set("page", page)
		}
		var data []storewire.Version
		next, err := l.get(ctx, q, &data)
		if err != nil {
			return err
		}
		for _, v := range data {
			l.settle(v)
		}
		if next == "" || next == page {
			l.unvouched() // the whole history: no version names the rest
			return nil
		}
		page = next
	}
	for id := range l.want {
		deep[id] = true
	}
	return nil
}

// unvouched settles the memories ids (all still wanted when none is
// given) without an author.
func (l *authorLookup) unvouched(ids ...string) {
	if len(ids) == 0 {
		ids = slices.Sorted(maps.Keys(l.want))
	}
	for _, id := range ids {
		if p, ok := l.want[id]; ok {
			delete(l.want, id)
			l.found[p] = authorEntry{SHA256: l.entries[p].SHA256}
		}
	}
}

// pending reports whether a wanted memory is not in deep.
func (l *authorLookup) pending(deep map[string]bool) bool {
	for id := range l.want {
		if !deep[id] {
			return true
		}
	}
	return false
}

// lookup reads the newest version of memory id.
func (l *authorLookup) lookup(ctx context.Context, id string) error {
	var data []storewire.Version
	if _, err := l.get(ctx, url.Values{"memory_id": {id}, "limit": {"1"}}, &data); err != nil {
		return err
	}
	if len(data) == 0 {
		l.unvouched(id) // no version names it
		return nil
	}
	l.settle(data[0]) // by its memory's ID: a server that ignored the filter gave the newest of another
	return nil
}

// get lists a page of versions into data and returns the next page's
// cursor ("" on the last page).
func (l *authorLookup) get(ctx context.Context, q url.Values, data *[]storewire.Version) (string, error) {
	_, body, err := l.versions.do(ctx, http.MethodGet, "/memory_versions?"+q.Encode(), nil)
	var apiErr *APIError
	if errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed) {
		return "", errNoVersions
	}
	if err != nil {
		return "", err
	}
	reply := storewire.Page{Data: data}
	if err := json.Unmarshal(body, &reply); err != nil {
		return "", fmt.Errorf("storesync: the versions listing is not JSON: %w", err)
	}
	if reply.NextPage == nil {
		return "", nil
	}
	return *reply.NextPage, nil
}

// versionsConn returns the connection to store storeID's versions, or nil
// when the store's ID is not known.
func (c *Client) versionsConn(storeID string) *conn {
	cn := *c.conn
	if !cn.public {
		if storeID == "" || strings.ContainsAny(storeID, "/?#") {
			return nil
		}
		cn.path = "/v1/memory_stores/" + url.PathEscape(storeID)
	}
	return &cn
}
