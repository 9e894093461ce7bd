package screen

import (
	"errors"
	"fmt"
)

// ErrInvisible is matched (errors.Is) by an *Error for an invisible or
// direction-control character.
var ErrInvisible = errors.New("invisible character in memory write")

// ErrInjection is matched by an *Error for text addressed to the model as
// instructions or fake system or tool-call markup.
var ErrInjection = errors.New("prompt injection in memory write")

// ErrIndexLink is matched by an *Error for an index pointer line with a
// second link or a link out of its directory.
var ErrIndexLink = errors.New("index pointer line with a foreign link")

// Error reports a write refused by a screen. It names the rule, the
// place (byte offset and line) and, for a character, its code point;
// never the surrounding text, so its message is safe to return to a
// model or an HTTP client.
type Error struct {
	Finding
	// Shared says the write was headed for memory that others read (a
	// team directory, a store folder, memory synced to an account).
	Shared bool
}

func (e *Error) Error() string {
	where := e.Where()
	switch e.Screen {
	case ScreenInvisible:
		return fmt.Sprintf("refusing to write an invisible character, %s (%s), at %s: it hides text from whoever reads the memory; remove it and write again",
			e.CodePointName(), e.RuleID, where)
	case ScreenIndexLink:
		if e.RuleID == RuleIndexExtraLink {
			return fmt.Sprintf("refusing to write an index pointer line with a second link (%s) at %s: a pointer line carries one link, to its memory file; take the link out of the description and write again", e.RuleID, where)
		}
		return fmt.Sprintf("refusing to write an index pointer line whose link leaves the memory directory (%s) at %s: a pointer line links one memory file in this directory; write again with a relative link to it", e.RuleID, where)
	}
	dest := "memory"
	if e.Shared {
		dest = "shared memory that other people's sessions read"
	}
	return fmt.Sprintf("refusing to write %s (%s) at %s into %s; state it as a fact about the project instead",
		e.Label, e.RuleID, where, dest)
}

// Is makes errors.Is(err, ErrInvisible), ErrInjection or ErrIndexLink
// true, by the screen that found it.
func (e *Error) Is(target error) bool {
	switch e.Screen {
	case ScreenInvisible:
		return target == ErrInvisible
	case ScreenInjection:
		return target == ErrInjection
	case ScreenIndexLink:
		return target == ErrIndexLink
	}
	return false
}
