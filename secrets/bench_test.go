package secrets

import (
	"strings"
	"testing"
)

// BenchmarkScanSecrets reports the throughput of a secret scan over a
// 250 KB clean document (the largest entry a sync pushes).
func BenchmarkScanSecrets(b *testing.B) {
	doc := cleanDocument(250_000)
	s := New()
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := s.Scan(doc); got != nil {
			b.Fatalf("false positive: %v", got)
		}
	}
}

// BenchmarkScanSecretsWorstCase is the same document with every keyword
// prefix sprinkled through it, so every rule's pattern has to run.
func BenchmarkScanSecretsWorstCase(b *testing.B) {
	var kw strings.Builder
	for _, r := range secretRules() {
		for _, k := range r.keywords {
			kw.WriteString(" " + k + "x ")
		}
	}
	doc := cleanDocument(250_000-kw.Len()) + kw.String()
	s := New()
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Scan(doc)
	}
}

// BenchmarkScanAllSecrets is BenchmarkScanSecrets with the
// low-confidence rules too (ScanAll, what redaction reports).
func BenchmarkScanAllSecrets(b *testing.B) {
	doc := cleanDocument(250_000)
	s := New()
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := s.ScanAll(doc); got != nil {
			b.Fatalf("false positive: %v", got)
		}
	}
}
