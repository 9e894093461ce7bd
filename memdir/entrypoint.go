package memdir

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
)

// Default limits of the MEMORY.md index loaded into a prompt.
const (
	// MaxEntrypointLines is the default line limit of the index.
	MaxEntrypointLines = 200
	// MaxEntrypointBytes is the default size limit of the index, counted in
	// UTF-16 code units as Claude Code does, so both cut at the same place.
	MaxEntrypointBytes = 25_000
)

// EntrypointTruncation is the index text as it goes into a prompt, with the
// facts about the original.
type EntrypointTruncation struct {
	// Content is the trimmed index, cut if needed and then followed by a
	// warning block.
	Content string
	// LineCount is the number of lines of the trimmed original.
	LineCount int
	// ByteCount is the length of the trimmed original in UTF-16 code units.
	ByteCount int
	// WasLineTruncated reports whether the original exceeded the line limit.
	WasLineTruncated bool
	// WasByteTruncated reports whether the original exceeded the size limit
	// (judged on the original, even when the line cut alone fixed it).
	WasByteTruncated bool
}

// IndexLimits bounds the index loaded into a prompt. The zero value means
// the defaults (200 lines, 25,000 units).
type IndexLimits struct {
	MaxLines int
	MaxBytes int
}

func (l IndexLimits) withDefaults() IndexLimits {
	defaults.IfUnset(&l.MaxLines, MaxEntrypointLines)
	defaults.IfUnset(&l.MaxBytes, MaxEntrypointBytes)
	return l
}

// TruncateEntrypointContent cuts an index to the default limits (200
// lines, 25,000 UTF-16 units), as Claude Code does before the index goes
// into a prompt: IndexLimits{}.Truncate(raw).
func TruncateEntrypointContent(raw string) EntrypointTruncation {
	return IndexLimits{}.Truncate(raw)
}

// Truncate trims raw and, when it has more lines or more UTF-16 units than
// the limits allow, keeps the first MaxLines lines, then cuts what is still
// over MaxBytes at the last newline at or before unit MaxBytes (or, with no
// such newline, at MaxBytes, moved back to a rune boundary). A truncated
// index is followed by a blank line and a warning that names the limit hit
// and asks for shorter entries. Within the limits the trimmed text is
// returned unchanged.
func (l IndexLimits) Truncate(raw string) EntrypointTruncation {
	l = l.withDefaults()
	trimmed, lineCount, byteCount := measureIndex(raw)
	res := EntrypointTruncation{
		Content:          trimmed,
		LineCount:        lineCount,
		ByteCount:        byteCount,
		WasLineTruncated: lineCount > l.MaxLines,
		WasByteTruncated: byteCount > l.MaxBytes,
	}
	if !res.WasLineTruncated && !res.WasByteTruncated {
		return res
	}
	kept := trimmed
	if res.WasLineTruncated {
		kept = firstLines(trimmed, l.MaxLines)
	}
	if utf16Len(kept) > l.MaxBytes {
		kept = cutAtUnits(kept, l.MaxBytes)
	}
	res.Content = kept + "\n\n" + truncationWarning(res, l) + " " + whereCut(trimmed, kept, lineCount) + " " + truncationAdvice
	return res
}

// measureIndex is the index text as the limits see it (cleaned, trimmed)
// with its line count and its length in UTF-16 units.
func measureIndex(raw string) (trimmed string, lines, units int) {
	// An index is nearly always clean: trim it, then measure and judge it
	// in one pass. Whatever cleaning would change at its ends is
	// whitespace the trim drops as well.
	trimmed = strings.TrimFunc(raw, isJSSpace)
	if lines, units, ok := measureClean(trimmed); ok {
		return trimmed, lines, units
	}
	trimmed = strings.TrimFunc(cleanIndexText(raw), isJSSpace)
	return trimmed, strings.Count(trimmed, "\n") + 1, utf16Len(trimmed)
}

// measureClean counts the lines and UTF-16 units of s in one pass, and
// reports false (with no counts) when cleanIndexText would change s.
func measureClean(s string) (lines, units int, ok bool) {
	lines = 1
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\n':
				lines++
			case c < 0x20 && c != '\t' || c == 0x7f:
				return 0, 0, false
			}
			units++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		kept := r < 0x10000 && bmpKept()[r/64]&(1<<(r%64)) != 0
		if !kept && (dropFromIndex(r) || r == '\u2028' || r == '\u2029') {
			return 0, 0, false
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	return lines, units, true
}

const truncationAdvice = "Keep each index entry to a single line under about 200 characters and put the details in the topic files."

