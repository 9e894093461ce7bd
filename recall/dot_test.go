package recall

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDotMatchesTheGoLoop: the dot product the vector side uses (AVX2
// where the CPU has it) equals the plain loop on every length up to 300,
// random values and the extremes, and on vectors longer than the other.
func TestDotMatchesTheGoLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 301 {
		for _, fill := range []func() int8{
			func() int8 { return int8(r.IntN(256) - 128) },
			func() int8 { return -128 },
			func() int8 { return 127 },
		} {
			a, b := make(vector, n), make(vector, n+r.IntN(20))
			for i := range a {
				a[i] = fill()
			}
			for i := range b {
				b[i] = fill()
			}
			var want int32
			for i := range a {
				want += int32(a[i]) * int32(b[i])
			}
			if got := dot(a, b[:n]); got != want {
				t.Fatalf("n=%d: dot %d, want %d", n, got, want)
			}
			if got := dotGo(a, b); got != want {
				t.Fatalf("n=%d: dotGo %d, want %d", n, got, want)
			}
		}
	}
}

// BenchmarkDot reports a 256-value dot product's time in ns (dot-ns)
// and over the plain loop's in the same run (x-go).
func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	q, m := make(vector, 256), make(vector, 256)
	for i := range q {
		q[i], m[i] = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
	}
	var sum int64
	for range 10_000 { // warm both up: a run of one iteration measures them warm too
		sum += int64(dot(q, m)) + int64(dotGo(q, m))
	}
	var fast, slow time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for range 100 {
			sum += int64(dot(q, m))
		}
		fast += time.Since(start)
		start = time.Now()
		for range 100 {
			sum += int64(dotGo(q, m))
		}
		slow += time.Since(start)
	}
	if sum == 1 {
		b.Log(sum)
	}
	b.ReportMetric(float64(fast.Nanoseconds())/float64(100*b.N), "dot-ns")
	b.ReportMetric(float64(fast)/float64(slow), "x-go")
}

// TestTheBlockAndTheCacheShareTheVectors: the vectors moved into the
// block for reading in order are the vector cache's too, not a copy.
func TestTheBlockAndTheCacheShareTheVectors(t *testing.T) {
	fsys, dir := otherWordsTree(t)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: &fakeEmbedder{}, VectorCache: t.TempDir()})
	require.NoError(t, err)
	defer f.Close()
	names(f, "which automobile did she get")
	c := f.corpus
	c.mu.Lock()
	defer c.mu.Unlock()
	vc := c.cache.Load()
	require.NotNil(t, vc)
	shared := 0
	for _, e := range c.embeddedFiles() {
		h := c.files[e.rel].hash
		if cached, ok := vc.get(h); ok && &cached[0] == &e.v[0] {
			shared++
		}
	}
	assert.Equal(t, len(c.embeddedFiles()), shared)
}
