// Package synctext holds the rules both sync protocols (team memory and
// Memory Stores) share for text that crosses the wire: what a JSON string
// can carry exactly, and what a key or path may contain. The clients use
// them to refuse a file before a push, the server to refuse a request, so
// the two ends never disagree.
//
// A JSON string carries valid UTF-8 only: Go's encoding/json replaces
// every invalid byte (and a lone surrogate escape) with U+FFFD, silently,
// on both encode and decode. Content a protocol carries must also hold no
// NUL, which PostgreSQL's text type cannot store.
package synctext

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/screen"
)

// Reasons a text is refused.
const (
	// ReasonNotUTF8: the bytes are not valid UTF-8 (a Latin-1 file, a
	// binary file, an encoded surrogate): JSON cannot carry them exactly.
	ReasonNotUTF8 = "not valid UTF-8"
	// ReasonNUL: a NUL byte, which not every store can hold.
	ReasonNUL = "holds a NUL byte"
	// ReasonControl: a control or format character (or U+2028, U+2029)
	// in a name, which a terminal or an editor would act on.
	ReasonControl = "holds a control or format character"
	// ReasonSurrogate: a JSON \u escape of a lone UTF-16 surrogate, which
	// decodes to U+FFFD rather than to the text sent.
	ReasonSurrogate = "holds a lone UTF-16 surrogate escape"
)

// Error says why a text cannot be synced. It never holds the text.
type Error struct{ Reason string }

func (e *Error) Error() string { return "synctext: " + e.Reason }

// CheckContent reports whether b can travel as a memory's content on
// either protocol exactly as it is: valid UTF-8 and no NUL. It returns
// nil or an *Error.
func CheckContent(b []byte) error {
	if !utf8.Valid(b) {
		return &Error{Reason: ReasonNotUTF8}
	}
	for _, c := range b {
		if c == 0 {
			return &Error{Reason: ReasonNUL}
		}
	}
	return nil
}

// CheckName reports whether s may name a memory (a team key, a store
// path, an ID): valid UTF-8, with no control or format character and no
// line or paragraph separator. A zero-width joiner or non-joiner is
// allowed where the screens allow it in text (a legitimate join, as in
// a Persian or Hindi word; package screen), since a name in such a
// script needs it. It returns nil or an *Error.
func CheckName(s string) error {
	if !utf8.ValidString(s) {
		return &Error{Reason: ReasonNotUTF8}
	}
	joiners := false
	for _, r := range s {
		if r == 0 {
			return &Error{Reason: ReasonNUL}
		}
		if r == '\u200c' || r == '\u200d' {
			joiners = true
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return &Error{Reason: ReasonControl}
		}
	}
	if joiners && len(screen.Blocking(s, screen.Options{})) > 0 {
		return &Error{Reason: ReasonControl}
	}
	return nil
}

// CheckJSONBody reports whether a request body's strings decode to
// exactly the text sent: the body is valid UTF-8, and no string holds a
// \u0000 escape or the \u escape of a lone surrogate. Run it on the raw
// bytes before decoding them. It returns nil or an *Error.
func CheckJSONBody(raw []byte) error {
	if !utf8.Valid(raw) {
		return &Error{Reason: ReasonNotUTF8}
	}
	// A backslash only occurs inside a JSON string, and always starts an
	// escape of one character or of \uXXXX: no string tracking is needed.
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case 0:
			return &Error{Reason: ReasonNUL}
		case '\\':
		default:
			continue
		}
		if i+1 >= len(raw) {
			return nil // not JSON: the decoder says so
		}
		if raw[i+1] != 'u' {
			i++
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			return nil // not JSON: the decoder says so
		}
		switch {
		case r == 0:
			return &Error{Reason: ReasonNUL}
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := uint16(0), false
			if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				lo, ok = hex4(raw, i+8)
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return &Error{Reason: ReasonSurrogate}
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return &Error{Reason: ReasonSurrogate}
		default:
			i += 5
		}
	}
	return nil
}

func hex4(b []byte, at int) (uint16, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var v uint16
	for _, c := range b[at : at+4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= uint16(c - '0')
		case c >= 'a' && c <= 'f':
			v |= uint16(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= uint16(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}

// MaxNameBytes is the longest file name (one path element) common
// filesystems hold.
const MaxNameBytes = 255

// FitName returns the path p (slash-separated) with suffix added to its
// last element, shortened so that element stays within MaxNameBytes: the
// name before suffix is cut at a character boundary and marked with a
// short hash of what was cut, so two long names that differ only at the
// end still get different results. A conflict copy of a memory with a
// long name ("<name>.<time>.md") needs it.
func FitName(p, suffix string) string {
	dir, name := path.Split(p)
	if len(name)+len(suffix) <= MaxNameBytes {
		return p + suffix
	}
	sum := sha256.Sum256([]byte(name))
	mark := "~" + hex.EncodeToString(sum[:4])
	keep := MaxNameBytes - len(suffix) - len(mark)
	if keep < 1 {
		keep = 1
	}
	for keep > 0 && !utf8.RuneStart(name[keep]) {
		keep--
	}
	return dir + name[:keep] + mark + suffix
}
