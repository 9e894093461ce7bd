package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/httpretry"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"golang.org/x/text/unicode/norm"
)

// Remote is one repo of a team memory server as a foldersync.Remote:
// the team repo protocol (SPEC 2.4) as a driver of the sync engine.
//
// List reads the repo with If-None-Match set to the checksum of the
// listing it was given (a 304 answers Unchanged); Get serves the
// content of the last full read; Deleted answers from the repo's
// tombstones; Apply sends a delta push: only the changed entries and
// the keys to delete, in batches within the server's limits, each
// conditional on the repo's checksum (If-Match). A key the server or
// the protocol cannot take is refused on its own and the rest goes
// through.
//
// A Remote keeps what it last read or wrote of the repo; calls on one
// Remote are serialized.
type Remote struct {
	t *transport

	mu sync.Mutex
	// cur is the repo as this Remote last read or wrote it (nil before
	// the first read, or after a write met another one).
	cur *repoView
	// hashesOnly lists with the hashes view (no content).
	hashesOnly bool
	// maxEntries is the server's entry limit once a 413 named it.
	maxEntries int
	// limitErrors makes a 413 for the entry limit the error of Apply
	// rather than refusals of the new keys (the Client learns the limit
	// across rounds in its SyncState).
	limitErrors bool
	stats       traffic // of the rounds (not of the long-poll's waits)
	// hostile are keys of the last listing no team directory may hold
	// (a traversal, a lookalike of one): left out of it.
	hostile map[string]bool
	// listed is the repo's identity as the last listing found it (before
	// this Remote's own writes moved it on).
	listed repoView
}

// repoView is what a Remote knows of the repo.
type repoView struct {
	store   string
	version int64
	tag     string
	// exact: tag is the checksum of sums (what the server would answer
	// a conditional read with 304 for).
	exact   bool
	empty   bool              // the server has no data for the repo
	sums    map[string]string // key -> "sha256:..." entry checksum
	entries map[string]string // nil when the content was not read
	tombs   map[string]time.Time
	authors map[string]teamwire.Attribution
}

// NewRemote returns the driver for the repo cfg names (BaseURL, Path,
// Repo, Token, HTTP, the retry settings, Door, Session, Origin, Logger,
// MaxReplyBytes; the other fields are the Client's). The screens and
// the secret scanner are the engine's (foldersync.Engine screens every
// write once, for every driver) and the server's.
func NewRemote(cfg Options) (*Remote, error) {
	t, err := newTransport(cfg)
	if err != nil {
		return nil, err
	}
	return &Remote{t: t}, nil
}

// Remote returns the client's driver, the one its rounds run through:
// its Traffic counts their requests, and its LongPoll wakes a watcher.
func (c *Client) Remote() *Remote { return c.remote }

// Dir is the team directory.
func (c *Client) Dir() string { return c.teamDir }

var _ foldersync.Remote = (*Remote)(nil)

// HashesOnly makes List read the repo's checksums without its content
// (for a round that never writes locally); Get then reads the content
// when asked.
func (r *Remote) HashesOnly(on bool) {
	r.mu.Lock()
	r.hashesOnly = on
	r.mu.Unlock()
}

// Traffic reports the requests sent and the request body bytes sent
// since the Remote was made, by every call but Wait and LongPoll.
func (r *Remote) Traffic() (requests int, bytesSent int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats.Requests, r.stats.BytesSent
}

// sumHex turns the protocol's "sha256:<hex>" into the engine's <hex>.
func sumHex(s string) string { return strings.TrimPrefix(s, "sha256:") }

// sumWire turns the engine's <hex> back into the protocol's form.
func sumWire(s string) string {
	if s == "" || strings.HasPrefix(s, "sha256:") {
		return s
	}
	return "sha256:" + s
}

