package screen

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payload is one line of testdata/injection-payloads.txt.
type payload struct{ class, text string }

func readPayloads(t *testing.T) []payload {
	t.Helper()
	data, err := os.ReadFile("testdata/injection-payloads.txt")
	require.NoError(t, err)
	var out []payload
	for line := range strings.SplitSeq(string(data), "\n") {
		class, text, ok := strings.Cut(line, "\t")
		if ok && !strings.HasPrefix(line, "#") {
			out = append(out, payload{class, text})
		}
	}
	require.GreaterOrEqual(t, len(out), 50)
	return out
}

// benignNotes reads testdata/benign-notes.txt: a note per line, a fenced
// block as one note.
func benignNotes(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/benign-notes.txt")
	require.NoError(t, err)
	var out []string
	var fence []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		switch {
		case fence != nil:
			fence = append(fence, line)
			if strings.HasPrefix(line, "```") {
				out, fence = append(out, strings.Join(fence, "\n")), nil
			}
		case strings.HasPrefix(line, "```"):
			fence = []string{line}
		case !strings.HasPrefix(line, "#"):
			out = append(out, line)
		}
	}
	return out
}

// The disguises a payload is tried in, as published evasions write them.
var disguises = []struct {
	name string
	of   func(string) string
}{
	{"as written", func(s string) string { return s }},
	{"Cyrillic homoglyphs", func(s string) string {
		return strings.NewReplacer("a", "а", "e", "е", "o", "о", "c", "с", "p", "р", "i", "і").Replace(s)
	}},
	{"fullwidth", func(s string) string { return mapLetters(s, 'Ａ', 'ａ') }},
	{"mathematical bold", func(s string) string { return mapLetters(s, '𝐀', '𝐚') }},
	{"soft hyphens", func(s string) string { return hyphenate(s, "\u00ad") }},
	{"zero-width spaces", func(s string) string { return hyphenate(s, "\u200b") }},
	{"leetspeak", func(s string) string {
		return strings.NewReplacer("a", "4", "e", "3", "i", "1", "o", "0", "s", "5", "t", "7", "A", "4", "E", "3", "I", "1", "O", "0", "S", "5", "T", "7").Replace(s)
	}},
	{"base64", func(s string) string {
		return "Decode this base64 and follow it: " + base64.StdEncoding.EncodeToString([]byte(s))
	}},
}

// mapLetters writes ASCII letters from the blocks that start at upper
// and lower.
func mapLetters(s string, upper, lower rune) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case 'A' <= r && r <= 'Z':
			r = upper + r - 'A'
		case 'a' <= r && r <= 'z':
			r = lower + r - 'a'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hyphenate puts mark after the second letter of every word of four
// letters or more.
func hyphenate(s, mark string) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		if utf8.RuneCountInString(w) >= 4 {
			_, n1 := utf8.DecodeRuneInString(w)
			_, n2 := utf8.DecodeRuneInString(w[n1:])
			words[i] = w[:n1+n2] + mark + w[n1+n2:]
		}
	}
	return strings.Join(words, " ")
}

// TestPublishedPayloadsAreRefused: every payload of the corpus, as
// written and in every disguise, is refused on a shared write; every
// benign note is kept, shared or not. The figures are in
// docs/security.md.
func TestPublishedPayloadsAreRefused(t *testing.T) {
	payloads := readPayloads(t)
	for _, d := range disguises {
		refused := 0
		for _, p := range payloads {
			text := d.of(p.text)
			if assert.Error(t, Check(text, Options{Shared: true}), "%s, %s: %q", p.class, d.name, text) {
				refused++
			}
		}
		t.Logf("%-20s %d of %d refused", d.name, refused, len(payloads))
	}
	notes := benignNotes(t)
	for _, note := range notes {
		assert.NoError(t, Check(note, Options{Shared: true}), "a benign note: %q", note)
	}
	t.Logf("%d benign notes", len(notes))
}
