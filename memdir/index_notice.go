package memdir

import (
	"strconv"
)

// IndexNotice is what a tool that wrote an index (MEMORY.md) tells the
// model about its size, as Claude Code 2.1.328 does after a Write or Edit
// of the index: "" below 80 % of both limits; from 80 % a note that the
// index nears its load limit, with the larger of the two (lines or size)
// and a target of 70 % to compact to; over a limit a text starting
// "Error:" that says the write was kept but that what lies past the limit
// is dropped on every load. path names the index in the message.
func IndexNotice(path, content string, limits IndexLimits) string {
	l := limits.withDefaults()
	trimmed, lines, units := measureIndex(content)
	if trimmed == "" {
		return ""
	}
	lineRatio := float64(lines) / float64(l.MaxLines)
	sizeRatio := float64(units) / float64(l.MaxBytes)
	ratio := max(lineRatio, sizeRatio)
	if ratio < 0.8 {
		return ""
	}
	now, limit, target := strconv.Itoa(lines)+" lines", strconv.Itoa(l.MaxLines)+"-line", "under "+strconv.Itoa(l.MaxLines*7/10)+" lines"
	if sizeRatio > lineRatio {
		now, limit, target = FormatFileSize(units), FormatFileSize(l.MaxBytes), "under "+FormatFileSize(l.MaxBytes*7/10)
	}
	advice := " Compact it to " + target + " now: one short line per entry, the details in the topic files, stale entries merged or dropped."
	if ratio > 1 {
		return "Error: this write left the memory index " + path + " at " + now + ", over its " + limit + " load limit. " +
			"The write was saved, but everything past the limit is left out each time the index is loaded." + advice
	}
	return "Note: the memory index " + path + " is now " + now + ", close to its " + limit + " load limit." + advice
}