// List reads the repo. prev's entries name the content the caller last
// saw: the request carries their repo checksum as If-None-Match, and a
// 304 answers Unchanged.
func (r *Remote) List(ctx context.Context, prev foldersync.Listing) (foldersync.Listing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	known := r.known(prev)
	v, err := r.read(ctx, known, !r.hashesOnly)
	if err != nil {
		return foldersync.Listing{}, err
	}
	if known != nil && v == known && prev.Tag != "" && prev.Tag == known.tag {
		// A 304 on the content prev describes: nothing to build.
		r.cur = v
		return foldersync.Listing{Store: v.store, Generation: v.version, Tag: prev.Tag, Unchanged: true,
			Entries: prev.Entries, Deleted: prev.Deleted}, nil
	}
	l := listingOf(v)
	r.listed = repoView{store: v.store, version: v.version, empty: v.empty}
	r.hostile = nil
	for k := range l.Entries {
		if unsafeKey(k) {
			if r.hostile == nil {
				r.hostile = map[string]bool{}
			}
			r.hostile[k] = true
			delete(l.Entries, k)
		}
	}
	maps.DeleteFunc(l.Deleted, func(k string, _ time.Time) bool { return unsafeKey(k) })
	if wentBack(v, r.cur) || wentBack(v, known) || (prev.Tag != "" && v.version == prev.Generation && v.version > 0 && v.tag != prev.Tag) {
		// One version cannot hold two contents: the repo went back (a
		// backup restored) and was written again since. Its generation
		// is older than the one seen here.
		l.Generation = v.version - 1
	}
	r.cur = v
	if known != nil && v == known && prev.Tag != "" && sameEntries(l.Entries, prev.Entries) {
		l.Unchanged = true
		l.Entries = prev.Entries
	}
	return l, nil
}

// unsafeKey reports a key no team directory may hold: one SanitizeKey
// refuses, or one that is not a clean relative path (a traversal).
func unsafeKey(k string) bool {
	return SanitizeKey(k) != nil || path.Clean(k) != k || k == ".." || strings.HasPrefix(k, "../") || strings.HasPrefix(k, "/")
}

// wentBack reports whether v holds other content at the version seen
// holds: the repo was restored from a backup and written again since.
func wentBack(v, seen *repoView) bool {
	return seen != nil && v != seen && seen.version > 0 && seen.tag != "" && v.version == seen.version && v.tag != "" && v.tag != seen.tag
}

// known returns what a conditional read may be answered with: this
// Remote's own view when it is exact, else prev when its entries are
// the content its tag stands for (or when prev has no tag: its entries'
// checksum is the tag the server would give them).
func (r *Remote) known(prev foldersync.Listing) *repoView {
	if r.cur != nil && r.cur.exact && r.cur.tag != "" && !r.cur.empty {
		return r.cur
	}
	if prev.Tag == "" && len(prev.Entries) == 0 {
		return nil
	}
	sums := make(map[string]string, len(prev.Entries))
	authors := map[string]teamwire.Attribution{}
	for k, e := range prev.Entries {
		sums[k] = sumWire(e.Sum)
		if e.Author != (foldersync.Author{}) {
			authors[k] = attributionOf(e.Author)
		}
	}
	tag := teamwire.RepoChecksum(sums)
	if prev.Tag != "" && prev.Tag != tag {
		return nil // the tag is not this content's: ask for all of it
	}
	return &repoView{store: prev.Store, version: prev.Generation, tag: tag, exact: true, sums: sums, tombs: maps.Clone(prev.Deleted), authors: authors}
}

