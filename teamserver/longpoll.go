package teamserver

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// changeFeed wakes long-polls when this server writes a repo.
type changeFeed struct {
	mu      sync.Mutex
	waiting map[Repo]chan struct{} // closed on the repo's next write
	waiters atomic.Int64
}

func newChangeFeed() *changeFeed { return &changeFeed{waiting: map[Repo]chan struct{}{}} }

// next returns a channel closed at the repo's next write.
func (f *changeFeed) next(repo Repo) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.waiting[repo]
	if !ok {
		ch = make(chan struct{})
		f.waiting[repo] = ch
	}
	return ch
}

func (f *changeFeed) notify(repo Repo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.waiting[repo]; ok {
		close(ch)
		delete(f.waiting, repo)
	}
}

// waitForChange holds a hashes request with wait=N and If-None-Match
// until the repo's checksum differs from the tag, the wait ends (304), or
// the client leaves. It reports whether the caller should answer with the
// current hashes; false means a reply was written.
func (h *Handler) waitForChange(w http.ResponseWriter, r *http.Request, repo Repo) bool {
	secs, err := strconv.Atoi(r.URL.Query().Get("wait"))
	if err != nil || secs < 0 || secs > int(teamwire.MaxLongPoll/time.Second) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", teamwire.CodeInvalidView, "wait must be a number of seconds from 0 to 60")
		return false
	}
	tag := unquote(r.Header.Get("If-None-Match"))
	if tag == "" || secs == 0 {
		return true
	}
	select {
	case <-h.draining:
		return true // shutting down: answer now
	default:
	}
	if h.changes.waiters.Add(1) > int64(h.cfg.MaxWaiters) {
		h.changes.waiters.Add(-1)
		return true // too many waiting: answer now
	}
	defer h.changes.waiters.Add(-1)
	deadline := time.NewTimer(time.Duration(secs) * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(h.cfg.PollEvery)
	defer tick.Stop()
	for {
		woken := h.changes.next(repo)
		snap, err := h.team.Head(r.Context(), repo)
		switch {
		case errors.Is(err, ErrNotFound):
			return true
		case err != nil:
			h.storeError(w, err)
			return false
		case snap.Checksum != tag:
			return true
		}
		select {
		case <-woken:
		case <-tick.C: // another server may have written
		case <-deadline.C:
			w.Header().Set("ETag", `"`+tag+`"`)
			w.WriteHeader(http.StatusNotModified)
			return false
		case <-h.draining:
			// Shutting down: end the wait now, as if it had run out, and
			// close the connection so the client reconnects elsewhere.
			w.Header().Set("Connection", "close")
			w.Header().Set("ETag", `"`+tag+`"`)
			w.WriteHeader(http.StatusNotModified)
			return false
		case <-r.Context().Done():
			return false
		}
	}
}

// maxRepoBytes is the most a repo can hold under the limits: every entry
// at its largest.
func (h *Handler) maxRepoBytes() int64 {
	return int64(positiveOr(h.cfg.MaxEntries, DefaultMaxEntries)) * int64(h.cfg.MaxEntryBytes)
}
