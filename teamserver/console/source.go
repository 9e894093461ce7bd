package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/storewire"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// item is one memory as the pages show it.
type item struct {
	Key     string // the repo key or the store path
	ID      string // the store's memory ID ("" in a repo)
	Content string
	Author  string // who wrote it last, when known
	Updated time.Time
}

// version is one recorded write of a memory.
type version struct {
	ID      string
	Author  string
	Time    time.Time
	Deleted bool
}

// source is a repo or a memory store, read and written through the
// server's handler with the signed-in token.
type source interface {
	kind() string // "repo" or "store"
	name() string
	// base is the console path of the source's pages.
	base() string
	list(ctx context.Context) ([]item, error)
	get(ctx context.Context, key string) (item, error)
	history(ctx context.Context, key string) ([]version, error)
	version(ctx context.Context, key, id string) (content string, deleted bool, err error)
	// restore writes version id's content as the memory's new content.
	restore(ctx context.Context, key, id string) error
	// remove deletes the memories of keys if each still holds the text
	// whose seenText is seen[i] (else *changedError, with nothing
	// deleted where the protocol writes them together): the check and
	// the write are one step, all in one write where the protocol can.
	remove(ctx context.Context, keys, seen []string) error
}

// errNoMemory: the source holds no memory under that key.
var errNoMemory = errors.New("console: no such memory")

// repoSource is a team memory repo over the sync protocol.
type repoSource struct {
	c    *Console
	r    *http.Request
	s    *session
	repo string
}

func (p *repoSource) kind() string { return "repo" }
func (p *repoSource) name() string { return p.repo }
func (p *repoSource) base() string { return p.c.opts.Prefix + "/repos/" + p.repo }

func (p *repoSource) get0(ctx context.Context, q url.Values, out any) error {
	q.Set("repo", p.repo)
	return p.c.call(ctx, p.r, p.s, http.MethodGet, p.c.h.SyncPath(), q, nil, nil, out)
}

func (p *repoSource) list(ctx context.Context) ([]item, error) {
	var data teamwire.TeamMemoryData
	err := p.get0(ctx, url.Values{}, &data)
	var ae *refusal
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil, nil // the repo has no memory yet
	}
	if err != nil {
		return nil, err
	}
	// Who wrote each key last and when: the newest log entry naming it.
	var log []teamwire.LogEntry
	if err := p.get0(ctx, url.Values{"view": {"log"}, "limit": {"1000"}}, &log); err != nil {
		return nil, err
	}
	type last struct {
		author string
		t      time.Time
	}
	lasts := map[string]last{}
	for _, e := range log {
		t, _ := time.Parse(time.RFC3339Nano, e.Time)
		for _, k := range e.Keys {
			if _, seen := lasts[k]; !seen {
				lasts[k] = last{e.Author, t}
			}
		}
	}
	out := make([]item, 0, len(data.Content.Entries))
	for k, v := range data.Content.Entries {
		l := lasts[k]
		out = append(out, item{Key: k, Content: v, Author: l.author, Updated: l.t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (p *repoSource) get(ctx context.Context, key string) (item, error) {
	all, err := p.list(ctx)
	if err != nil {
		return item{}, err
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].Key >= key })
	if i == len(all) || all[i].Key != key {
		return item{}, errNoMemory
	}
	return all[i], nil
}

func (p *repoSource) history(ctx context.Context, key string) ([]version, error) {
	var h teamwire.HistoryView
	if err := p.get0(ctx, url.Values{"view": {"history"}, "key": {key}, "limit": {"1000"}}, &h); err != nil {
		return nil, err
	}
	out := make([]version, 0, len(h.Versions))
	for _, v := range h.Versions {
		t, _ := time.Parse(time.RFC3339Nano, v.Time)
		out = append(out, version{ID: strconv.FormatInt(v.Version, 10), Author: v.Author, Time: t, Deleted: v.Deleted})
	}
	return out, nil
}

func (p *repoSource) version(ctx context.Context, key, id string) (string, bool, error) {
	var rv teamwire.RevisionView
	if err := p.get0(ctx, url.Values{"view": {"history"}, "key": {key}, "version": {id}}, &rv); err != nil {
		return "", false, err
	}
	return rv.Content, rv.Deleted, nil
}

// put writes body to the repo if it is still at checksum (the repo as
// read): a teammate's write in between is answered 412, not overwritten.
func (p *repoSource) put(ctx context.Context, body teamwire.PutBody, checksum string) error {
	return p.c.call(ctx, p.r, p.s, http.MethodPut, p.c.h.SyncPath(), url.Values{"repo": {p.repo}}, body, map[string]string{"If-Match": `"` + checksum + `"`}, nil)
}

// read returns the whole repo (an empty one when it has no memory yet).
func (p *repoSource) read(ctx context.Context) (teamwire.TeamMemoryData, error) {
	var data teamwire.TeamMemoryData
	err := p.get0(ctx, url.Values{}, &data)
	var ae *refusal
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return data, nil
	}
	return data, err
}

