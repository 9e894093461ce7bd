package memdir

import (
	"strings"
	"time"
)

// ExpiresKey is the frontmatter key that dates a memory's end: a day
// (2026-12-31, the memory holds through that day, UTC) or a moment
// (RFC 3339). Recall and the manifest leave an expired memory out, lint
// lists it; the file itself stays as it is until someone deletes it.
const ExpiresKey = "expires"

// Expires returns when the memory stops holding, and whether its header
// says so readably.
func (fm Frontmatter) Expires() (time.Time, bool) {
	v := strings.TrimSpace(fm.Metadata[ExpiresKey])
	if v == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, true
	}
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		return d.AddDate(0, 0, 1), true // through the whole day
	}
	return time.Time{}, false
}

// Expired reports whether the memory's expires date has passed at now.
func (fm Frontmatter) Expired(now time.Time) bool {
	t, ok := fm.Expires()
	return ok && !now.Before(t)
}

// Unexpired returns the headers whose memories have not expired at now,
// in their order.
func Unexpired(headers []MemoryHeader, now time.Time) []MemoryHeader {
	out := headers[:0:0]
	for _, h := range headers {
		if !h.Expired(now) {
			out = append(out, h)
		}
	}
	return out
}
