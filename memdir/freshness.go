package memdir

import (
	"strconv"
	"time"
)

// MemoryAgeDays returns how many whole days old a memory is:
// max(0, floor((now-mtime)/24h)). A memory from the future (clock skew)
// is 0 days old.
func MemoryAgeDays(mtime, now time.Time) int {
	d := now.Sub(mtime)
	if d <= 0 {
		return 0
	}
	return int(d / (24 * time.Hour))
}

// MemoryAge says a memory's age in words a model will not miscount:
// "today", "yesterday" or "N days ago".
func MemoryAge(mtime, now time.Time) string {
	switch d := MemoryAgeDays(mtime, now); d {
	case 0:
		return "today"
	case 1:
		return "yesterday"
	default:
		return strconv.Itoa(d) + " days ago"
	}
}

// memoryFreshnessText returns a caveat for a memory more than one day old,
// and "" for a fresher one. It reminds the model that a memory is a
// point-in-time observation and that claims about code may have drifted.
func memoryFreshnessText(mtime, now time.Time) string {
	d := MemoryAgeDays(mtime, now)
	if d <= 1 {
		return ""
	}
	return "This memory was saved " + strconv.Itoa(d) + " days ago. A memory records what was true when it was written, " +
		"not what is true now: code it describes, and any file:line it cites, may have changed since. " +
		"Check it against the current code before you state it as fact."
}

// MemoryFreshnessNote is memoryFreshnessText wrapped in <system-reminder>
// tags, for callers that put it into a tool result without a wrapper of
// their own. It is "" for a fresh memory.
func MemoryFreshnessNote(mtime, now time.Time) string {
	text := memoryFreshnessText(mtime, now)
	if text == "" {
		return ""
	}
	return "<system-reminder>" + text + "</system-reminder>\n"
}

// MemoryHeaderLine is the line that introduces a surfaced memory's
// content: for a stale memory the caveat, a blank line and
// "Memory: <path>:"; for a fresh one "Memory: <path>:" alone, as Claude
// Code 2.1.328 writes it (2.1.88 wrote "Memory (saved today): <path>:").
func MemoryHeaderLine(path string, mtime, now time.Time) string {
	if text := memoryFreshnessText(mtime, now); text != "" {
		return text + "\n\nMemory: " + path + ":"
	}
	return "Memory: " + path + ":"
}