// restore writes version id's content as the memory's content and, in
// the same write, a pointer to it in the repo's MEMORY.md when the index
// has none, so every teammate's index points to it again.
func (p *repoSource) restore(ctx context.Context, key, id string) error {
	content, deleted, err := p.version(ctx, key, id)
	if err != nil {
		return err
	}
	if deleted {
		return errRestoreDeletion
	}
	data, err := p.read(ctx)
	if err != nil {
		return err
	}
	body := teamwire.PutBody{Entries: map[string]string{key: content}}
	if key != memdir.EntrypointName {
		fm, _, _ := memdir.ParseFrontmatter([]byte(content))
		if index, added := memdir.IndexWithPointer(data.Content.Entries[memdir.EntrypointName], key, memdir.Memory{Name: fm.Name, Description: fm.Description}); added {
			body.Entries[memdir.EntrypointName] = index
		}
	}
	return p.put(ctx, body, data.Checksum)
}

// remove deletes the memories and, in the same write, the lines of the
// repo's MEMORY.md that point to them, so no teammate's index is left
// pointing to nothing. The write is conditional on the read the check
// was made on (If-Match): a teammate's write in between fails it.
func (p *repoSource) remove(ctx context.Context, keys, seen []string) error {
	data, err := p.read(ctx)
	if err != nil {
		return err
	}
	body := teamwire.PutBody{Entries: map[string]string{}}
	index, hasIndex := data.Content.Entries[memdir.EntrypointName]
	for i, key := range keys {
		content, ok := data.Content.Entries[key]
		if !ok {
			return errNoMemory
		}
		if seenText(content, false) != seen[i] {
			return &changedError{key: key}
		}
		body.SoftDeleteKeys = append(body.SoftDeleteKeys, key)
		if hasIndex && key != memdir.EntrypointName {
			if next, dropped := memdir.IndexWithoutPointers(index, key); dropped {
				index = next
				body.Entries[memdir.EntrypointName] = next
			}
		}
	}
	if slices.Contains(keys, memdir.EntrypointName) {
		delete(body.Entries, memdir.EntrypointName)
	}
	return p.put(ctx, body, data.Checksum)
}

// changedError: a memory a confirmation page showed was written since;
// nothing was deleted.
type changedError struct{ key string }

func (e *changedError) Error() string {
	return "console: " + e.key + " changed since the confirmation page"
}

// partlyDone: an action on several items (memories deleted one by one
// in a store, proposals decided in order) stopped at one after the ones
// before it were done.
type partlyDone struct {
	done, of int
	key      string // the item it stopped at
	did      string // what was done: "deleted", "decided"
	err      error
}

func (e *partlyDone) Error() string {
	return fmt.Sprintf("console: %d of %d were %s before %s: %v", e.done, e.of, e.did, e.key, e.err)
}

func (e *partlyDone) Unwrap() error { return e.err }

// indexFollows makes the repo's MEMORY.md agree with a memory another
// write changed (an approval): a pointer when the memory is there and no
// line points to it, none when it is gone. It writes only when the
// index must change (If-Match, as every console write), and leaves a
// repo without an index as it is.
func (p *repoSource) indexFollows(ctx context.Context, key string) error {
	if !memdir.IsMemoryFile(key, 0) { // the index and files that are no memory get no line
		return nil
	}
	data, err := p.read(ctx)
	if err != nil {
		return err
	}
	index, hasIndex := data.Content.Entries[memdir.EntrypointName]
	if !hasIndex {
		return nil
	}
	var next string
	var changed bool
	if content, ok := data.Content.Entries[key]; ok {
		fm, _, _ := memdir.ParseFrontmatter([]byte(content))
		next, changed = memdir.IndexWithPointer(index, key, memdir.Memory{Name: fm.Name, Description: fm.Description})
	} else {
		next, changed = memdir.IndexWithoutPointers(index, key)
	}
	if !changed {
		return nil
	}
	return p.put(ctx, teamwire.PutBody{Entries: map[string]string{memdir.EntrypointName: next}}, data.Checksum)
}

