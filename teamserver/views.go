package teamserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// errNotModified stops a stream whose ETag the client already has.
var errNotModified = errors.New("not modified")

// getFull streams the whole repo: version and checksum come from the same
// snapshot as the entries, and entries go to the client as the store
// reads them, so memory stays near a buffer per request whatever the
// repo's size.
func (h *Handler) getFull(w http.ResponseWriter, r *http.Request, repo Repo) {
	inm := unquote(r.Header.Get("If-None-Match"))
	var bw *bufio.Writer
	first := true
	start := time.Now()
	snap, err := h.team.Stream(r.Context(), repo, func(head Snapshot) error {
		if inm != "" && inm == head.Checksum {
			return errNotModified
		}
		w.Header().Set("ETag", `"`+head.Checksum+`"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		bw = bufio.NewWriterSize(w, 64<<10)
		bw.WriteString(`{"organizationId":`)
		writeJSONTo(bw, repo.Tenant)
		bw.WriteString(`,"repo":`)
		writeJSONTo(bw, repo.Name)
		bw.WriteString(`,"version":` + strconv.FormatInt(head.Version, 10) + `,"lastModified":`)
		writeJSONTo(bw, head.LastModified.UTC().Format(time.RFC3339Nano))
		bw.WriteString(`,"checksum":`)
		writeJSONTo(bw, head.Checksum)
		bw.WriteString(`,"content":{"entries":{`)
		return nil
	}, func(key, content string) error {
		if !first {
			bw.WriteByte(',')
		}
		first = false
		writeJSONTo(bw, key)
		bw.WriteByte(':')
		writeJSONTo(bw, content)
		if bw.Buffered() == 0 {
			return r.Context().Err() // the client left: stop reading
		}
		return nil
	})
	h.metrics.StoreCall("stream", time.Since(start))
	switch {
	case errors.Is(err, errNotModified):
		w.Header().Set("ETag", `"`+inm+`"`)
		w.WriteHeader(http.StatusNotModified)
		return
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found_error", "team_memory_not_found", "no team memory for this repo yet")
		return
	case err != nil && bw == nil:
		h.storeError(w, err)
		return
	case err != nil:
		// The status is sent: end the connection so the client sees a cut
		// reply, never a complete-looking one.
		h.log.Error("team memory stream failed", "error", err)
		panic(http.ErrAbortHandler)
	}
	bw.WriteString(`},"entryChecksums":`)
	writeJSONTo(bw, snap.Checksums)
	if len(snap.Tombstones) > 0 {
		bw.WriteString(`,"deletedEntries":`)
		writeJSONTo(bw, snap.Tombstones)
	}
	// Who wrote each entry, for the prompt's attribution: read after
	// the stream, so a write in between may be named for a key whose
	// older content was sent (the next pull corrects it).
	if authors, err := h.team.Authors(r.Context(), repo); err == nil && len(authors) > 0 {
		out := make(map[string]teamwire.Attribution, len(authors))
		for k, rev := range authors {
			if _, live := snap.Checksums[k]; live {
				out[k] = teamwire.Attribution{Author: rev.Author, Time: rev.Time.UTC().Format(time.RFC3339), Provenance: rev.Provenance}
			}
		}
		bw.WriteString(`,"entryAuthors":`)
		writeJSONTo(bw, out)
	} else if err != nil {
		h.log.Warn("team memory authors unavailable", "error", err)
	}
	bw.WriteString("}}\n")
	_ = bw.Flush()
}

// writeJSONTo writes v as JSON; what the stream writes (strings, maps of
// checksums, tombstones and attributions) always marshals.
func writeJSONTo(bw *bufio.Writer, v any) {
	b, _ := json.Marshal(v)
	bw.Write(b)
}

// getHashes answers the hashes view from a cache kept per repo and
// version: a request costs one small read of the repo's head while the
// repo is unchanged. Several servers on one database share the version
// number, so a cache is never stale.
func (h *Handler) getHashes(w http.ResponseWriter, r *http.Request, repo Repo) {
	start := time.Now()
	head, err := h.team.Head(r.Context(), repo)
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found_error", "team_memory_not_found", "no team memory for this repo yet")
		return
	case err != nil:
		h.storeError(w, err)
		return
	}
	body, checksum, ok := h.hashes.get(repo, head.Version, head.Checksum)
	if !ok {
		snap, err := h.team.Get(r.Context(), repo, false)
		if err != nil {
			h.storeError(w, err)
			return
		}
		body, _ = json.Marshal(teamwire.HashesView{Version: snap.Version, Checksum: snap.Checksum, EntryChecksums: snap.Checksums, DeletedEntries: nonEmpty(snap.Tombstones)})
		body = append(body, '\n')
		checksum = snap.Checksum
		h.hashes.put(repo, snap.Version, snap.Checksum, body)
	}
	h.metrics.StoreCall("hashes", time.Since(start))
	w.Header().Set("ETag", `"`+checksum+`"`)
	if inm := unquote(r.Header.Get("If-None-Match")); inm != "" && inm == checksum && !r.URL.Query().Has("wait") {
		// A client that knows these checksums needs nothing more. (A
		// long-poll answered early keeps its 200: it says the wait ended
		// without a change.)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// getHistory lists a key's versions, or returns one version's content.
func (h *Handler) getHistory(w http.ResponseWriter, r *http.Request, repo Repo) {
	q := r.URL.Query()
	key := q.Get("key")
	if teamwire.ValidateKeySyntax(key) != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidKey, "key must be a valid team memory key")
		return
	}
	if v := q.Get("version"); v != "" {
		version, err := strconv.ParseInt(v, 10, 64)
		if err != nil || version <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidView, "version must be a positive number")
			return
		}
		rev, err := h.team.Revision(r.Context(), repo, key, version)
		switch {
		case errors.Is(err, ErrNoRevision):
			writeError(w, http.StatusNotFound, "not_found_error", teamwire.CodeNoRevision, "the key has no such version (never written then, or past the retention)")
		case err != nil:
			h.storeError(w, err)
		default:
			writeJSON(w, http.StatusOK, teamwire.RevisionView{Key: key, Version: rev.Version, Content: withoutCredentials(rev.Content), Deleted: rev.Deleted})
		}
		return
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	revs, err := h.team.History(r.Context(), repo, key, limit)
	if err != nil {
		h.storeError(w, err)
		return
	}
	out := teamwire.HistoryView{Key: key, Versions: []teamwire.HistoryVersion{}}
	for _, rev := range revs {
		out.Versions = append(out.Versions, teamwire.HistoryVersion{Version: rev.Version, Checksum: rev.Checksum, Author: rev.Author,
			Time: rev.Time.UTC().Format(time.RFC3339Nano), Deleted: rev.Deleted, Provenance: rev.Provenance})
	}
	writeJSON(w, http.StatusOK, out)
}

// getLog lists the repo's recent writes.
func (h *Handler) getLog(w http.ResponseWriter, r *http.Request, repo Repo) {
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	changes, err := h.team.Log(r.Context(), repo, since, limit)
	if err != nil {
		h.storeError(w, err)
		return
	}
	out := []teamwire.LogEntry{}
	for _, c := range changes {
		keys := c.Keys
		if keys == nil {
			keys = []string{}
		}
		ops := c.Ops
		if len(ops) != len(keys) {
			ops = nil // not recorded, or not one per key: say nothing
		}
		out = append(out, teamwire.LogEntry{Version: c.Version, Time: c.Time.UTC().Format(time.RFC3339Nano), Author: c.Author, Keys: keys, Ops: ops, Provenance: c.Provenance})
	}
	writeJSON(w, http.StatusOK, out)
}

// hashCache keeps the hashes view's body per repo and version.
type hashCache struct {
	mu      sync.Mutex
	max     int
	entries map[Repo]cachedHashes
}

type cachedHashes struct {
	version  int64
	checksum string
	body     []byte
}

func newHashCache(max int) *hashCache {
	return &hashCache{max: max, entries: map[Repo]cachedHashes{}}
}

func (c *hashCache) get(repo Repo, version int64, checksum string) ([]byte, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[repo]
	if !ok || e.version != version || e.checksum != checksum {
		return nil, "", false
	}
	return e.body, e.checksum, true
}

func (c *hashCache) put(repo Repo, version int64, checksum string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[repo]; !ok && len(c.entries) >= c.max {
		for k := range c.entries { // drop one at random: bounded, cheap
			delete(c.entries, k)
			break
		}
	}
	c.entries[repo] = cachedHashes{version: version, checksum: checksum, body: body}
}

func (c *hashCache) forget(repo Repo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, repo)
}

// rateLimiter is a token bucket per bearer token.
type rateLimiter struct {
	mu      sync.Mutex
	rate    float64
	burst   float64
	now     func() time.Time
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate float64, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

// exhausted reports whether key's bucket is empty, and how long until it
// holds one request again, without taking from it. A nil limiter never
// is.
func (l *rateLimiter) exhausted(key string) (time.Duration, bool) {
	if l == nil {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		return 0, false
	}
	tokens := min(l.burst, b.tokens+l.now().Sub(b.last).Seconds()*l.rate)
	if tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - tokens) / l.rate * float64(time.Second)), true
}

// allow takes one request from key's bucket, or says how long to wait.
// A nil limiter allows everything.
func (l *rateLimiter) allow(key string) (time.Duration, bool) {
	if l == nil {
		return 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) > 100_000 {
			l.buckets = map[string]*bucket{} // bounded: start over
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), false
}
