package screen

import (
	"strings"
	"testing"
)

// prose is a clean document of about n bytes: notes that mention the
// system, users, instructions and markup without addressing the model.
func prose(n int) string {
	const para = "The build runs on the system's CI runner; tell the user when it fails. " +
		"New instructions for onboarding live in docs/onboarding.md, and the linter ignores " +
		"generated files. Use Vector<int> in the C++ code and café, naïve, “quotes” — fine.\n"
	return strings.Repeat(para, n/len(para)+1)[:n]
}

// BenchmarkBlocking reports the throughput of the screens a shared write
// runs (invisible characters, high-confidence injection, index links)
// over a 250 KB clean topic file (no index links).
func BenchmarkBlocking(b *testing.B) {
	doc := prose(250_000)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if f := Blocking(doc, Options{Shared: true}); f != nil {
			b.Fatalf("false positive: %v", f)
		}
	}
}

// BenchmarkInvisible is the invisible-character screen alone, what a
// private write runs.
func BenchmarkInvisible(b *testing.B) {
	doc := prose(250_000)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if f := findInvisible(doc); f != nil {
			b.Fatalf("false positive: %v", f)
		}
	}
}