// read fetches the repo: the full view when content is wanted, else the
// hashes view; conditional on known's tag when known is set (a 304
// returns known itself, with the reply's store identity).
func (r *Remote) read(ctx context.Context, known *repoView, content bool) (*repoView, error) {
	u := r.t.endpoint
	if !content {
		u += "&view=hashes"
	}
	headers := map[string]string{}
	if known != nil {
		headers["If-None-Match"] = `"` + known.tag + `"`
	}
	resp, body, err := r.t.send(ctx, &r.stats, http.MethodGet, u, nil, headers)
	if err != nil {
		return nil, err
	}
	store := resp.Header.Get(teamwire.StoreIDHeader)
	switch resp.Status {
	case http.StatusNotModified:
		if known == nil {
			return nil, &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the server answered 304 to a read that asked for no tag")}
		}
		if store != "" {
			known.store = store
		}
		return known, nil
	case http.StatusNotFound:
		return &repoView{store: store, empty: true, sums: map[string]string{}, entries: map[string]string{}}, nil
	}
	if content && int64(len(body)) >= r.t.replyCap.Load() && r.t.learnLimits(ctx, &r.stats) {
		return r.read(ctx, known, content) // the cap grew to what the server allows
	}
	v := &repoView{store: store}
	if content {
		var data teamwire.TeamMemoryData
		if err := json.Unmarshal(body, &data); err != nil {
			return nil, &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the server's reply is not team memory JSON")}
		}
		v.version, v.tag, v.sums, v.entries = data.Version, data.Checksum, data.Content.EntryChecksums, data.Content.Entries
		v.authors = data.Content.EntryAuthors
		v.tombs = tombTimes(data.Content.DeletedEntries)
	} else {
		var hv teamwire.HashesView
		if err := json.Unmarshal(body, &hv); err != nil || hv.EntryChecksums == nil {
			return nil, &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the hashes view has no entryChecksums")}
		}
		v.version, v.tag, v.sums = hv.Version, hv.Checksum, hv.EntryChecksums
		v.tombs = tombTimes(hv.DeletedEntries)
	}
	if v.entries != nil {
		if v.sums == nil {
			v.sums = map[string]string{}
		}
		for k, c := range v.entries {
			if _, ok := v.sums[k]; !ok {
				v.sums[k] = teamwire.EntryChecksum(c) // a server that sent no checksum for it
			}
		}
	}
	if v.sums == nil {
		v.sums = map[string]string{}
	}
	v.exact = v.tag != "" && teamwire.RepoChecksum(v.sums) == v.tag
	return v, nil
}

func tombTimes(ms map[string]int64) map[string]time.Time {
	out := make(map[string]time.Time, len(ms))
	for k, at := range ms {
		out[k] = time.UnixMilli(at)
	}
	return out
}

// listingOf turns a view into the engine's listing.
func listingOf(v *repoView) foldersync.Listing {
	l := foldersync.Listing{Store: v.store, Generation: v.version, Tag: v.tag,
		Entries: make(map[string]foldersync.Entry, len(v.sums)), Deleted: make(map[string]time.Time, len(v.tombs))}
	for k, s := range v.sums {
		e := foldersync.Entry{Sum: sumHex(s)}
		if a, ok := v.authors[k]; ok {
			e.Author = authorOf(a)
		}
		l.Entries[k] = e
	}
	for k, at := range v.tombs {
		if _, live := v.sums[k]; !live {
			l.Deleted[k] = at
		}
	}
	return l
}

func authorOf(a teamwire.Attribution) foldersync.Author {
	out := foldersync.Author{Name: a.Author, Door: a.Door, Session: a.Session, Origin: a.Origin}
	if t, err := time.Parse(time.RFC3339Nano, a.Time); err == nil {
		out.Time = t
	}
	return out
}

