package screen

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// hidden reports whether r is default-ignorable (Unicode's
// Default_Ignorable_Code_Point, approximated by its parts: the format
// characters, the other default-ignorable code points and the variation
// selectors), apart from the prepended concatenation marks, which show.
func hidden(r rune) bool {
	switch {
	case r < 0x300:
		return r == 0xAD // Latin-1 and the Latin extensions hold one
	case r >= 0x3040 && r < 0x3130, r >= 0x3190 && r < 0xA000:
		return false // kana and the unified ideographs (not the Hangul filler U+3164): none
	case r >= 0xAC00 && r < 0xD800:
		return false // Hangul syllables: none
	case unicode.Is(unicode.Cf, r):
		return !unicode.Is(unicode.Prepended_Concatenation_Mark, r)
	}
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r)
}

// selects reports whether a variation selector after prev chooses a form
// of it: an emoji's presentation (VS15, VS16 after an emoji, a symbol or
// a keycap's digit, # or *), an ideograph's variant (VS1-VS14 and the
// ideographic selectors after a Han character), a Mongolian letter's
// form (its free variation selectors). Anywhere else it only hides.
func selects(prev, r rune) bool {
	switch {
	case prev == utf8.RuneError || unicode.IsSpace(prev) || hidden(prev):
		return false
	case r >= 0x180B && r <= 0x180F:
		return unicode.Is(unicode.Mongolian, prev)
	case r == 0xFE0E || r == 0xFE0F:
		return isEmoji(prev) || unicode.Is(unicode.So, prev) || unicode.Is(unicode.Sm, prev) ||
			(prev >= '0' && prev <= '9') || prev == '#' || prev == '*' || prev == 0x00A9 || prev == 0x00AE
	}
	return unicode.Is(unicode.Variation_Selector, r) && unicode.Is(unicode.Han, prev)
}

// confusable maps letters of other scripts that look like Latin ones to
// the Latin letter (the commonest of Unicode TS #39's confusables).
var confusable = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't',
	'у': 'y', 'х': 'x', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ѕ': 's', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'һ': 'h', 'ӏ': 'l',
	// Greek
	'α': 'a', 'β': 'b', 'ε': 'e', 'ζ': 'z', 'η': 'n', 'ι': 'i', 'κ': 'k', 'μ': 'u', 'ν': 'v', 'ο': 'o', 'ρ': 'p',
	'τ': 't', 'υ': 'u', 'χ': 'x', 'ϲ': 'c',
	'г': 'r', 'п': 'n', 'ԍ': 'g', 'ѡ': 'w', 'γ': 'y', 'ω': 'w', 'ϳ': 'j',
	// Armenian
	'ո': 'n', 'օ': 'o', 'ս': 'u', 'ց': 'g', 'հ': 'h', 'զ': 'q',
	// Latin look-alikes NFKC keeps, small capitals among them
	'ı': 'i', 'ȷ': 'j', 'ɡ': 'g', 'ɑ': 'a', 'ꓲ': 'l', 'ǀ': 'l', 'ɩ': 'i',
	'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ꜰ': 'f', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k',
	'ʟ': 'l', 'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴠ': 'v', 'ᴡ': 'w',
	'ʏ': 'y', 'ᴢ': 'z',
	// Cherokee capitals (looked up before lower-casing, which changes them)
	'Ꭰ': 'd', 'Ꭱ': 'r', 'Ꭲ': 't', 'Ꭵ': 'i', 'Ꭹ': 'y', 'Ꭺ': 'a', 'Ꭻ': 'j', 'Ꭼ': 'e', 'Ꮃ': 'w', 'Ꮇ': 'm', 'Ꮋ': 'h',
	'Ꮐ': 'g', 'Ꮓ': 'z', 'Ꮟ': 'b', 'Ꮩ': 'v', 'Ꮪ': 's', 'Ꮮ': 'l', 'Ꮯ': 'c', 'Ꮲ': 'p', 'Ꮶ': 'k', 'Ꮻ': 'o',
}

// latinOf returns the Latin letter r imitates, lower case, and whether r
// is a confusable.
func latinOf(r rune) (rune, bool) {
	if c, ok := confusable[r]; ok {
		return c, true
	}
	c, ok := confusable[unicode.ToLower(r)]
	return c, ok
}

// foldsAway reports whether fold drops r or changes it beyond case: a
// default-ignorable, a space other than ' ', a combining mark, a
// confusable letter, a letter with an accent, a compatibility form.
func foldsAway(r rune) bool {
	if hidden(r) || unicode.IsSpace(r) || unicode.Is(unicode.Mn, r) {
		return true
	}
	if _, ok := latinOf(r); ok {
		return true
	}
	var buf [utf8.UTFMax]byte
	b := buf[:utf8.EncodeRune(buf[:], r)]
	return compatForm(b) != nil || norm.NFD.Properties(b).Decomposition() != nil
}

