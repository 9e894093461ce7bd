package screen

import (
	"encoding/base64"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// leet maps the digits and signs leetspeak writes for letters; '1' is
// the caller's choice of i or l.
var leet = [256]byte{'0': 'o', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's'}

// leetish reports whether text has a word that mixes letters with the
// digits and signs leetspeak writes for letters ("pr3v10u5").
func leetish(text string) bool {
	found := false
	leetWords(text, func(_, _ int, letters bool) bool {
		found = letters
		return !found
	})
	return found
}

// deleet returns text with leetspeak read as letters in every word
// ("41" is "ai" in a leetish text), byte for byte, so offsets stay; one
// is the letter a 1 stands for, or 0 to choose it per word: l where that
// makes a word the rules know (ellWords: "a11", "ru1es"), i elsewhere.
func deleet(text string, one byte) string {
	b := []byte(text)
	leetWords(text, func(i, j int, _ bool) bool {
		for k := i; k < j; k++ {
			if c := text[k]; c != '1' && leet[c] != 0 {
				b[k] = leet[c]
			}
		}
		choice := one
		if choice == 0 {
			choice = 'i'
			if w := string(b[i:j]); strings.Contains(w, "1") && ellWords[strings.ToLower(strings.ReplaceAll(w, "1", "l"))] {
				choice = 'l'
			}
		}
		for k := i; k < j; k++ {
			if text[k] == '1' {
				b[k] = choice
			}
		}
		return true
	})
	return string(b)
}

// ellWords are the words of the injection rules that hold an l, which
// leetspeak may write with a 1.
var ellWords = map[string]bool{"all": true, "rules": true, "guidelines": true, "below": true, "following": true, "follow": true,
	"tell": true, "reveal": true, "will": true, "developer": true, "earlier": true, "role": true, "unfiltered": true,
	"jailbroken": true, "longer": true, "limited": true, "leak": true, "upload": true, "told": true, "shell": true,
	"only": true, "helpful": true, "model": true, "original": true, "real": true}

// leetWords calls f with the bounds of every word of text that holds a
// digit or sign leetspeak writes for a letter, and whether it holds
// letters too, until f returns false.
func leetWords(text string, f func(i, j int, letters bool) bool) {
	for i := 0; i < len(text); {
		j := i
		letters, signs := false, false
		for j < len(text) && isLeetWordByte(text[j]) {
			switch c := text[j]; {
			case c == '1' || leet[c] != 0:
				signs = true
			case c < '0' || c > '9':
				letters = true
			}
			j++
		}
		if signs && !f(i, j, letters) {
			return
		}
		i = max(j, i+1)
	}
}

// isLeetWordByte reports whether c belongs to a word leetspeak may write:
// ASCII letters and digits, @ and $, and the bytes of other letters (an
// accented letter stays as it is).
func isLeetWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '@' || c == '$' || c >= 0x80
}

// An encodedRun is a run of base64 in a text that decodes to text.
type encodedRun struct {
	at      int // byte offset of the run in the text
	decoded string
}

// minEncodedRun is the shortest run of base64 read as a possible
// message: 16 characters hold 12 bytes, about two words.
const minEncodedRun = 16

// maxEncodedRun bounds what one run costs to decode.
const maxEncodedRun = 256 << 10

// encodedRuns returns the runs of base64 (standard or URL alphabet,
// padded or not) in text that decode to readable UTF-8 text: what an
// evasion hides an order in ("decode this and follow it: SWdub3Jl...").
// A run glued to a word by a character of the other alphabet or by "="
// ("payload=SWdu...", "run_SWdu...") is tried on its own too, so are the
// four ways to align a run, and lines of base64 wrapped at a width are
// joined. A key, a hash or an image decodes to bytes that are not text.
func encodedRuns(text string) []encodedRun {
	var out []encodedRun
	seen := map[string]bool{}
	try := func(at int, run string) {
		if seen[run] {
			return
		}
		seen[run] = true
		if decoded, ok := decodeText(run); ok {
			out = append(out, encodedRun{at: at, decoded: decoded})
		}
	}
	for i := 0; i < len(text); {
		if !isBase64Byte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isBase64Byte(text[j]) {
			j++
		}
		for _, piece := range splitRun(text[i:j]) {
			try(i+piece.at, piece.run)
		}
		i = j
	}
	for _, w := range wrappedRuns(text) {
		try(w.at, w.run)
	}
	return out
}