func attributionOf(a foldersync.Author) teamwire.Attribution {
	out := teamwire.Attribution{Author: a.Name, Provenance: teamwire.Provenance{Door: a.Door, Session: a.Session, Origin: a.Origin}}
	if !a.Time.IsZero() {
		out.Time = a.Time.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func sameEntries(a, b map[string]foldersync.Entry) bool {
	return maps.EqualFunc(a, b, func(x, y foldersync.Entry) bool { return x.Sum == y.Sum })
}

// Get returns the content of paths: from the last full read when this
// Remote has one, else from a new one.
func (r *Remote) Get(ctx context.Context, paths []string) (map[string][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil || r.cur.entries == nil {
		v, err := r.read(ctx, nil, true)
		if err != nil {
			return nil, err
		}
		r.cur = v
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		if c, ok := r.cur.entries[p]; ok {
			out[p] = []byte(c)
		}
	}
	return out, nil
}

// Deleted answers from the repo's tombstones: a key deleted through the
// protocol has one (with its time); a key the repo lost without one has
// none.
func (r *Remote) Deleted(ctx context.Context, paths []string) (map[string]time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		v, err := r.read(ctx, nil, false)
		if err != nil {
			return nil, err
		}
		r.cur = v
	}
	out := map[string]time.Time{}
	for _, p := range paths {
		if at, ok := r.cur.tombs[p]; ok {
			if _, live := r.cur.sums[p]; !live {
				out[p] = at
			}
		}
	}
	return out, nil
}

// Check reports why the team protocol cannot carry a file: a reason
// that starts with the protocol's code, then a colon and what to do:
// "invalid_key" (not a name a team key may have), "not_nfc" (the name is
// not in Unicode NFC form), "too_large" (over teamwire.MaxEntryBytes),
// "nul_byte" (a NUL, which not every server store keeps), "not_utf8"
// (bytes JSON would not carry exactly). The screens every server applies
// and the secret scanner are the engine's, run once on every write
// (foldersync.SkipScreened, foldersync.SkipSecret).
func (r *Remote) Check(key string, content []byte) string {
	if teamwire.ValidateKeySyntax(key) != nil {
		return "invalid_key: the file's name is not a valid team memory key (a control character, a backslash or a character that looks like one, a slash or a dot, a traversal or too long); rename it"
	}
	if !norm.NFC.IsNormalString(key) {
		return "not_nfc: the file's name is not in Unicode NFC form, which the server refuses; rename it"
	}
	if len(content) > teamwire.MaxEntryBytes {
		return "too_large: the file is larger than the largest entry the server keeps; split it"
	}
	return foldersync.SkipContent(content)
}

// Apply pushes changes: the writes and deletions that pass Check and
// whose Expect is what this Remote last saw, in batches within the
// server's limits, each If-Match the repo's checksum. A 412 makes every
// change not yet applied a Mismatch; a key the server refuses is
// Refused and its batch is sent again without it.
func (r *Remote) Apply(ctx context.Context, changes []foldersync.Change) ([]foldersync.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]foldersync.Outcome, 0, len(changes))
	if r.cur == nil && len(changes) > 0 {
		v, err := r.read(ctx, nil, false)
		if err != nil {
			return nil, err
		}
		r.cur = v
	}
	var pending []foldersync.Change
	for _, ch := range changes {
		refused := ""
		if !ch.Delete {
			refused = r.Check(ch.Path, ch.Content)
		}
		switch {
		case ch.Delete && teamwire.ValidateKeySyntax(ch.Path) != nil:
			out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Refused, Reason: "invalid_key: not a valid team memory key"})
		case refused != "":
			out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Refused, Reason: refused})
		case (r.cur.exact || r.cur.empty) && sumHex(r.cur.sums[ch.Path]) != ch.Expect.Sum:
			out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Mismatch})
		default:
			pending = append(pending, ch)
		}
	}
	// Deletions first: they ride in the first batch.
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].Delete && !pending[j].Delete })
	pending, over := r.withinEntryLimit(pending)
	out = append(out, over...)
	queue := packChanges(pending, r.bodyLimit())
	for len(queue) > 0 {
		batch := queue[0]
		queue = queue[1:]
		done, err := r.put(ctx, batch)
		if err == nil {
			out = append(out, done...)
			continue
		}
		var se *SyncError
		if !errors.As(err, &se) {
			return out, err
		}
		switch {
		case se.Class == ClassConflict:
			// The repo moved since it was read: nothing of this batch or
			// the next is applied; the next round decides them again.
			for _, b := range append([][]foldersync.Change{batch}, queue...) {
				for _, ch := range b {
					out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Mismatch})
				}
			}
			r.cur = nil
			return out, nil
		case se.Class == ClassTooManyEntries && se.MaxEntries > 0 && r.maxEntries != se.MaxEntries && !r.limitErrors:
			r.maxEntries = se.MaxEntries
			rest, over := r.withinEntryLimit(batch)
			out = append(out, over...)
			if len(rest) > 0 {
				queue = append([][]foldersync.Change{rest}, queue...)
			}
		case keyRefusal(se):
			refused := keySet(se.Keys)
			var rest []foldersync.Change
			for _, ch := range batch {
				if refused[ch.Path] {
					out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Refused, Reason: refusalReason(se)})
				} else {
					rest = append(rest, ch)
				}
			}
			if len(rest) == len(batch) { // the server named no key of the batch
				return out, err
			}
			if len(rest) > 0 {
				queue = append([][]foldersync.Change{rest}, queue...)
			}
		case batchRefusal(se):
			// The server refused the batch without naming the key: halve
			// it until the key that it refuses travels alone.
			if len(batch) == 1 {
				out = append(out, foldersync.Outcome{Path: batch[0].Path, Status: foldersync.Refused, Reason: refusalReason(se)})
				continue
			}
			if se.Code == teamwire.CodeBodyTooLarge {
				r.t.learnLimits(ctx, &r.stats) // the next batches fit what it takes
			}
			half := len(batch) / 2
			queue = append([][]foldersync.Change{batch[:half], batch[half:]}, queue...)
		default:
			return out, err
		}
	}
	return out, nil
}