// whereCut says where the loaded part of the index ends: the first line
// left out (quoted, at most 80 characters) and how many lines went, or,
// when the cut fell inside a line, after how many characters of it.
func whereCut(trimmed, kept string, total int) string {
	keptLines := strings.Count(kept, "\n") + 1
	if rest := trimmed[len(kept):]; !strings.HasPrefix(rest, "\n") {
		line := kept[strings.LastIndexByte(kept, '\n')+1:]
		return "Everything after the first " + strconv.Itoa(utf8.RuneCountInString(line)) + " characters of line " + strconv.Itoa(keptLines) + " was cut off."
	}
	first := keptLines + 1
	lines := strings.SplitN(trimmed[len(kept)+1:], "\n", 2)
	quote := lines[0]
	if r := []rune(quote); len(r) > 80 {
		quote = string(r[:79]) + "…"
	}
	return strconv.Itoa(total-first+1) + " of " + strconv.Itoa(total) + " lines were cut off, starting at line " + strconv.Itoa(first) + " (\"" + quote + "\")."
}

// cleanIndexText prepares index text for a prompt as Claude Code does:
// CRLF, CR, U+2028 and U+2029 become LF; C0 controls other than TAB and
// LF, U+007F to U+009F, format, private-use, unassigned and surrogate
// code points and other default-ignorable ones are dropped, except the
// joiners U+200C and U+200D and the variation selectors U+FE0E and U+FE0F.
// Text with none of them is returned as it is.
func cleanIndexText(s string) string {
	if isCleanIndexText(s) {
		return s
	}
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2028", "\n", "\u2029", "\n").Replace(s)
	return strings.Map(func(r rune) rune {
		if dropFromIndex(r) {
			return -1
		}
		return r
	}, s)
}

// isCleanIndexText reports whether cleanIndexText would leave s as it
// is. ASCII, nearly all of an index, is judged a byte at a time; only
// other runes consult the Unicode tables.
func isCleanIndexText(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				return false // a control character, CR included
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r < 0x10000 && bmpKept()[r/64]&(1<<(r%64)) != 0 {
			i += size
			continue
		}
		if dropFromIndex(r) || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// bmpKept marks the code points below U+10000 that cleanIndexText keeps
// as they are, so a non-ASCII rune is judged with one lookup; it is built
// on first use (8 KiB).
var bmpKept = sync.OnceValue(func() *[0x10000 / 64]uint64 {
	var kept [0x10000 / 64]uint64
	for r := rune(0x80); r < 0x10000; r++ {
		if !dropFromIndex(r) && r != '\u2028' && r != '\u2029' {
			kept[r/64] |= 1 << (r % 64)
		}
	}
	return &kept
})

func dropFromIndex(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r == '\u200c' || r == '\u200d' || r == '\ufe0e' || r == '\ufe0f':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f, r == utf8.RuneError:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

func truncationWarning(r EntrypointTruncation, l IndexLimits) string {
	var what string
	switch {
	case r.WasByteTruncated && !r.WasLineTruncated:
		what = FormatFileSize(r.ByteCount) + " (the limit is " + FormatFileSize(l.MaxBytes) + "), because some entries are too long"
	case r.WasLineTruncated && !r.WasByteTruncated:
		what = strconv.Itoa(r.LineCount) + " lines (the limit is " + strconv.Itoa(l.MaxLines) + ")"
	default:
		what = strconv.Itoa(r.LineCount) + " lines and " + FormatFileSize(r.ByteCount) +
			" (the limits are " + strconv.Itoa(l.MaxLines) + " lines and " + FormatFileSize(l.MaxBytes) + ")"
	}
	return "> NOTE: " + EntrypointName + " holds " + what + ", so only its beginning was loaded above."
}

// firstLines returns the first n '\n'-separated lines of s.
func firstLines(s string, n int) string {
	idx := 0
	for i := 0; i < n; i++ {
		j := strings.IndexByte(s[idx:], '\n')
		if j < 0 {
			return s
		}
		idx += j + 1
	}
	return s[:idx-1]
}

// cutAtUnits shortens s to at most max UTF-16 units: at the last '\n' whose
// unit offset is at most max (the newline itself is dropped), else at the
// last rune boundary at or before max.
func cutAtUnits(s string, max int) string {
	units, lastNL, hard := 0, -1, len(s)
	for i, r := range s {
		if units > max {
			break
		}
		if r == '\n' && i > 0 {
			lastNL = i
		}
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > max && hard == len(s) {
			hard = i
		}
		units += n
	}
	if lastNL > 0 {
		return s[:lastNL]
	}
	return s[:hard]
}

// utf16Len is the length of s in UTF-16 code units (JavaScript's .length).
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// isJSSpace matches the characters JavaScript's String.prototype.trim
// removes, so the line and size counts agree with Claude Code's.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0xFEFF, 0x2028, 0x2029:
		return true
	case 0x85:
		return false
	}
	return unicode.Is(unicode.Zs, r)
}

// FormatFileSize renders a size for humans: "N bytes" under 1024, else KB,
// MB or GB with one decimal and a trailing ".0" dropped (25000 → "24.4KB").
func FormatFileSize(n int) string {
	if n < 1024 {
		return strconv.Itoa(n) + " bytes"
	}
	v := float64(n) / 1024
	unit := "KB"
	for _, next := range []string{"MB", "GB"} {
		if v < 1024 {
			break
		}
		v /= 1024
		unit = next
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + unit
}
