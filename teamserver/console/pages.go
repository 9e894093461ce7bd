package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

func (c *Console) routes() {
	p := c.opts.Prefix
	m := http.NewServeMux()
	m.HandleFunc("GET "+p+"/{$}", c.authed(c.home))
	m.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, p+"/", http.StatusMovedPermanently) })
	m.HandleFunc("GET "+p+"/signin", c.signinPage)
	m.HandleFunc("POST "+p+"/signin", c.signin)
	m.HandleFunc("POST "+p+"/signout", c.authed(c.signout))
	m.HandleFunc("GET "+p+"/activity", c.authed(c.activity))
	for _, kind := range []string{"/repos/{owner}/{name}", "/stores/{store}"} {
		b := p + kind
		m.HandleFunc("GET "+b, c.authed(c.withSource(c.list)))
		m.HandleFunc("GET "+b+"/memory", c.authed(c.withSource(c.memory)))
		m.HandleFunc("GET "+b+"/history", c.authed(c.withSource(c.historyPage)))
		m.HandleFunc("GET "+b+"/restore", c.authed(c.withSource(c.restoreConfirm)))
		m.HandleFunc("POST "+b+"/restore", c.authed(c.withSource(c.restore)))
		m.HandleFunc("GET "+b+"/delete", c.authed(c.withSource(c.deleteConfirm)))
		m.HandleFunc("POST "+b+"/delete", c.authed(c.withSource(c.remove)))
	}
	m.HandleFunc("GET "+p+"/review", c.authed(c.review))
	m.HandleFunc("GET "+p+"/review/approve", c.authed(c.approveConfirm))
	m.HandleFunc("POST "+p+"/review/approve", c.authed(c.approve))
	m.HandleFunc("GET "+p+"/review/reject", c.authed(c.rejectConfirm))
	m.HandleFunc("POST "+p+"/review/reject", c.authed(c.reject))
	m.HandleFunc("GET "+p+"/policy", c.authed(c.policyConfirm))
	m.HandleFunc("POST "+p+"/policy", c.authed(c.setPolicy))
	m.HandleFunc(p+"/", c.authed(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.fail(w, r, s, http.StatusNotFound, "There is no such page in the console.")
	}))
	c.mux = m
}

// withSource resolves the repo or store a page is about, refusing what
// the token's grant does not name exactly as the server would (and with
// the same answer whether or not it exists).
func (c *Console) withSource(fn func(w http.ResponseWriter, r *http.Request, s *session, src source)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		if id := r.PathValue("store"); id != "" {
			ctx, cancel := reqCtx(r)
			defer cancel()
			stores, err := c.h.MemStores(ctx, s.grant)
			if err != nil {
				c.apiFail(w, r, s, err)
				return
			}
			for _, st := range stores {
				if st.ID == id {
					fn(w, r, s, &storeSource{c: c, r: r, s: s, st: st})
					return
				}
			}
			c.fail(w, r, s, http.StatusNotFound, "Your token reaches no memory store with that ID.")
			return
		}
		repo := r.PathValue("owner") + "/" + r.PathValue("name")
		if !teamserver.ValidRepoSlug(repo) || !s.grant.Allows(repo) {
			c.fail(w, r, s, http.StatusNotFound, "Your token reaches no repo of that name.")
			return
		}
		fn(w, r, s, &repoSource{c: c, r: r, s: s, repo: repo})
	}
}