// keyRefusal reports a 400 that names the keys it refuses.
func keyRefusal(se *SyncError) bool {
	return se.Status == http.StatusBadRequest && len(se.Keys) > 0
}

// batchRefusal reports a refusal of one or more entries of a request
// that does not say which: sending them apart finds it.
func batchRefusal(se *SyncError) bool {
	switch se.Code {
	case teamwire.CodeInvalidKey, teamwire.CodeKeyNotNFC, teamwire.CodeInvalidText, teamwire.CodeEntryTooLarge, teamwire.CodeBodyTooLarge:
		return true
	}
	return false
}

// refusalReason is the Outcome.Reason of a refused key: the server's
// error code, then its words.
func refusalReason(se *SyncError) string {
	code := se.Code
	if code == "" {
		code = "refused"
	}
	if se.Err != nil {
		// The server speaks of the whole request; the rest of it goes on.
		return code + ": " + strings.TrimSuffix(se.Err.Error(), "; nothing was written")
	}
	return code
}

// keySet is the set of keys.
func keySet(keys []string) map[string]bool {
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	return set
}

// bodyLimit is the largest PUT body to send: the protocol's, or the
// server's when it holds less.
func (r *Remote) bodyLimit() int {
	limit := teamwire.MaxPutBodyBytes
	if lv := r.t.limits.Load(); lv != nil && lv.MaxBodyBytes > 0 && lv.MaxBodyBytes < int64(limit) {
		limit = int(lv.MaxBodyBytes)
	}
	return limit
}

