package memdir

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f(i))
	}
	return b.String()
}

func indexEntry(i int) string { return fmt.Sprintf("- [Topic %d](topic_%d.md) — hook %d", i, i, i) }

func TestTruncateUnderLimits(t *testing.T) {
	raw := "\n\n  " + lines(200, indexEntry) + "  \n\n"
	got := IndexLimits{}.Truncate(raw)
	assert.Equal(t, strings.TrimSpace(raw), got.Content)
	assert.Equal(t, 200, got.LineCount)
	assert.False(t, got.WasLineTruncated)
	assert.False(t, got.WasByteTruncated)
	assert.NotContains(t, got.Content, "NOTE")

	empty := IndexLimits{}.Truncate(" \n\t ")
	assert.Equal(t, "", empty.Content)
	assert.Equal(t, 1, empty.LineCount)
	assert.Equal(t, 0, empty.ByteCount)
}

func TestTruncateOnlyLines(t *testing.T) {
	raw := lines(250, indexEntry)
	got := IndexLimits{}.Truncate(raw)
	require.True(t, got.WasLineTruncated)
	assert.False(t, got.WasByteTruncated)
	assert.Equal(t, 250, got.LineCount)
	kept, warning, ok := strings.Cut(got.Content, "\n\n")
	require.True(t, ok)
	assert.Equal(t, lines(200, indexEntry), kept)
	assert.Contains(t, warning, "250 lines (the limit is 200)")
	assert.Contains(t, warning, "MEMORY.md")
	assert.Contains(t, warning, "single line under about 200 characters")
}

func TestTruncateOnlySize(t *testing.T) {
	long := func(i int) string { return fmt.Sprintf("- [T%d](t%d.md) — %s", i, i, strings.Repeat("x", 300)) }
	raw := lines(100, long)
	got := IndexLimits{}.Truncate(raw)
	assert.False(t, got.WasLineTruncated)
	require.True(t, got.WasByteTruncated)
	kept, warning, _ := strings.Cut(got.Content, "\n\n")
	assert.LessOrEqual(t, utf16Len(kept), 25_000)
	assert.True(t, strings.HasPrefix(raw, kept+"\n"), "the cut falls on a line end")
	assert.Contains(t, warning, FormatFileSize(got.ByteCount)+" (the limit is 24.4KB), because some entries are too long")
	// The kept part is the longest whole-line prefix that fits.
	next := raw[:len(kept)+1+strings.IndexByte(raw[len(kept)+1:], '\n')]
	assert.Greater(t, utf16Len(next), 25_000)
}

func TestTruncateBoth(t *testing.T) {
	long := func(i int) string { return fmt.Sprintf("- [T%d](t%d.md) — %s", i, i, strings.Repeat("y", 200)) }
	raw := lines(300, long)
	got := IndexLimits{}.Truncate(raw)
	require.True(t, got.WasLineTruncated)
	require.True(t, got.WasByteTruncated)
	kept, warning, _ := strings.Cut(got.Content, "\n\n")
	assert.LessOrEqual(t, utf16Len(kept), 25_000)
	assert.LessOrEqual(t, strings.Count(kept, "\n")+1, 200)
	assert.Contains(t, warning, "300 lines and "+FormatFileSize(got.ByteCount))
}

func TestTruncateLineCutFixesSizeStillFlagged(t *testing.T) {
	// 150 short lines, then 100 huge ones: the line cut keeps 200 lines that
	// are over the size limit, and the flag reflects the original anyway.
	raw := lines(250, func(i int) string {
		if i < 200 {
			return "- short"
		}
		return strings.Repeat("z", 1000)
	})
	got := IndexLimits{}.Truncate(raw)
	assert.True(t, got.WasLineTruncated)
	assert.True(t, got.WasByteTruncated, "the size flag is judged on the original")
	kept, _, _ := strings.Cut(got.Content, "\n\n")
	assert.Equal(t, lines(200, func(int) string { return "- short" }), kept)
}

func TestTruncateSingleHugeLine(t *testing.T) {
	raw := strings.Repeat("a", 30_000)
	got := IndexLimits{}.Truncate(raw)
	assert.Equal(t, 1, got.LineCount)
	assert.True(t, got.WasByteTruncated)
	kept, _, _ := strings.Cut(got.Content, "\n\n")
	assert.Equal(t, strings.Repeat("a", 25_000), kept, "no newline: hard cut at the limit")
}

func TestTruncateMultiByteAtCut(t *testing.T) {
	// é is one UTF-16 unit but two UTF-8 bytes: the limit counts units.
	raw := strings.Repeat("é", 26_000)
	got := IndexLimits{}.Truncate(raw)
	kept, _, _ := strings.Cut(got.Content, "\n\n")
	assert.Equal(t, 25_000, utf16Len(kept))
	assert.Equal(t, 26_000, got.ByteCount)
	assert.True(t, utf8.ValidString(kept))

	// 😀 is two units: 24,999 units of 'a' then an astral rune straddles the
	// limit and must not be split.
	raw = strings.Repeat("a", 24_999) + strings.Repeat("😀", 10)
	got = IndexLimits{}.Truncate(raw)
	kept, _, _ = strings.Cut(got.Content, "\n\n")
	assert.Equal(t, strings.Repeat("a", 24_999), kept)
	assert.True(t, utf8.ValidString(got.Content))

	// A newline exactly at unit 25,000 is a valid cut point.
	raw = strings.Repeat("b", 25_000) + "\n" + strings.Repeat("c", 100)
	got = IndexLimits{}.Truncate(raw)
	kept, _, _ = strings.Cut(got.Content, "\n\n")
	assert.Equal(t, strings.Repeat("b", 25_000), kept)
}