// fold returns text as the injection rules read it when it holds
// anything but ASCII: compatibility forms folded (NFKC: fullwidth and
// mathematical letters are letters), default-ignorable characters
// dropped (a soft hyphen inside a word), confusable letters mapped to
// the Latin ones they imitate, lower case; without accents, accents and
// other combining marks dropped too ("Ïgnore"). at[i] is the offset in
// text of the character folded byte i came from.
func fold(text string, accents bool) (string, []int) {
	var b strings.Builder
	b.Grow(len(text))
	at := make([]int, 0, len(text))
	var buf [utf8.UTFMax]byte
	for i, r := range text {
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
			at = append(at, i)
			continue
		}
		if hidden(r) {
			continue
		}
		if unicode.IsSpace(r) { // U+0085, U+2028...: a space to a reader, not to the patterns' \s
			b.WriteByte(' ')
			at = append(at, i)
			continue
		}
		n := utf8.EncodeRune(buf[:], r)
		form := buf[:n]
		if d := compatForm(form); d != nil {
			form = d // a compatibility form's letters (fullwidth, mathematical)
		} else if d := norm.NFD.Properties(form).Decomposition(); d != nil && !accents {
			form = d // an accented letter: its letter, then its marks
		}
		for _, f := range string(form) {
			if !accents && unicode.Is(unicode.Mn, f) {
				continue // an accent or another combining mark
			}
			if c, ok := latinOf(f); ok {
				f = c
			} else {
				f = unicode.ToLower(f)
			}
			w := utf8.EncodeRune(buf[:], f)
			b.Write(buf[:w])
			for range w {
				at = append(at, i)
			}
		}
	}
	return b.String(), at
}

// compatForm returns the compatibility decomposition of the character
// in b (a fullwidth or mathematical letter's plain one), nil when it has
// none beyond its canonical one (an accented letter stays as it is).
func compatForm(b []byte) []byte {
	k := norm.NFKC.Properties(b).Decomposition()
	if k == nil || bytes.Equal(k, norm.NFC.Properties(b).Decomposition()) {
		return nil
	}
	return k
}

// accented reports whether text holds an accented letter or another
// combining mark: what fold without accents drops.
func accented(text string) bool {
	var buf [utf8.UTFMax]byte
	for _, r := range text {
		if r >= utf8.RuneSelf && (unicode.Is(unicode.Mn, r) || norm.NFD.Properties(buf[:utf8.EncodeRune(buf[:], r)]).Decomposition() != nil) {
			return true
		}
	}
	return false
}

// disguised reports whether text holds anything fold changes beyond case
// (foldsAway). Text without one reads the same folded, so the rules run
// once.
func disguised(text string) bool {
	for _, r := range text {
		if r >= utf8.RuneSelf && foldsAway(r) {
			return true
		}
	}
	return false
}

// inCode reports whether byte offset off of text lies in code: a fenced
// block (between lines opening with ``` or ~~~) or an inline code span
// (between two runs of as many backticks on one line). Markup there is
// mentioned, not sent.
func inCode(text string, off int) bool {
	start := 0
	fence := ""
	for start <= off && start < len(text) {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		line := text[start:end]
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "" && strings.HasPrefix(trimmed, fence):
			if off <= end {
				return true // the closing fence line itself
			}
			fence = ""
		case fence != "":
			if off <= end {
				return true
			}
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			if !closes(text[min(end+1, len(text)):], trimmed[:3]) {
				break // an unclosed fence is no code block: what follows is sent as it is
			}
			fence = trimmed[:3]
			if off <= end {
				return true
			}
		case off <= end:
			return inInlineCode(line, off-start)
		}
		start = end + 1
	}
	return false
}

// inInlineCode reports whether byte offset off of line lies between an
// opening run of backticks and a closing run of the same length.
func inInlineCode(line string, off int) bool {
	for i := 0; i < len(line); {
		if line[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		run := line[i : i+n]
		j := i + n
		closeAt := -1
		for k := j; k < len(line); {
			c := strings.Index(line[k:], run)
			if c < 0 {
				break
			}
			c += k
			m := 0
			for c+m < len(line) && line[c+m] == '`' {
				m++
			}
			if m == n {
				closeAt = c
				break
			}
			k = c + m
		}
		if closeAt < 0 {
			return false // an unclosed run is a literal backtick
		}
		if off >= j && off < closeAt {
			return true
		}
		i = closeAt + n
	}
	return false
}

// closes reports whether rest holds a line that closes a fence opened
// with marker.
func closes(rest, marker string) bool {
	for line := range strings.SplitSeq(rest, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), marker) {
			return true
		}
	}
	return false
}
