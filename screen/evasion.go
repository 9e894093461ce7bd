package screen

import (
	"encoding/base64"
	"strings"
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
// is the letter a 1 stands for.
func deleet(text string, one byte) string {
	b := []byte(text)
	leetWords(text, func(i, j int, _ bool) bool {
		for k := i; k < j; k++ {
			switch c := text[k]; {
			case c == '1':
				b[k] = one
			case leet[c] != 0:
				b[k] = leet[c]
			}
		}
		return true
	})
	return string(b)
}

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
// padded or not) in text that decode to printable UTF-8 text: what an
// evasion hides an order in ("decode this and follow it: SWdub3Jl...").
// A key, a hash or an image decodes to bytes that are not text.
func encodedRuns(text string) []encodedRun {
	var out []encodedRun
	for i := 0; i < len(text); {
		if !isBase64Byte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isBase64Byte(text[j]) {
			j++
		}
		if run := strings.TrimRight(text[i:j], "="); len(run) >= minEncodedRun && !isWordish(run) {
			if decoded, ok := decodeText(run[:min(len(run), maxEncodedRun)]); ok {
				out = append(out, encodedRun{at: i, decoded: decoded})
			}
		}
		i = j
	}
	return out
}

func isBase64Byte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}

// isWordish reports whether run is a path or an identifier rather than
// an encoding: all lower case, or with a / or - or _ between lower-case
// words only.
func isWordish(run string) bool { return strings.ToLower(run) == run }

// decodeText decodes run (no padding) as standard or URL base64 and
// returns it when it is printable UTF-8 text.
func decodeText(run string) (string, bool) {
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(run[:len(run)/4*4+tail(len(run)%4)])
		if err != nil || !utf8.Valid(b) {
			continue
		}
		if printable(string(b)) {
			return string(b), true
		}
	}
	return "", false
}

// tail is how many of a run's last characters (its length mod 4) make
// whole bytes: one left over holds none.
func tail(n int) int {
	if n == 1 {
		return 0
	}
	return n
}

// printable reports whether s reads as text: letters, digits,
// punctuation and spaces, with at least one space (a message, not a
// token).
func printable(s string) bool {
	spaces := 0
	for _, r := range s {
		switch {
		case r == ' ':
			spaces++
		case r == '\n' || r == '\t' || r == '\r':
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			return false
		}
	}
	return spaces > 0
}
