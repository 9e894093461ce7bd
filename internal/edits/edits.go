// Package edits is the one edit engine of the memory tools and of the
// check of a host's tool call (memdir.Dir.CheckToolCall), so what the
// check scans is what a write would write.
package edits

import (
	"fmt"
	"strings"
)

// Edit is one exact-string replacement, as the Edit and MultiEdit tools
// make it: Old is replaced by New, once (Old must occur exactly once) or
// everywhere with All (replace_all).
type Edit struct {
	Old, New string
	All      bool
}

// Error says why edit Index (0-based) of a call did not apply: Old
// occurs Count times (0: not found; more than 1 without All: ambiguous).
// Its text is meant for the model, which can retry with more context.
type Error struct {
	Index, Count int
}

func (e *Error) Error() string {
	if e.Count == 0 {
		return fmt.Sprintf("edit %d: old_string was not found", e.Index+1)
	}
	return fmt.Sprintf("edit %d: old_string occurs %d times; include more context to make it unique, or set replace_all", e.Index+1, e.Count)
}

// Apply applies edits in order to text, each to the text the ones before
// it left, all or none; an edit that does not apply gives an *Error.
func Apply(text string, edits []Edit) (string, error) {
	for i, e := range edits {
		switch n := strings.Count(text, e.Old); {
		case e.Old == "" || n == 0:
			return "", &Error{Index: i}
		case n > 1 && !e.All:
			return "", &Error{Index: i, Count: n}
		}
		if e.All {
			text = strings.ReplaceAll(text, e.Old, e.New)
		} else {
			text = strings.Replace(text, e.Old, e.New, 1)
		}
	}
	return text, nil
}