// apiFail shows what went wrong with a call to the server.
func (c *Console) apiFail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var ae *refusal
	var changed *changedError
	var partly *partlyDone
	switch {
	case errors.As(err, &partly):
		c.fail(w, r, s, http.StatusConflict, fmt.Sprintf("%d of %d memories were deleted before %s, which was not (it changed, went, or the store refused). Look at the list again; what was deleted has its history.", partly.done, partly.of, partly.key))
	case errors.Is(err, errNoMemory):
		c.fail(w, r, s, http.StatusNotFound, "There is no memory under that name (it may have been deleted).")
	case errors.Is(err, errRestoreDeletion):
		c.fail(w, r, s, http.StatusBadRequest, "That version records the memory's deletion and has no text. Restore the version before it.")
	case errors.Is(err, errNoVersion):
		c.fail(w, r, s, http.StatusNotFound, "The memory has no such version (another memory's version cannot be restored here).")
	case errors.As(err, &changed) || (errors.As(err, &ae) && ae.Status == http.StatusPreconditionFailed):
		c.fail(w, r, s, http.StatusConflict, "The memory changed since the confirmation page showed it; nothing was changed. Look at it again, then confirm again.")
	case errors.As(err, &ae):
		c.fail(w, r, s, ae.Status, "The server refused: "+ae.Message)
	case errors.Is(err, context.DeadlineExceeded):
		c.fail(w, r, s, http.StatusServiceUnavailable, "The server took too long to answer. Try again.")
	default:
		c.log.Error("console: a page failed", "path", r.URL.Path, "error", err)
		c.fail(w, r, s, http.StatusInternalServerError, "The server could not complete the request. Try again; if it persists, see the server's log.")
	}
}

type repoRow struct {
	Name     string
	URL      string
	Memories int
	Changed  time.Time
	Version  int64
	Policy   string
	Pending  int
	// ReviewURL is the review queue of this repo alone.
	ReviewURL string
}

type storeRow struct {
	Name, ID, URL string
	Memories      int64
	Changed       time.Time
	Archived      bool
	Policy        string
	Pending       int
	ReviewURL     string // the review queue of this store alone
}

func (c *Console) home(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	repos, err := c.h.Repos(ctx, s.grant)
	if err != nil && !errors.Is(err, teamserver.ErrNoRepoListing) {
		c.apiFail(w, r, s, err)
		return
	}
	stores, err := c.h.MemStores(ctx, s.grant)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	// One listing of the pending proposals gives every row its count.
	ps, err := c.pending(ctx, s)
	if err != nil {
		c.reviewFail(w, r, s, err)
		return
	}
	waiting := map[teamserver.Target]int{}
	for _, p := range ps {
		waiting[p.Target]++
	}
	org := s.grant.Organization
	var rr []repoRow
	for _, ri := range repos {
		t := teamserver.Target{Kind: teamserver.TargetRepo, Name: ri.Name}
		pol, err := c.h.Policy(ctx, org, t)
		if err != nil {
			c.reviewFail(w, r, s, err)
			return
		}
		rr = append(rr, repoRow{Name: ri.Name, URL: c.opts.Prefix + "/repos/" + ri.Name, Memories: ri.Entries, Changed: ri.LastModified, Version: ri.Version,
			Policy: pol, Pending: waiting[t], ReviewURL: c.opts.Prefix + "/review?" + url.Values{"repo": {ri.Name}}.Encode()})
	}
	var sr []storeRow
	for _, st := range stores {
		t := teamserver.Target{Kind: teamserver.TargetStore, Name: st.ID}
		pol, err := c.h.Policy(ctx, org, t)
		if err != nil {
			c.reviewFail(w, r, s, err)
			return
		}
		sr = append(sr, storeRow{Name: st.Name, ID: st.ID, URL: c.opts.Prefix + "/stores/" + st.ID, Memories: st.Memories, Changed: st.Updated, Archived: !st.Archived.IsZero(),
			Policy: pol, Pending: waiting[t], ReviewURL: c.opts.Prefix + "/review?" + url.Values{"store": {st.ID}}.Encode()})
	}
	data := map[string]any{"Repos": rr, "Stores": sr, "Waiting": len(ps), "Patterns": s.grant.Repos, "Policies": []string{teamserver.PolicyOpen, teamserver.PolicyReview, teamserver.PolicyReadOnly},
		"PolicyAction": c.opts.Prefix + "/policy"}
	if q := r.URL.Query(); q.Get("done") == "policy" {
		data["Done"] = "The policy of " + q.Get("name") + " is now " + q.Get("policy") + "."
	}
	c.page(w, r, s, http.StatusOK, "home", data)
}