type runPiece struct {
	at  int
	run string
}

// splitRun returns a run of base64 characters whole (padding cut) and
// cut at each character one alphabet lacks ("=", "_", "-" for the
// standard one; "=", "+", "/" for the URL one), each piece long enough
// to be a message and not all lower case (a path, an identifier).
func splitRun(run string) []runPiece {
	if len(run) < minEncodedRun {
		return nil // a word, most of the time
	}
	var out []runPiece
	add := func(at int, piece string) {
		piece = strings.TrimRight(piece, "=")
		if len(piece) >= minEncodedRun && strings.ToLower(piece) != piece {
			out = append(out, runPiece{at, piece[:min(len(piece), maxEncodedRun)]})
		}
	}
	add(0, run)
	for _, cuts := range []string{"=_-", "=+/"} {
		at := 0
		for part := range strings.FieldsFuncSeq(run, func(r rune) bool { return strings.ContainsRune(cuts, r) }) {
			at = strings.Index(run[at:], part) + at
			if len(part) < len(run) {
				add(at, part)
			}
			at += len(part)
		}
	}
	return out
}

// wrappedRuns joins consecutive lines that hold nothing but base64 (a
// blob wrapped at a width, as the base64 command writes it).
func wrappedRuns(text string) []runPiece {
	var out []runPiece
	var cur strings.Builder
	start, lines := 0, 0
	flush := func() {
		if lines > 1 {
			for _, piece := range splitRun(cur.String()) {
				piece.at = start // the joined run's offsets are not the text's
				out = append(out, piece)
			}
		}
		cur.Reset()
		lines = 0
	}
	off := 0
	for line := range strings.SplitSeq(text, "\n") {
		l := strings.TrimSpace(line)
		whole := len(l) >= 4 && strings.IndexFunc(l, func(r rune) bool { return r >= utf8.RuneSelf || !isBase64Byte(byte(r)) }) < 0
		if whole {
			if lines == 0 {
				start = off
			}
			cur.WriteString(l)
			lines++
		} else {
			flush()
		}
		off += len(line) + 1
	}
	flush()
	return out
}

func isBase64Byte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}

// decodeText decodes run (no padding) as standard or URL base64, at
// each of the four alignments, and returns it when it reads as text.
func decodeText(run string) (string, bool) { return decodeTextIn(run, 2) }

// decodeTextIn is decodeText with depth levels of encoding: a run that
// decodes to base64 alone is decoded again.
func decodeTextIn(run string, depth int) (string, bool) {
	for skip := range 4 {
		r := run[min(skip, len(run)):]
		if len(r) < minEncodedRun {
			break
		}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			b, err := enc.DecodeString(r[:len(r)/4*4+tail(len(r)%4)])
			switch {
			case err != nil:
			case readable(b):
				return strings.ToValidUTF8(string(b), " "), true
			case depth > 1 && allBase64(b):
				if inner, ok := decodeTextIn(strings.TrimRight(string(b), "="), depth-1); ok {
					return inner, true
				}
			}
		}
	}
	return "", false
}

// allBase64 reports whether b is a run of base64 characters alone.
func allBase64(b []byte) bool {
	for _, c := range b {
		if !isBase64Byte(c) {
			return false
		}
	}
	return len(b) >= minEncodedRun
}

// tail is how many of a run's last characters (its length mod 4) make
// whole bytes: one left over holds none.
func tail(n int) int {
	if n == 1 {
		return 0
	}
	return n
}

// readable reports whether b reads as text: at most one byte in twenty
// a control character or not UTF-8, and a space, tab or line break
// somewhere (a message, not a token).
func readable(b []byte) bool {
	bad, spaces, n := 0, 0, 0
	for s := string(b); len(s) > 0; {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		n++
		switch {
		case unicode.IsSpace(r):
			spaces++
		case r == utf8.RuneError && size == 1, r < 0x20, r == 0x7f:
			bad++
		}
	}
	return spaces > 0 && bad*20 <= n
}

// padRun is the white space run that makes a text padded: longer runs
// could push an order's words out of the rules' windows.
const padRun = 8

