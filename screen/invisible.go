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
	// RuleDefaultIgnorable is any other default-ignorable character (a
	// soft hyphen, a Hangul filler, a combining grapheme joiner, a
	// variation selector that selects nothing, an interlinear annotation
	// character): the Unicode property, not a list.
	RuleDefaultIgnorable = "default-ignorable"
	// RuleBlank is a character that shows as nothing or breaks a line
	// unseen: LINE SEPARATOR U+2028, PARAGRAPH SEPARATOR U+2029 (a
	// renderer that does not break there shows nothing, a model reads a
	// new line), BRAILLE PATTERN BLANK U+2800.
	RuleBlank = "blank"
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
		if text[i] < utf8.RuneSelf {
			i++
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
		case r == 0x2028 || r == 0x2029 || r == 0x2800:
			add(i, r, RuleBlank)
		case r == 0xFEFF:
			// A byte order mark at the start of the text.
		case r == 0x115F || r == 0x1160:
			// Hangul choseong and jungseong fillers stand in a syllable
			// of jamo; alone they hide.
			prev, _ := utf8.DecodeLastRuneInString(text[:i])
			next, _ := utf8.DecodeRuneInString(text[i+n:])
			if !unicode.Is(unicode.Hangul, prev) && !unicode.Is(unicode.Hangul, next) {
				add(i, r, RuleDefaultIgnorable)
			}
		case hidden(r):
			prev, _ := utf8.DecodeLastRuneInString(text[:i])
			if !selects(prev, r) {
				add(i, r, RuleDefaultIgnorable)
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
	0x00AD: "SOFT HYPHEN", 0x034F: "COMBINING GRAPHEME JOINER", 0x115F: "HANGUL CHOSEONG FILLER",
	0x1160: "HANGUL JUNGSEONG FILLER", 0x3164: "HANGUL FILLER", 0xFFA0: "HALFWIDTH HANGUL FILLER",
	0x180E: "MONGOLIAN VOWEL SEPARATOR", 0xFFF9: "INTERLINEAR ANNOTATION ANCHOR",
	0xFFFA: "INTERLINEAR ANNOTATION SEPARATOR", 0xFFFB: "INTERLINEAR ANNOTATION TERMINATOR",
	0x206A: "INHIBIT SYMMETRIC SWAPPING", 0x206B: "ACTIVATE SYMMETRIC SWAPPING",
	0x206C: "INHIBIT ARABIC FORM SHAPING", 0x206D: "ACTIVATE ARABIC FORM SHAPING",
	0x206E: "NATIONAL DIGIT SHAPES", 0x206F: "NOMINAL DIGIT SHAPES",
}