type memRow struct {
	Key, URL, Type, Description, Author string
	Updated                             time.Time
}

// memoryURL is the console path of one memory's page.
func memoryURL(src source, page, key string, extra ...string) string {
	q := url.Values{"key": {key}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return src.base() + "/" + page + "?" + q.Encode()
}

func (c *Console) list(w http.ResponseWriter, r *http.Request, s *session, src source) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	all, err := src.list(ctx)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	q := r.URL.Query()
	typ, author, text := q.Get("type"), q.Get("author"), strings.TrimSpace(q.Get("q"))
	lowText := strings.ToLower(text)
	types, authors := map[string]bool{}, map[string]bool{}
	var rows []memRow
	for _, it := range all {
		content := redacted(it.Content) // shown and searched alike: no credential, not even by prefix
		fields, _ := splitFrontmatter(content)
		t := fieldValue(fields, "type")
		types[t], authors[it.Author] = true, true
		if (typ != "" && t != typ) || (author != "" && it.Author != author) ||
			(text != "" && !strings.Contains(strings.ToLower(it.Key), lowText) && !strings.Contains(strings.ToLower(content), lowText)) {
			continue
		}
		desc := fieldValue(fields, "description")
		if desc == "" {
			desc = fieldValue(fields, "name")
		}
		rows = append(rows, memRow{Key: it.Key, URL: memoryURL(src, "memory", it.Key), Type: t, Description: desc, Author: it.Author, Updated: it.Updated})
	}
	by, desc := sortRows(rows, q.Get("sort"), q.Get("order"))
	pg := pageOf(q, len(rows), c.opts.PageSize)
	shown := rows[pg.first:pg.last]
	listURL := func(n int, by string, desc bool) string {
		v := url.Values{}
		for k, val := range map[string]string{"type": typ, "author": author, "q": text} {
			if val != "" {
				v.Set(k, val)
			}
		}
		if by != "key" || desc {
			v.Set("sort", by)
			if desc {
				v.Set("order", "desc")
			}
		}
		return pageLink(src.base(), v, n)
	}
	var cols []sortCol
	for _, col := range listColumns {
		sc := sortCol{Label: col.label, URL: listURL(1, col.by, col.by == "updated")}
		if col.by == by {
			sc.Sort = "ascending"
			if desc {
				sc.Sort = "descending"
			}
			sc.URL = listURL(1, col.by, !desc)
		}
		cols = append(cols, sc)
	}
	data := map[string]any{"Src": srcView(src), "Rows": shown, "Total": len(all), "Matching": len(rows),
		"Type": typ, "Author": author, "Q": text, "Types": keys(types), "Authors": keys(authors),
		"PageN": pg.n, "Pages": pg.pages, "Cols": cols, "DeleteAction": src.base() + "/delete"}
	if q.Get("done") == "deleted" {
		if n, err := strconv.Atoi(q.Get("count")); err == nil && n > 0 {
			data["Done"] = strconv.Itoa(n) + " memories were deleted. Their history is kept: open a memory's history from the activity page to restore a version."
		} else {
			data["Done"] = "The memory " + q.Get("key") + " was deleted. Its history is kept:"
			data["UndoURL"] = memoryURL(src, "history", q.Get("key"))
		}
	}
	pg.link(data, "Prev", "Next", func(n int) string { return listURL(n, by, desc) })
	c.page(w, r, s, http.StatusOK, "list", data)
}

// paging is one page of a list of n items, size to a page: the page a
// request asked for (?page=, clamped to the pages there are), and the
// bounds of its items.
type paging struct{ n, pages, first, last int }

func pageOf(q url.Values, n, size int) paging {
	p := paging{pages: max(1, (n+size-1)/size)}
	p.n, _ = strconv.Atoi(q.Get("page"))
	p.n = min(max(p.n, 1), p.pages)
	p.first = min((p.n-1)*size, n)
	p.last = min(p.n*size, n)
	return p
}