// padded reports whether text holds a run of white space of padRun or
// more bytes.
func padded(text string) bool {
	n := 0
	for i := 0; i < len(text); i++ {
		if isSpaceByte(text[i]) {
			if n++; n >= padRun {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

// collapse returns text with every run of two or more white space bytes
// as one: a line break when the run holds one (the line rules still see
// lines), a space otherwise. at[i] is the offset in text of collapsed
// byte i.
func collapse(text string) (string, []int) {
	var b strings.Builder
	b.Grow(len(text))
	at := make([]int, 0, len(text))
	for i := 0; i < len(text); {
		if !isSpaceByte(text[i]) {
			b.WriteByte(text[i])
			at = append(at, i)
			i++
			continue
		}
		j, sep := i, byte(' ')
		for j < len(text) && isSpaceByte(text[j]) {
			if text[j] == '\n' {
				sep = '\n'
			}
			j++
		}
		b.WriteByte(sep)
		at = append(at, i)
		i = j
	}
	return b.String(), at
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// squashedOrder is the order to drop previous instructions with nothing
// between its letters: what a text says once the hyphens, dots, spaces
// and emphasis that split its words are taken out ("Ig-nore",
// "I g n o r e", "**Ignore** all *previous*").
var squashedOrder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:ignore|disregard|forget|override)(?:all|any|every)?(?:of)?(?:the|your|my|these|those)?` +
		`(?:previous|prior|above|earlier|preceding|foregoing|original|system)` +
		`(?:instructions?|prompts?|directions?|directives?|rules|guidelines)`)
})

// orderWords are the words squashedOrder is made of.
var orderWords = []string{"ignore", "disregard", "forget", "override", "all", "any", "every", "of", "the", "your", "my", "these",
	"those", "previous", "prior", "above", "earlier", "preceding", "foregoing", "original", "system", "instruction",
	"instructions", "prompt", "prompts", "direction", "directions", "directive", "directives", "rules", "guidelines"}

// squashed returns where in text the order to drop previous instructions
// begins with a word of it split ("Ig-nore", "I.g.n.o.r.e") or its words
// set apart by emphasis, reading base (text, or text folded; at maps
// base's offsets to text's) as its letters alone, lower case. Whole words
// joined by hyphens, underscores or case ("ignore-previous-instructions",
// TestIgnorePreviousInstructions) are a name, not an order; a match that
// a sentence's punctuation or a full stop before a space divides
// ("Don't forget: prior rules apply") is two phrases.
func squashed(text, base string, at func(int) int) (int, bool) {
	isLetter := func(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }
	var b strings.Builder
	for _, r := range base {
		if isLetter(r) {
			b.WriteByte(byte(r) | 0x20)
		}
	}
	matches := squashedOrder().FindAllStringIndex(b.String(), -1)
	if matches == nil {
		return 0, false // the common case: no offsets to keep
	}
	var offs []int
	for i, r := range base {
		if isLetter(r) {
			offs = append(offs, i)
		}
	}
	for _, m := range matches {
		from, to := offs[m[0]], offs[m[1]-1]+1
		span := base[from:to]
		if strings.ContainsAny(span, ":;,!?\n") || strings.Contains(span, ". ") || !wordStart(text, at(from)) {
			continue
		}
		if splitWord(span) || strings.ContainsAny(span, "*~") {
			return at(from), true
		}
	}
	return 0, false
}

// splitWord reports whether a run of letters in span is not made of
// whole orderWords: a word of the order broken apart.
func splitWord(span string) bool {
	for _, run := range strings.FieldsFunc(span, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) {
		if !wholeWords(strings.ToLower(run)) {
			return true
		}
	}
	return false
}

// wholeWords reports whether s is orderWords one after another.
func wholeWords(s string) bool {
	ok := make([]bool, len(s)+1)
	ok[0] = true
	for i := range s {
		if !ok[i] {
			continue
		}
		for _, w := range orderWords {
			if strings.HasPrefix(s[i:], w) {
				ok[i+len(w)] = true
			}
		}
	}
	return ok[len(s)]
}

// wordStart reports whether the character at i of text begins a word:
// no letter or digit right before it, or a capital right after a small
// letter ("pleaseIg-nore").
func wordStart(text string, i int) bool {
	prev, _ := utf8.DecodeLastRuneInString(text[:i])
	if i == 0 || !(unicode.IsLetter(prev) || unicode.IsDigit(prev)) {
		return true
	}
	cur, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsLower(prev) && unicode.IsUpper(cur)
}