// errRestoreDeletion: the version chosen is a deletion, which has no
// content to restore; choose the version before it.
// errNoVersion: the version asked for is not one of the memory's.
var errNoVersion = errors.New("console: the memory has no such version")

var errRestoreDeletion = errors.New("console: that version is a deletion; restore the version before it")

// storeSource is a memory store over the Memory Stores API.
type storeSource struct {
	c  *Console
	r  *http.Request
	s  *session
	st teamserver.MemStore
}

func (p *storeSource) kind() string { return "store" }
func (p *storeSource) name() string { return p.st.Name }
func (p *storeSource) base() string { return p.c.opts.Prefix + "/stores/" + p.st.ID }

func (p *storeSource) path(rest string) string {
	return storewire.StoresPath + "/" + p.st.ID + rest
}

func (p *storeSource) list(ctx context.Context) ([]item, error) {
	rec, err := p.c.raw(ctx, p.r, p.s, http.MethodGet, p.path("/memories/export"), url.Values{"view": {"full"}})
	if err != nil {
		return nil, err
	}
	var out []item
	sc := bufio.NewScanner(bytes.NewReader(rec))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	complete := false
	for sc.Scan() {
		var line struct {
			Type      string  `json:"type"`
			ID        string  `json:"id"`
			Path      string  `json:"path"`
			Content   *string `json:"content"`
			UpdatedAt string  `json:"updated_at"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, err
		}
		switch line.Type {
		case "memory":
			it := item{Key: line.Path, ID: line.ID}
			if line.Content != nil {
				it.Content = *line.Content
			}
			it.Updated, _ = time.Parse(time.RFC3339Nano, line.UpdatedAt)
			out = append(out, it)
		case "complete":
			complete = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !complete {
		return nil, &refusal{Status: http.StatusServiceUnavailable, Message: "the store's listing was cut short; reload the page"}
	}
	// Who wrote each memory last: the newest of the store's recent
	// changes that names it.
	vs, err := p.recentVersions(ctx)
	if err != nil {
		return nil, err
	}
	by := map[string]string{}
	for _, v := range vs {
		if _, seen := by[v.MemoryID]; !seen {
			by[v.MemoryID] = v.author()
		}
	}
	for i := range out {
		out[i].Author = by[out[i].ID]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (p *storeSource) get(ctx context.Context, key string) (item, error) {
	all, err := p.list(ctx)
	if err != nil {
		return item{}, err
	}
	for _, it := range all {
		if it.Key == key {
			return it, nil
		}
	}
	return item{}, errNoMemory
}

type storeVersion struct {
	ID        string  `json:"id"`
	MemoryID  string  `json:"memory_id"`
	Operation string  `json:"operation"`
	Path      *string `json:"path"`
	Content   *string `json:"content"`
	CreatedAt string  `json:"created_at"`
	CreatedBy struct {
		APIKeyID string `json:"api_key_id"`
		UserID   string `json:"user_id"`
	} `json:"created_by"`
	Provenance *struct {
		Author string `json:"author"`
	} `json:"provenance"`
	RedactedAt *string `json:"redacted_at"`
}

// author is the token that wrote the version: the provenance's author,
// or else the created_by actor's name (a person's token is a user_actor,
// any other an api_actor).
func (v storeVersion) author() string {
	if v.Provenance != nil && v.Provenance.Author != "" {
		return v.Provenance.Author
	}
	if v.CreatedBy.UserID != "" {
		return v.CreatedBy.UserID
	}
	return v.CreatedBy.APIKeyID
}

// recentVersions lists the store's newest 100 changes, newest first.
func (p *storeSource) recentVersions(ctx context.Context) ([]storeVersion, error) {
	var page struct {
		Data []storeVersion `json:"data"`
	}
	err := p.c.call(ctx, p.r, p.s, http.MethodGet, p.path("/memory_versions"), url.Values{"limit": {"100"}}, nil, nil, &page)
	return page.Data, err
}

// memoryID finds the memory at a path: a live one, or else the one
// that a recent change (the store's newest 100) left there, deleted
// since, so its history can still be read and a version restored.
func (p *storeSource) memoryID(ctx context.Context, key string) (id string, live bool, err error) {
	all, err := p.list(ctx)
	if err != nil {
		return "", false, err
	}
	for _, it := range all {
		if it.Key == key {
			return it.ID, true, nil
		}
	}
	vs, err := p.recentVersions(ctx)
	if err != nil {
		return "", false, err
	}
	for _, v := range vs {
		if v.Path != nil && *v.Path == key {
			return v.MemoryID, false, nil
		}
	}
	return "", false, errNoMemory
}

func (p *storeSource) history(ctx context.Context, key string) ([]version, error) {
	id, _, err := p.memoryID(ctx, key)
	if err != nil {
		return nil, err
	}
	var page struct {
		Data []storeVersion `json:"data"`
	}
	if err := p.c.call(ctx, p.r, p.s, http.MethodGet, p.path("/memory_versions"), url.Values{"memory_id": {id}, "limit": {"100"}}, nil, nil, &page); err != nil {
		return nil, err
	}
	out := make([]version, 0, len(page.Data))
	for _, v := range page.Data {
		t, _ := time.Parse(time.RFC3339Nano, v.CreatedAt)
		out = append(out, version{ID: v.ID, Author: v.author(), Time: t, Deleted: v.Operation == teamserver.OpDeleted || v.RedactedAt != nil})
	}
	return out, nil
}

func (p *storeSource) version(ctx context.Context, key, id string) (string, bool, error) {
	mid, _, err := p.memoryID(ctx, key)
	if err != nil {
		return "", false, err
	}
	return p.versionOf(ctx, mid, id)
}

// versionOf returns the text of version id of memory mid (deleted: a
// deletion, no text). Only a version of that memory: another memory's
// version would put its text here.
func (p *storeSource) versionOf(ctx context.Context, mid, id string) (string, bool, error) {
	var v storeVersion
	if err := p.c.call(ctx, p.r, p.s, http.MethodGet, p.path("/memory_versions/"+url.PathEscape(id)), url.Values{"view": {"full"}}, nil, nil, &v); err != nil {
		return "", false, err
	}
	if v.MemoryID != mid {
		return "", false, errNoVersion
	}
	if v.Content == nil {
		return "", true, nil
	}
	return *v.Content, false, nil
}

func (p *storeSource) restore(ctx context.Context, key, id string) error {
	mid, live, err := p.memoryID(ctx, key)
	if err != nil {
		return err
	}
	content, deleted, err := p.versionOf(ctx, mid, id)
	if err != nil {
		return err
	}
	if deleted {
		return errRestoreDeletion
	}
	if !live { // deleted since: the restore writes it again at its path
		return p.c.call(ctx, p.r, p.s, http.MethodPost, p.path("/memories"), nil, map[string]any{"path": key, "content": content}, nil, nil)
	}
	return p.c.call(ctx, p.r, p.s, http.MethodPost, p.path("/memories/"+url.PathEscape(mid)), nil, map[string]any{"content": content}, nil, nil)
}

func (p *storeSource) remove(ctx context.Context, keys, seen []string) error {
	all, err := p.list(ctx)
	if err != nil {
		return err
	}
	ids := make(map[string]string, len(all))
	for _, it := range all {
		ids[it.Key] = it.ID
	}
	for i, key := range keys {
		id, ok := ids[key]
		switch {
		case !ok:
			err = errNoMemory
		case seen[i] == "":
			err = &changedError{key: key} // nothing to hold the store to: not deleted
		default:
			// The store deletes only the text the page showed.
			err = p.c.call(ctx, p.r, p.s, http.MethodDelete, p.path("/memories/"+url.PathEscape(id)), url.Values{"expected_content_sha256": {seen[i]}}, nil, nil, nil)
			var ae *refusal
			if errors.As(err, &ae) && ae.Status == http.StatusConflict {
				err = &changedError{key: key}
			}
		}
		if err != nil {
			if i > 0 {
				return &partlyDone{done: i, of: len(keys), key: key, did: "deleted", err: err}
			}
			return err
		}
	}
	return nil
}