// link sets data[prev] and data[next] to the URLs of the neighbouring
// pages there are.
func (p paging) link(data map[string]any, prev, next string, url func(page int) string) {
	if p.n > 1 {
		data[prev] = url(p.n - 1)
	}
	if p.n < p.pages {
		data[next] = url(p.n + 1)
	}
}

// pageLink is base with the query v and, past the first, the page.
func pageLink(base string, v url.Values, page int) string {
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return base
	}
	return base + "?" + v.Encode()
}

// listColumns are the memory list's columns, each sortable.
var listColumns = []struct{ by, label string }{
	{"key", "Memory"}, {"type", "Type"}, {"description", "Description"}, {"author", "Author"}, {"updated", "Last change"},
}

// sortCol is a column header of the memory list: its label, the link
// that sorts by it (or reverses the order), and how it sorts the list
// now ("ascending", "descending" or "" when another column does).
type sortCol struct{ Label, URL, Sort string }

// sortRows orders the rows by a column (the key when by names none) and
// returns the column and direction it used. Ties keep key order.
func sortRows(rows []memRow, by, order string) (string, bool) {
	desc := order == "desc"
	var less func(a, b memRow) int
	switch by {
	case "type":
		less = func(a, b memRow) int { return strings.Compare(a.Type, b.Type) }
	case "description":
		less = func(a, b memRow) int {
			return strings.Compare(strings.ToLower(a.Description), strings.ToLower(b.Description))
		}
	case "author":
		less = func(a, b memRow) int { return strings.Compare(a.Author, b.Author) }
	case "updated":
		less = func(a, b memRow) int { return a.Updated.Compare(b.Updated) }
	default:
		by = "key"
		less = func(a, b memRow) int { return strings.Compare(a.Key, b.Key) }
	}
	slices.SortStableFunc(rows, func(a, b memRow) int {
		c := less(a, b)
		if desc {
			c = -c
		}
		if c == 0 {
			c = strings.Compare(a.Key, b.Key)
		}
		return c
	})
	return by, desc
}

// keys returns a set's members in order, without the empty string.
func keys(m map[string]bool) []string {
	return slices.DeleteFunc(slices.Sorted(maps.Keys(m)), func(k string) bool { return k == "" })
}

type srcInfo struct{ Kind, Name, URL string }

func srcView(src source) srcInfo { return srcInfo{Kind: src.kind(), Name: src.name(), URL: src.base()} }

func (c *Console) memory(w http.ResponseWriter, r *http.Request, s *session, src source) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	key := r.URL.Query().Get("key")
	it, err := src.get(ctx, key)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	it.Content = redacted(it.Content)
	fields, body := splitFrontmatter(it.Content)
	c.page(w, r, s, http.StatusOK, "memory", map[string]any{"Src": srcView(src), "Item": it, "Fields": fields,
		"HTML": c.render.html(body), "HistoryURL": memoryURL(src, "history", key), "DeleteURL": memoryURL(src, "delete", key),
		"Done": doneMessage(r.URL.Query().Get("done"))})
}

// doneMessage is the notice shown after an action.
func doneMessage(done string) string {
	switch done {
	case "restored":
		return "The version was restored: it is the memory's current text."
	}
	return ""
}

type versionRow struct {
	version
	Label      string
	RestoreURL string
}