// withinEntryLimit refuses the writes of new keys that would take the
// repo over the server's entry limit once learned (in path order: the
// first go).
func (r *Remote) withinEntryLimit(changes []foldersync.Change) (ok []foldersync.Change, over []foldersync.Outcome) {
	if r.maxEntries <= 0 || r.cur == nil {
		return changes, nil
	}
	count := len(r.cur.sums)
	for _, ch := range changes {
		if _, exists := r.cur.sums[ch.Path]; ch.Delete && exists {
			count--
		}
	}
	sorted := append([]foldersync.Change(nil), changes...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, ch := range sorted {
		if _, exists := r.cur.sums[ch.Path]; ch.Delete || exists {
			ok = append(ok, ch)
			continue
		}
		if count >= r.maxEntries {
			over = append(over, foldersync.Outcome{Path: ch.Path, Status: foldersync.Refused, Reason: "over_limit: the repo holds as many entries as the server allows"})
			continue
		}
		count++
		ok = append(ok, ch)
	}
	return ok, over
}

// packChanges packs changes greedily into batches whose PUT body stays
// within limit bytes (as batches does for files). A change that alone
// exceeds the limit travels in a batch of its own.
func packChanges(changes []foldersync.Change, limit int) [][]foldersync.Change {
	const envelope = len(`{"entries":{},"soft_delete_keys":[]}`)
	var out [][]foldersync.Change
	var cur []foldersync.Change
	size := envelope
	// A request carries one door, session and origin: changes written
	// through the same one go together, in the order they first come
	// (deletions, with the client's own, first).
	var order []memdir.Provenance
	groups := map[memdir.Provenance][]foldersync.Change{}
	for _, ch := range changes {
		if _, ok := groups[ch.Wrote]; !ok {
			order = append(order, ch.Wrote)
		}
		groups[ch.Wrote] = append(groups[ch.Wrote], ch)
	}
	changes = changes[:0:0]
	for _, p := range order {
		changes = append(changes, groups[p]...)
	}
	for _, ch := range changes {
		cost := jsonLen(ch.Path) + 2
		if !ch.Delete {
			cost += jsonLen(string(ch.Content))
		}
		if len(cur) > 0 && (size+cost > limit || ch.Wrote != cur[0].Wrote) {
			out = append(out, cur)
			cur, size = nil, envelope
		}
		cur = append(cur, ch)
		size += cost
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// put sends one batch, If-Match the repo's checksum, and records what
// the server did with each change in the Remote's view.
func (r *Remote) put(ctx context.Context, batch []foldersync.Change) ([]foldersync.Outcome, error) {
	body := teamwire.PutBody{Entries: map[string]string{}}
	for _, ch := range batch {
		if ch.Delete {
			body.SoftDeleteKeys = append(body.SoftDeleteKeys, ch.Path)
		} else {
			body.Entries[ch.Path] = string(ch.Content)
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	headers := map[string]string{"Content-Type": "application/json"}
	if len(batch) > 0 {
		maps.Copy(headers, provenanceHeaders(batch[0].Wrote, r.t.cfg)) // every change of a batch has one
	}
	if r.cur != nil && r.cur.tag != "" && !r.cur.empty {
		headers["If-Match"] = `"` + r.cur.tag + `"`
	}
	resp, respBody, err := r.t.send(ctx, &r.stats, http.MethodPut, r.t.endpoint, raw, headers)
	if err != nil {
		return nil, err
	}
	var pr teamwire.PutResult
	if err := json.Unmarshal(respBody, &pr); err != nil || pr.Checksum == "" {
		return nil, &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the server's reply to a push is not valid")}
	}
	inReview, rejected := keySet(pr.InReview), keySet(pr.Rejected)
	v := r.cur
	if v == nil {
		v = &repoView{sums: map[string]string{}}
	}
	if v.tombs == nil {
		v.tombs = map[string]time.Time{}
	}
	out := make([]foldersync.Outcome, 0, len(batch))
	now := r.t.cfg.Now()
	for _, ch := range batch {
		switch {
		case rejected[ch.Path]:
			out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Rejected, Reason: printable(pr.RejectedReasons[ch.Path], 300)})
		case inReview[ch.Path]:
			out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.InReview})
		case ch.Delete:
			delete(v.sums, ch.Path)
			delete(v.authors, ch.Path)
			if v.entries != nil {
				delete(v.entries, ch.Path)
			}
			v.tombs[ch.Path] = now
			out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Applied, Generation: pr.Version})
		default:
			sum := foldersync.Sum(ch.Content)
			v.sums[ch.Path] = sumWire(sum)
			delete(v.tombs, ch.Path)
			delete(v.authors, ch.Path) // the server names the new author on the next read
			if v.entries != nil {
				v.entries[ch.Path] = string(ch.Content)
			}
			out = append(out, foldersync.Outcome{Path: ch.Path, Status: foldersync.Applied, Entry: foldersync.Entry{Sum: sum}, Generation: pr.Version})
		}
	}
	if id := resp.Header.Get(teamwire.StoreIDHeader); id != "" {
		v.store = id
	}
	if !slices.ContainsFunc(out, func(o foldersync.Outcome) bool { return o.Status == foldersync.Applied }) {
		// Held for review or rejected, every change: this batch did not
		// move the repo, and the next batch goes as the read saw it (a
		// new repo without If-Match; it was refused with 412 on every
		// round). Unless the reply shows someone else moved it (created
		// it since the read): then the next batch is checked against this
		// view, meets 412 and the round looks again, instead of going
		// without If-Match over a teammate's new entries.
		seen := v.tag
		if v.empty {
			seen = teamwire.RepoChecksum(nil)
		}
		if pr.Checksum != seen {
			v.empty, v.tag, v.exact = false, teamwire.RepoChecksum(v.sums), true
		}
		r.cur = v
		return out, nil
	}
	v.version, v.tag, v.empty = pr.Version, pr.Checksum, false
	// A push without If-Match (the repo was empty when read) may have met
	// a teammate's write: then the tag is not the content this view
	// holds, and the next read must be a full one.
	v.exact = teamwire.RepoChecksum(v.sums) == pr.Checksum
	r.cur = v
	return out, nil
}

