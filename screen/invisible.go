package screen

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
)

// The invisible rules (package documentation: The screens).
const (
	RuleUnicodeTag      = "unicode-tag"
	RuleBidiControl     = "bidi-control"
	RuleBidiMark        = "bidi-mark"
	RuleZeroWidth       = "zero-width"
	RuleZeroWidthJoiner = "zero-width-joiner"
)

// findInvisible returns one finding per invisible or direction-control
// character of text that no rule allows, in text order.
func findInvisible(text string) []Finding {
	var out []Finding
	var ln lines
	var rtlLines map[int]bool // lines known to hold a right-to-left letter
	add := func(off int, r rune, id string) {
		if ln == nil {
			ln = newLines(text)
		}
		out = append(out, Finding{Screen: ScreenInvisible, RuleID: id, Label: "invisible character", Offset: off, Line: ln.at(off), CodePoint: r})
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < 0xD8 || (c >= 0xDA && c < 0xE2) || (c > 0xE2 && c < 0xEF) {
			// ASCII and lead bytes of planes no rule touches (U+0600-U+067F
			// is 0xD8 0x80..; U+2000-U+2FFF is 0xE2; U+F000-U+FFFF is 0xEF;
			// the tags and emoji are 0xF0 and 0xF3): skip the character.
			if c < utf8.RuneSelf {
				i++
			} else {
				_, n := utf8.DecodeRuneInString(text[i:])
				i += n
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == 0x1F3F4:
			if end := flagEnd(text, i+n); end > 0 {
				i = end
				continue
			}
		case r >= 0xE0000 && r <= 0xE007F:
			add(i, r, RuleUnicodeTag)
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			add(i, r, RuleBidiControl)
		case r == 0x200E || r == 0x200F || r == 0x061C:
			if rtlLines == nil {
				rtlLines = map[int]bool{}
			}
			start := i
			for start > 0 && text[start-1] != '\n' {
				start--
			}
			ok, seen := rtlLines[start]
			if !seen {
				ok = holdsRTL(LineAt(text, i))
				rtlLines[start] = ok
			}
			if !ok {
				add(i, r, RuleBidiMark)
			}
		case r == 0x200B || (r >= 0x2060 && r <= 0x2064) || (r == 0xFEFF && i > 0):
			add(i, r, RuleZeroWidth)
		case r == 0x200C || r == 0x200D:
			prev, _ := utf8.DecodeLastRuneInString(text[:i])
			next, _ := utf8.DecodeRuneInString(text[i+n:])
			if !legitimateJoin(prev, next, r == 0x200D) {
				add(i, r, RuleZeroWidthJoiner)
			}
		}
		i += n
	}
	return out
}

// flagEnd returns where an emoji subdivision flag's tag sequence that
// starts at i ends (after its CANCEL TAG), or 0 when text[i:] does not
// start with 2 to 6 tag letters or digits and a CANCEL TAG.
func flagEnd(text string, i int) int {
	count := 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == 0xE007F:
			if count >= 2 && count <= 6 {
				return i + n
			}
			return 0
		case (r >= 0xE0061 && r <= 0xE007A) || (r >= 0xE0030 && r <= 0xE0039):
			count++
			i += n
		default:
			return 0
		}
	}
	return 0
}

// holdsRTL reports whether line holds a right-to-left letter.
func holdsRTL(line string) bool {
	for _, r := range line {
		if r < 0x0590 || !unicode.IsLetter(r) {
			continue // the marks themselves are of class R and AL
		}
		p, _ := bidi.LookupRune(r)
		if c := p.Class(); c == bidi.R || c == bidi.AL {
			return true
		}
	}
	return false
}

// joiningScripts are the scripts whose shaping uses ZWJ and ZWNJ.
var joiningScripts = []*unicode.RangeTable{
	unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mongolian,
	unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi, unicode.Gujarati, unicode.Oriya,
	unicode.Tamil, unicode.Telugu, unicode.Kannada, unicode.Malayalam, unicode.Sinhala,
	unicode.Myanmar, unicode.Khmer,
}

// legitimateJoin reports whether a joiner between prev and next joins
// something: two letters or marks of one joining script, a mark of one
// (a virama) and anything, or (zwj only) two emoji.
func legitimateJoin(prev, next rune, zwj bool) bool {
	if prev == utf8.RuneError {
		return false // at the start, or after a broken byte
	}
	if zwj && (isEmoji(prev) || prev == 0xFE0F) && isEmoji(next) {
		return true
	}
	if !unicode.In(prev, unicode.L, unicode.M) {
		return false
	}
	for _, s := range joiningScripts {
		if !unicode.Is(s, prev) {
			continue
		}
		// After a virama or another mark of the script the joiner
		// selects a form (a half form, a chillu at the end of a word).
		return unicode.Is(unicode.M, prev) || unicode.In(next, unicode.L, unicode.M) && unicode.Is(s, next)
	}
	return false
}

// isEmoji reports whether r is a pictographic emoji or a skin-tone
// modifier: the symbols of the emoji planes U+1F000-U+1FAFF and the
// other-symbol characters of U+2000-U+2BFF (hearts, gender signs, the
// staff of Aesculapius...).
func isEmoji(r rune) bool {
	switch {
	case r >= 0x1F000 && r <= 0x1FAFF:
		return true
	case r >= 0x2000 && r <= 0x2BFF:
		return unicode.Is(unicode.So, r)
	}
	return false
}

// runeName names the characters the invisible rules find.
func runeName(r rune) string {
	switch {
	case r == 0xE0001:
		return "LANGUAGE TAG"
	case r == 0xE007F:
		return "CANCEL TAG"
	case r >= 0xE0020 && r <= 0xE007E:
		return "TAG " + string(r-0xE0000)
	case r >= 0xE0000 && r <= 0xE007F:
		return "TAG (unassigned)"
	}
	return names[r]
}

var names = map[rune]string{
	0x202A: "LEFT-TO-RIGHT EMBEDDING", 0x202B: "RIGHT-TO-LEFT EMBEDDING", 0x202C: "POP DIRECTIONAL FORMATTING",
	0x202D: "LEFT-TO-RIGHT OVERRIDE", 0x202E: "RIGHT-TO-LEFT OVERRIDE", 0x2066: "LEFT-TO-RIGHT ISOLATE",
	0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE",
	0x200E: "LEFT-TO-RIGHT MARK", 0x200F: "RIGHT-TO-LEFT MARK", 0x061C: "ARABIC LETTER MARK",
	0x200B: "ZERO WIDTH SPACE", 0x200C: "ZERO WIDTH NON-JOINER", 0x200D: "ZERO WIDTH JOINER",
	0x2060: "WORD JOINER", 0x2061: "FUNCTION APPLICATION", 0x2062: "INVISIBLE TIMES",
	0x2063: "INVISIBLE SEPARATOR", 0x2064: "INVISIBLE PLUS", 0xFEFF: "ZERO WIDTH NO-BREAK SPACE",
}