func (c *Console) historyPage(w http.ResponseWriter, r *http.Request, s *session, src source) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	q := r.URL.Query()
	key := q.Get("key")
	vs, err := src.history(ctx, key)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	if len(vs) == 0 {
		c.apiFail(w, r, s, errNoMemory)
		return
	}
	rows := make([]versionRow, len(vs))
	deleted := vs[0].Deleted // the memory is deleted: every version with text may come back
	for i, v := range vs {
		rows[i] = versionRow{version: v, Label: versionLabel(src, v, i)}
		if !v.Deleted && (i > 0 || deleted) {
			rows[i].RestoreURL = memoryURL(src, "restore", key, "version", v.ID)
		}
	}
	from, to := q.Get("from"), q.Get("to")
	if from == "" && to == "" {
		// By default the two newest versions that hold text.
		var texts []string
		for _, v := range vs {
			if !v.Deleted {
				texts = append(texts, v.ID)
			}
		}
		if len(texts) > 1 {
			from, to = texts[1], texts[0]
		}
	}
	data := map[string]any{"Src": srcView(src), "Key": key, "Versions": rows, "From": from, "To": to, "Deleted": deleted,
		"MemoryURL": memoryURL(src, "memory", key), "Action": src.base() + "/history"}
	if from != "" && to != "" {
		if !slices.ContainsFunc(vs, func(v version) bool { return v.ID == from }) || !slices.ContainsFunc(vs, func(v version) bool { return v.ID == to }) {
			c.fail(w, r, s, http.StatusNotFound, "The memory has no such version (it may be past the server's retention).")
			return
		}
		a, _, err := src.version(ctx, key, from)
		if err != nil {
			c.apiFail(w, r, s, err)
			return
		}
		b, _, err := src.version(ctx, key, to)
		if err != nil {
			c.apiFail(w, r, s, err)
			return
		}
		data["Diff"] = diff(key+" ("+labelOf(rows, from)+")", key+" ("+labelOf(rows, to)+")", a, b)
		data["Compared"] = true
	}
	c.page(w, r, s, http.StatusOK, "history", data)
}

func versionLabel(src source, v version, i int) string {
	l := "version " + v.ID
	if src.kind() == "store" {
		switch i {
		case 0:
			l = "latest change"
		case 1:
			l = "1 change back"
		default:
			l = strconv.Itoa(i) + " changes back"
		}
	}
	return l
}

func labelOf(rows []versionRow, id string) string {
	for _, r := range rows {
		if r.ID == id {
			return r.Label
		}
	}
	return id
}

func (c *Console) restoreConfirm(w http.ResponseWriter, r *http.Request, s *session, src source) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	key, id := r.URL.Query().Get("key"), r.URL.Query().Get("version")
	cur, err := src.get(ctx, key)
	gone := errors.Is(err, errNoMemory)
	if err != nil && !gone {
		c.apiFail(w, r, s, err)
		return
	}
	old, deleted, err := src.version(ctx, key, id)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	if deleted {
		c.apiFail(w, r, s, errRestoreDeletion)
		return
	}
	c.page(w, r, s, http.StatusOK, "restore", map[string]any{"Src": srcView(src), "Key": key, "Version": id, "Gone": gone, "Seen": seenText(cur.Content, gone),
		"Diff": diff(key+" (now)", key+" (restored)", cur.Content, old), "Action": src.base() + "/restore",
		"MemoryURL": memoryURL(src, "memory", key)})
}

func (c *Console) restore(w http.ResponseWriter, r *http.Request, s *session, src source) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	key, id := r.PostFormValue("key"), r.PostFormValue("version")
	cur, err := src.get(ctx, key)
	gone := errors.Is(err, errNoMemory)
	if err != nil && !gone {
		c.apiFail(w, r, s, err)
		return
	}
	if !c.unchangedSince(w, r, s, cur, gone, r.PostFormValue("seen")) {
		return
	}
	if err := src.restore(ctx, key, id); err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	c.log.Info("console: a version was restored", "tenant", s.grant.Organization, "who", s.grant.Author(), "kind", src.kind())
	http.Redirect(w, r, memoryURL(src, "memory", key, "done", "restored"), http.StatusSeeOther)
}

// maxBulk is the most memories one confirmation deletes.
const maxBulk = 200

