package screen

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Confidence says how sure a rule is that a match is what it names.
type Confidence int

const (
	// High rules block: an invisible character or an index link on every
	// write, an injection on a shared write.
	High Confidence = iota
	// Low rules are reported (agentmem lint, ScanAll) but never block,
	// since ordinary notes hit them too.
	Low
)

func (c Confidence) String() string {
	if c == Low {
		return "low"
	}
	return "high"
}

// Screen names the family of a rule.
type Screen string

// The screens: invisible characters, injection, index links.
const (
	ScreenInvisible Screen = "invisible"
	ScreenInjection Screen = "injection"
	ScreenIndexLink Screen = "index-link"
)

// Finding is one match of one rule in a text. It never holds the text.
type Finding struct {
	Screen     Screen
	RuleID     string
	Label      string
	Confidence Confidence
	// Offset is the byte offset of the match in the text, Line its line
	// (1-based).
	Offset int
	Line   int
	// CodePoint is the character an invisible rule found (0 otherwise).
	CodePoint rune
}

// Where says where the finding is: "line 3 (byte 57)".
func (f Finding) Where() string { return fmt.Sprintf("line %d (byte %d)", f.Line, f.Offset) }

// CodePointName is the finding's character as U+XXXX and its name.
func (f Finding) CodePointName() string {
	if f.CodePoint == 0 {
		return ""
	}
	s := fmt.Sprintf("U+%04X", f.CodePoint)
	if n := runeName(f.CodePoint); n != "" {
		s += " " + n
	}
	return s
}

func (f Finding) String() string {
	s := f.Where() + ": " + f.RuleID
	if f.CodePoint != 0 {
		s += " " + f.CodePointName()
	}
	return s
}

// Options says which screens Check applies.
type Options struct {
	// Shared refuses high-confidence injections too: the write is headed
	// for memory that others read.
	Shared bool
	// Index screens the text as an index (MEMORY.md) too: one link per
	// pointer line, inside the index's own directory.
	Index bool
}

// Check returns an *Error for the first finding that blocks a write of
// text (by offset): an invisible character, an index link when
// opts.Index, a high-confidence injection when opts.Shared. Nil when none.
// An injection is returned only when nothing else blocks: a server under
// review passes an injection on to a person, never the rest.
func Check(text string, opts Options) error {
	f := Blocking(text, opts)
	if len(f) == 0 {
		return nil
	}
	i := max(0, slices.IndexFunc(f, func(f Finding) bool { return f.Screen != ScreenInjection }))
	return &Error{Finding: f[i], Shared: opts.Shared}
}

// CheckShared returns Check's *Error for text written at name (a team
// key or a store path) into memory shared with others: what every
// server refuses, and so what a sync client leaves at home instead of
// sending. A MEMORY.md is screened as an index.
func CheckShared(name, text string) error {
	return Check(text, Options{Shared: true, Index: path.Base(name) == "MEMORY.md"})
}

// Blocking returns every finding that blocks a write of text under
// opts, in text order.
func Blocking(text string, opts Options) []Finding {
	out := findInvisible(text)
	if opts.Index {
		out = append(out, findIndexLinks(text)...)
	}
	if opts.Shared {
		out = append(out, injection(text, false)...)
	}
	sortFindings(out)
	return out
}

// ScanAll returns every finding of every screen, low confidence
// included, in text order; index links only when index is set.
func ScanAll(text string, index bool) []Finding {
	out := append(findInvisible(text), findInjection(text)...)
	if index {
		out = append(out, findIndexLinks(text)...)
	}
	sortFindings(out)
	return out
}

func sortFindings(f []Finding) {
	sort.SliceStable(f, func(i, j int) bool { return f[i].Offset < f[j].Offset })
}

// RuleIDs lists the id of every rule: the invisible ones, the
// injection ones (high, then low), the index ones.
func RuleIDs() []string {
	ids := []string{RuleUnicodeTag, RuleBidiControl, RuleBidiMark, RuleZeroWidth, RuleZeroWidthJoiner, RuleDefaultIgnorable, RuleBlank}
	for _, r := range injectionRules {
		if !r.low {
			ids = append(ids, r.id)
		}
	}
	for _, r := range injectionRules {
		if r.low {
			ids = append(ids, r.id)
		}
	}
	return append(ids, RuleIndexExtraLink, RuleIndexLinkOut)
}

// lines maps byte offsets to 1-based line numbers.
type lines []int // offsets of each '\n'

func newLines(text string) lines {
	l := lines{} // never nil, so a caller that builds it once can tell
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		l = append(l, i+j)
		i += j + 1
	}
	return l
}

func (l lines) at(off int) int { return sort.SearchInts(l, off) + 1 }

// start returns the offset where the line holding off begins.
func (l lines) start(off int) int {
	if i := sort.SearchInts(l, off); i > 0 {
		return l[i-1] + 1
	}
	return 0
}

// LineAt returns the line of text holding byte offset off, without its
// newline.
func LineAt(text string, off int) string {
	start := strings.LastIndexByte(text[:off], '\n') + 1
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		return text[start:]
	}
	return text[start : off+end]
}