func TestTruncateCustomLimits(t *testing.T) {
	got := IndexLimits{MaxLines: 2, MaxBytes: 10}.Truncate("a\nb\nc")
	assert.True(t, got.WasLineTruncated)
	assert.False(t, got.WasByteTruncated)
	assert.True(t, strings.HasPrefix(got.Content, "a\nb\n\n> NOTE"))
}

func TestJSTrimCompatibility(t *testing.T) {
	got := IndexLimits{}.Truncate("\ufeff\u00a0 x \u2028\u3000")
	assert.Equal(t, "x", got.Content)
	got = IndexLimits{}.Truncate("\u0085x\u0085")
	assert.Equal(t, "x", got.Content, "NEL is a C1 control: cleaned out before the trim")
}

func TestIndexIsCleanedBeforeInjection(t *testing.T) {
	in := "- [a](a.md) — one\r\n- [b](b.md)\u2028- [c](c.md)\u0007 bell\u200b\u202e\ue000 \u200d\ufe0f kept\t tab"
	got := IndexLimits{}.Truncate(in)
	assert.Equal(t, "- [a](a.md) — one\n- [b](b.md)\n- [c](c.md) bell \u200d\ufe0f kept\t tab", got.Content)
	assert.Equal(t, "plain — text\n", cleanIndexText("plain — text\n"))
}

func TestTruncationSaysWhereItCut(t *testing.T) {
	long := strings.Repeat("x", 100)
	got := IndexLimits{MaxLines: 2}.Truncate("one\ntwo\n" + long + "\nfour")
	assert.Contains(t, got.Content, `2 of 4 lines were cut off, starting at line 3 ("`+strings.Repeat("x", 79)+`…").`)
	got = IndexLimits{MaxBytes: 10}.Truncate(strings.Repeat("y", 30))
	assert.Contains(t, got.Content, "Everything after the first 10 characters of line 1 was cut off.")
	got = IndexLimits{MaxBytes: 12}.Truncate("aaaa\nbbbb\ncccc\ndddd")
	assert.True(t, strings.HasPrefix(got.Content, "aaaa\nbbbb\n\n> NOTE"), got.Content)
	assert.Contains(t, got.Content, `2 of 4 lines were cut off, starting at line 3 ("cccc").`)
}

func TestFormatFileSize(t *testing.T) {
	for n, want := range map[int]string{
		0: "0 bytes", 1023: "1023 bytes", 1024: "1KB", 1536: "1.5KB",
		25_000: "24.4KB", 1024 * 1024: "1MB", 5 * 1024 * 1024 * 1024: "5GB",
		1024*1024 + 100*1024: "1.1MB",
	} {
		assert.Equal(t, want, FormatFileSize(n), "%d", n)
	}
}

func FuzzTruncateEntrypointContent(f *testing.F) {
	f.Add("- [a](a.md) — b\n- [c](c.md)", 3, 20)
	f.Add(strings.Repeat("é😀\n", 50), 10, 40)
	f.Add("", 1, 1)
	f.Fuzz(func(t *testing.T, raw string, maxLines, maxBytes int) {
		if !utf8.ValidString(raw) {
			return
		}
		l := IndexLimits{MaxLines: maxLines%300 + 1, MaxBytes: maxBytes%30_000 + 1}
		if l.MaxLines < 1 {
			l.MaxLines = -l.MaxLines + 1
		}
		if l.MaxBytes < 1 {
			l.MaxBytes = -l.MaxBytes + 1
		}
		got := l.Truncate(raw)
		if !got.WasLineTruncated && !got.WasByteTruncated {
			if got.Content != strings.TrimFunc(raw, isJSSpace) {
				t.Fatalf("within limits the text must be unchanged")
			}
			return
		}
		i := strings.LastIndex(got.Content, "\n\n> NOTE: ")
		if i < 0 {
			t.Fatalf("truncated content lacks the warning block")
		}
		kept := got.Content[:i]
		if utf16Len(kept) > l.MaxBytes {
			t.Fatalf("kept %d units, limit %d", utf16Len(kept), l.MaxBytes)
		}
		if n := strings.Count(kept, "\n") + 1; n > l.MaxLines {
			t.Fatalf("kept %d lines, limit %d", n, l.MaxLines)
		}
		if !strings.HasPrefix(strings.TrimFunc(raw, isJSSpace), kept) {
			t.Fatalf("kept text is not a prefix of the original")
		}
		if !utf8.ValidString(got.Content) {
			t.Fatalf("cut split a rune")
		}
	})
}

// The one-pass measure of a clean index agrees with cleaning first, on
// text mixing what cleaning keeps, changes and drops.
func TestMeasureIndexFastPathAgrees(t *testing.T) {
	pieces := []string{"a", " ", "\n", "\t", "\r", "\r\n", "\x07", "\x7f", "\u0085", "\u2028", "\u2029", "\u200b", "\u200d", "\ufeff",
		"\ufe0f", "—", "é", "😀", "\U000e0001", "\xff", "- [A](a.md) — hook", "  "}
	slow := func(raw string) (string, int, int) {
		trimmed := strings.TrimFunc(cleanIndexText(raw), isJSSpace)
		return trimmed, strings.Count(trimmed, "\n") + 1, utf16Len(trimmed)
	}
	r := rand.New(rand.NewPCG(3, 5))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := r.IntN(10); k >= 0; k-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		raw := b.String()
		gotText, gotLines, gotUnits := measureIndex(raw)
		wantText, wantLines, wantUnits := slow(raw)
		require.Equal(t, wantText, gotText, "%q", raw)
		require.Equal(t, wantLines, gotLines, "%q", raw)
		require.Equal(t, wantUnits, gotUnits, "%q", raw)
	}
}