// Wait blocks until the repo's checksum differs from tag, or the
// server's longest wait passes (teamwire.MaxLongPoll). It reports whether
// the repo changed; a server without the long-poll gives
// ErrLongPollUnsupported.
func (r *Remote) Wait(ctx context.Context, tag string) (bool, error) {
	_, changed, err := r.wait(ctx, tag)
	return changed, err
}

func (r *Remote) wait(ctx context.Context, tag string) (string, bool, error) {
	var tr traffic // a wait is not a round's: Traffic leaves it out
	return r.t.waitForChange(ctx, &tr, tag, teamwire.MaxLongPoll)
}

// LongPoll waits on the server for the repo to change and calls notify
// each time it does (a foldersync.Watcher's Notify), so a teammate's
// write starts a round at once rather than at the next interval. It
// starts from the checksum this Remote last saw and returns when ctx
// ends (nil), or with ErrLongPollUnsupported when the server cannot
// wait (the watcher's interval rounds still run). Failed waits are tried
// again after a doubling pause of up to teamwire.MaxLongPoll.
func (r *Remote) LongPoll(ctx context.Context, notify func()) error {
	pause := time.Second
	tag, emptySeen := "", false
	for ctx.Err() == nil {
		if tag == "" {
			r.mu.Lock()
			if r.cur != nil && !r.cur.empty {
				tag = r.cur.tag
			}
			r.mu.Unlock()
		}
		if tag == "" {
			// Nothing seen yet (no round listed, or an empty repo): a
			// wait needs a checksum to wait on; ask for the current one.
			now, _, err := r.wait(ctx, "")
			if errors.Is(err, ErrLongPollUnsupported) {
				return err
			}
			if err == nil && now != "" {
				if emptySeen {
					notify() // the first memory of an empty repo
				}
				tag, emptySeen = now, false
				continue
			}
			emptySeen = emptySeen || err == nil
			if httpretry.Sleep(ctx, pause) != nil {
				break
			}
			continue
		}
		now, changed, err := r.wait(ctx, tag)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrLongPollUnsupported):
			return err
		case err != nil:
			if httpretry.Sleep(ctx, pause) != nil {
				return nil
			}
			pause = min(2*pause, teamwire.MaxLongPoll)
			continue
		}
		pause = time.Second
		if changed {
			notify()
			tag = now // "" when the repo has no data: wait for a round to see it
		}
	}
	return nil
}