// chosenKeys are the distinct keys a form named, in its order.
func chosenKeys(vals []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range vals {
		if k != "" && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// deletion is one memory on the delete confirmation page.
type deletion struct {
	Item item
	Seen string
}

func (c *Console) deleteConfirm(w http.ResponseWriter, r *http.Request, s *session, src source) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	keys := chosenKeys(r.URL.Query()["key"])
	switch {
	case len(keys) == 0:
		c.fail(w, r, s, http.StatusBadRequest, "No memory was chosen. Go back, tick the memories to delete, and press Delete selected again.")
		return
	case len(keys) > maxBulk:
		c.fail(w, r, s, http.StatusBadRequest, "At most 200 memories are deleted at once. Go back and choose fewer.")
		return
	}
	all, err := src.list(ctx)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	byKey := make(map[string]item, len(all))
	for _, it := range all {
		byKey[it.Key] = it
	}
	var ds []deletion
	for _, k := range keys {
		it, ok := byKey[k]
		if !ok {
			c.fail(w, r, s, http.StatusNotFound, "There is no memory under the name "+strconv.Quote(k)+" (it may have been deleted). Go back to the list and choose again.")
			return
		}
		seen := seenText(it.Content, false)
		it.Content = redacted(it.Content)
		ds = append(ds, deletion{Item: it, Seen: seen})
	}
	back := src.base()
	if len(ds) == 1 {
		back = memoryURL(src, "memory", keys[0])
	}
	c.page(w, r, s, http.StatusOK, "delete", map[string]any{"Src": srcView(src), "Items": ds, "Action": src.base() + "/delete", "Back": back})
}

func (c *Console) remove(w http.ResponseWriter, r *http.Request, s *session, src source) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, s, http.StatusBadRequest, "The form could not be read. Go back and confirm again.")
		return
	}
	keys, seens := r.PostForm["key"], r.PostForm["seen"]
	for len(seens) < len(keys) {
		seens = append(seens, "") // refused below as changed, unless gone
	}
	if len(keys) == 0 || len(keys) > maxBulk || len(chosenKeys(keys)) != len(keys) {
		c.fail(w, r, s, http.StatusBadRequest, "The confirmation did not name its memories one by one. Go back to the list and choose again.")
		return
	}
	if err := src.remove(ctx, keys, seens); err != nil {
		c.apiFail(w, r, s, err) // deleting what is gone, or what changed, says so
		return
	}
	c.log.Info("console: memories were deleted", "tenant", s.grant.Organization, "who", s.grant.Author(), "kind", src.kind(), "count", len(keys))
	q := url.Values{"done": {"deleted"}, "key": {keys[0]}}
	if len(keys) > 1 {
		q = url.Values{"done": {"deleted"}, "count": {strconv.Itoa(len(keys))}}
	}
	http.Redirect(w, r, src.base()+"?"+q.Encode(), http.StatusSeeOther)
}

// seenText fingerprints the text a confirmation page showed ("gone" for
// a deleted memory), so the change it confirms is refused if the memory
// changed in between.
func seenText(content string, gone bool) string {
	if gone {
		return "gone"
	}
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// unchangedSince reports whether the memory (cur, or gone) is still what
// the confirmation page showed (seen); if not, it answers 409 and the
// change is not made: someone wrote it meanwhile, and that write stays.
func (c *Console) unchangedSince(w http.ResponseWriter, r *http.Request, s *session, cur item, gone bool, seen string) bool {
	if seen == "" || seenText(cur.Content, gone) != seen {
		c.fail(w, r, s, http.StatusConflict, "The memory changed since the confirmation page showed it; nothing was changed. Look at it again, then confirm again.")
		return false
	}
	return true
}

type activityRow struct {
	Time      time.Time
	Who, Repo string
	Op        string // a store's operation (created, modified, deleted)
	RepoURL   string
	Keys      []activityKey
	More      int // keys of the write beyond those shown
	// Counts sums up a write of more keys than are shown: "480 created,
	// 20 deleted" (a repo write whose operations were recorded).
	Counts string
}

// activityKeys is how many keys of one write a row of the activity page
// names; a bulk write says how many more it changed.
const activityKeys = 10

// activityKey is one key of a write, and what the write did to it
// (created, changed, deleted; "" when not recorded).
type activityKey struct{ Key, URL, Op string }

// opCounts says how many keys a write created, changed and deleted.
func opCounts(ops []string) string {
	n := map[string]int{}
	for _, op := range ops {
		n[op]++
	}
	var parts []string
	for _, op := range []string{teamserver.KeyCreated, teamserver.KeyChanged, teamserver.KeyDeleted} {
		if n[op] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[op], op))
		}
	}
	return strings.Join(parts, ", ")
}

