// Package docstest finds, for tests, the commands the README and the
// guides under docs/ give, so a test runs them as written wherever a
// section lives.
//
// A test names a block by a marker, a piece of text just before it; the
// block is the first ```sh block after the marker in the one file
// (README.md or docs/*.md) that holds it. Tests call Block with the
// marker as a string literal, which is how the documentation test finds
// the blocks no test runs.
package docstest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Fence is one fenced ```sh block of a page.
type Fence struct {
	File   string   // the page, as a path under the root given
	Line   int      // the line of the opening fence, from 1
	Offset int      // the byte offset of the opening fence
	Lines  []string // the lines between the fences
}

// Files returns the README and every guide under docs/ of the repository
// at root, as paths: README.md first, then the guides sorted by name.
func Files(root string) ([]string, error) {
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(guides)
	return append([]string{filepath.Join(root, "README.md")}, guides...), nil
}

// Text returns the README and every guide joined, for a test that looks
// for a statement wherever it is.
func Text(t testing.TB, root string) string {
	t.Helper()
	files, err := Files(root)
	if err != nil {
		t.Fatalf("docstest: listing the guides: %v", err)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("docstest: %v", err)
		}
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String()
}

// Block returns the lines of the first ```sh block after marker in the
// one page under root that holds marker. The test fails when no page or
// more than one holds it, or no block follows it.
func Block(t testing.TB, root, marker string) []string {
	t.Helper()
	f, err := Locate(root, marker)
	if err != nil {
		t.Fatalf("docstest: %v", err)
	}
	return f.Lines
}

// Locate is Block without a test: the block marker leads to, or a
// *MarkerError that says what is missing.
func Locate(root, marker string) (Fence, error) {
	files, err := Files(root)
	if err != nil {
		return Fence{}, err
	}
	var found []string
	var text string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return Fence{}, err
		}
		if strings.Contains(string(data), marker) {
			found = append(found, f)
			text = string(data)
		}
	}
	switch len(found) {
	case 0:
		return Fence{}, &MarkerError{Marker: marker, Problem: "is in neither README.md nor docs/*.md"}
	case 1:
	default:
		return Fence{}, &MarkerError{Marker: marker, Problem: "is in more than one page (" + strings.Join(found, ", ") + "); make it unique"}
	}
	i := strings.Index(text, marker)
	for _, f := range fencesOf(found[0], text, "sh") {
		if f.Offset >= i {
			return f, nil
		}
	}
	return Fence{}, &MarkerError{Marker: marker, Problem: "has no closed ```sh block after it in " + found[0]}
}

// Fences returns every ```sh block of the README and the guides.
func Fences(root string) ([]Fence, error) { return fencesIn(root, "sh") }

// GoFences returns every ```go block of the README and the guides, in
// page order, for a test that type-checks them.
func GoFences(root string) ([]Fence, error) { return fencesIn(root, "go") }

// fencesIn returns every block of one language of the README and the
// guides, in page order.
func fencesIn(root, lang string) ([]Fence, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var all []Fence
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, fencesOf(f, string(data), lang)...)
	}
	return all, nil
}

// fencesOf finds the closed blocks of one language in one page,
// skipping the inside of every other fenced block.
func fencesOf(file, text, lang string) []Fence {
	var out []Fence
	lines := strings.SplitAfter(text, "\n")
	offset := 0
	var open *Fence
	inOther := false
	for n, raw := range lines {
		line := strings.TrimRight(raw, "\n")
		switch {
		case open != nil && line == "```":
			out = append(out, *open)
			open = nil
		case open != nil:
			open.Lines = append(open.Lines, line)
		case inOther && line == "```":
			inOther = false
		case inOther:
		case line == "```"+lang:
			open = &Fence{File: file, Line: n + 1, Offset: offset, Lines: []string{}}
		case strings.HasPrefix(line, "```"):
			inOther = true
		}
		offset += len(raw)
	}
	return out
}

// MarkerError says why a marker does not lead to a block.
type MarkerError struct {
	Marker  string
	Problem string
}

func (e *MarkerError) Error() string {
	return "the marker \"" + strings.ReplaceAll(e.Marker, "\n", `\n`) + "\" " + e.Problem
}