// activity lists the recent writes to the token's repos and memory
// stores, newest first,
// by whom: every token that wrote, or the one asked for.
func (c *Console) activity(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	repos, err := c.h.Repos(ctx, s.grant)
	if err != nil && !errors.Is(err, teamserver.ErrNoRepoListing) {
		c.apiFail(w, r, s, err)
		return
	}
	who := r.URL.Query().Get("who")
	var rows []activityRow
	whos := map[string]int{}
	for _, ri := range repos {
		src := &repoSource{c: c, r: r, s: s, repo: ri.Name}
		var log []teamwire.LogEntry
		if err := src.get0(ctx, url.Values{"view": {"log"}, "limit": {"100"}}, &log); err != nil {
			c.apiFail(w, r, s, err)
			return
		}
		for _, e := range log {
			whos[e.Author]++
			if who != "" && e.Author != who {
				continue
			}
			t, _ := time.Parse(time.RFC3339Nano, e.Time)
			row := activityRow{Time: t, Who: e.Author, Repo: ri.Name, RepoURL: src.base()}
			recorded := len(e.Ops) == len(e.Keys)
			for i, k := range e.Keys {
				if i == activityKeys {
					row.More = len(e.Keys) - i
					if recorded {
						row.Counts = opCounts(e.Ops)
					}
					break
				}
				key := activityKey{Key: k, URL: memoryURL(src, "history", k)}
				if recorded {
					key.Op = e.Ops[i]
				}
				row.Keys = append(row.Keys, key)
			}
			rows = append(rows, row)
		}
	}
	stores, err := c.h.MemStores(ctx, s.grant)
	if err != nil {
		c.apiFail(w, r, s, err)
		return
	}
	for _, st := range stores {
		src := &storeSource{c: c, r: r, s: s, st: st}
		vs, err := src.recentVersions(ctx)
		if err != nil {
			c.apiFail(w, r, s, err)
			return
		}
		for _, v := range vs {
			whos[v.author()]++
			if who != "" && v.author() != who {
				continue
			}
			t, _ := time.Parse(time.RFC3339Nano, v.CreatedAt)
			row := activityRow{Time: t, Who: v.author(), Repo: st.Name, RepoURL: src.base(), Op: v.Operation}
			if v.Path != nil {
				row.Keys = append(row.Keys, activityKey{Key: *v.Path, URL: memoryURL(src, "history", *v.Path)})
			}
			rows = append(rows, row)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Time.After(rows[j].Time) })
	if len(rows) > 200 {
		rows = rows[:200]
	}
	type whoRow struct {
		Name, URL string
		Writes    int
	}
	var wr []whoRow
	for _, n := range slices.Sorted(maps.Keys(whos)) {
		wr = append(wr, whoRow{Name: n, URL: c.opts.Prefix + "/activity?" + url.Values{"who": {n}}.Encode(), Writes: whos[n]})
	}
	c.page(w, r, s, http.StatusOK, "activity", map[string]any{"Rows": rows, "Who": who, "Whos": wr})
}

func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"ago":   func(t time.Time) string { return ago(c.opts.Now(), t) },
		"exact": exact,
		"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		// policyForm is what the policy form of one row needs.
		"policyForm": func(page map[string]any, kind, name, label, policy string) map[string]any {
			return map[string]any{"Action": page["PolicyAction"], "CSRF": page["CSRF"], "Policies": page["Policies"],
				"Kind": kind, "Name": name, "Label": label, "Policy": policy}
		},
	}
}
