package recall

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Embedder turns texts into vectors, for recall by meaning as well as by
// words: a question that names a thing by another word still finds it.
// The host implements it over its embedding model (llm/openai has one).
// Embed returns one vector per text, in order, all of one length; it is
// called with at most 64 texts at a time.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedderFunc adapts a function to Embedder.
type EmbedderFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Embed implements Embedder.
func (f EmbedderFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}

// Hybrid recall limits.
const (
	// embedBatch is the most texts one Embed call carries.
	embedBatch = 64
	// maxEmbeddedBytes is how much of a memory (name, description, body)
	// is embedded.
	maxEmbeddedBytes = 2048
	// selectionDepth is how deep the lexical ranking goes into the
	// selection and into supersession.
	selectionDepth = 30
	// falseAlarm is the vector side's false-alarm rate for an embedder
	// not trusted (see Trust): the chance that an embedder whose
	// similarities say nothing (noise) still has a memory of a directory
	// found with confidence, for one message.
	falseAlarm = 0.01
	// minWordFit is how many memories words must find for the vector
	// side to tell what the word scores explain (explainedByWords).
	minWordFit = 10
)

// ErrEmbedding is wrapped around an embedder's failure or a malformed
// answer (a count or a length that does not match, NaN or an infinity);
// recall then falls back to words alone for that Find.
var ErrEmbedding = errors.New("recall: embedding failed")

// vector is a unit vector quantized to int8: a quarter of float32's
// memory, cosine within about 1% of the exact one.
type vector []int8

func quantize(v []float32) vector {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	out := make(vector, len(v))
	if norm == 0 {
		return out
	}
	for i, x := range v {
		out[i] = int8(math.Round(float64(x) / norm * 127))
	}
	return out
}

// cosine of two quantized unit vectors (0 when their lengths differ).
func cosine(a, b vector) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	if len(a) > 130_000 { // past what an int32 sum holds: slowly
		var dot int64
		for i := range a {
			dot += int64(a[i]) * int64(b[i])
		}
		return float64(dot) / (127 * 127)
	}
	return float64(dot(a, b)) / (127 * 127)
}

// dotGo is the dot product of a and b (of one length, at most 130,000
// values: a product is at most 127², so an int32 sum holds it): four
// sums, eight values a step with one bounds check each.
func dotGo(a, b vector) int32 {
	b = b[:len(a)]
	var d0, d1, d2, d3 int32
	for len(a) >= 8 {
		a8, b8 := a[:8:8], b[:8:8]
		d0 += int32(a8[0])*int32(b8[0]) + int32(a8[4])*int32(b8[4])
		d1 += int32(a8[1])*int32(b8[1]) + int32(a8[5])*int32(b8[5])
		d2 += int32(a8[2])*int32(b8[2]) + int32(a8[6])*int32(b8[6])
		d3 += int32(a8[3])*int32(b8[3]) + int32(a8[7])*int32(b8[7])
		a, b = a[8:], b[8:]
	}
	for i := range a {
		d0 += int32(a[i]) * int32(b[i])
	}
	return d0 + d1 + d2 + d3
}

// embedText is what of a memory is embedded.
func embedText(name, description, body string) string {
	t := name + "\n" + description + "\n" + body
	if len(t) > maxEmbeddedBytes {
		t = t[:maxEmbeddedBytes]
	}
	return t
}

// embedAll embeds texts in batches of embedBatch, checking each answer.
func embedAll(ctx context.Context, e Embedder, texts []string) ([]vector, error) {
	out := make([]vector, 0, len(texts))
	for start := 0; start < len(texts); start += embedBatch {
		batch := texts[start:min(start+embedBatch, len(texts))]
		raw, err := e.Embed(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
		}
		if len(raw) != len(batch) {
			return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrEmbedding, len(raw), len(batch))
		}
		for _, r := range raw {
			if len(r) == 0 {
				return nil, fmt.Errorf("%w: an empty vector", ErrEmbedding)
			}
			if slices.ContainsFunc(r, func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) {
				return nil, fmt.Errorf("%w: a vector holding NaN or an infinity", ErrEmbedding)
			}
			if len(out) > 0 && len(r) != len(out[0]) {
				return nil, fmt.Errorf("%w: a vector of length %d among others of %d", ErrEmbedding, len(r), len(out[0]))
			}
			out = append(out, quantize(r))
		}
	}
	return out, nil
}

// scored is one memory in a ranking.
type scored struct {
	key   string
	score float64
}

// confident returns the memories whose similarity stands out from the
// rest, each with its confidence in (0, 1); nil when none does.
//
// The similarities of the memories a message does not need are the
// background; a memory is found by meaning when its similarity lies
// further above the background's median than the largest of n draws from
// it would reach except with probability falseAlarm. The background's
// spread is estimated robustly (the larger of the median absolute
// deviation and the mean absolute deviation from the median, each scaled
// to a normal distribution's standard deviation), so the few memories a
// message needs do not hide themselves by widening it; a memory's
// z-score is its distance above the median in that spread, and it is
// found when z reaches t, the normal quantile of 1 - falseAlarm/n (about
// 3.3 at 20 memories, 4.1 at 2,000). Its confidence is 1 - t/z. When the
// similarities do not spread at all (an embedder that gives every text
// the same or the zero vector), or spread evenly (random vectors, an
// embedder that knows nothing of these texts), nothing stands out and
// the embedder abstains: the selection is then the lexical one. A
// directory of three memories or fewer cannot show an outlier at this
// rate. minSimilarity, when positive, is a cosine below which nothing
// counts whatever its z. words, when given, are the memories words found
// with their share of the best word match: a word-found memory's z is
// then only what its words do not explain (explainedByWords).
func confident(sims []scored, minSimilarity float64, words map[string]float64, alarm float64) map[string]float64 {
	n := len(sims)
	if n < 2 {
		return nil
	}
	vals := make([]float64, n)
	for i, s := range sims {
		vals[i] = s.score
	}
	median, spread, mostAlike := robustSpread(vals)
	if spread <= 1e-9 || mostAlike {
		// Most memories are exactly as similar to the message as each
		// other: a sparse embedder (a bag of words) that tells only
		// which memories share a word, which the words already know.
		return nil
	}
	t := math.Sqrt2 * math.Erfcinv(2*alarm/float64(n))
	z := make([]float64, n)
	for i, s := range sims {
		z[i] = (s.score - median) / spread
	}
	if len(words) > 0 {
		explainedByWords(sims, z, words, t, alarm)
	}
	var out map[string]float64
	for i, s := range sims {
		if z[i] < t || s.score < minSimilarity {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[s.key] = 1 - t/z[i]
	}
	return out
}

// explainedByWords takes out of each word-found memory's z-score what
// its word score already predicts, so the vector side counts only what
// the words did not say: an embedder that knows words (hashed words,
// character trigrams, much of any real model) ranks the memories words
// found high as well, and counted again that would push weak word
// matches over better ones. The prediction is a straight line fitted by
// least squares over every memory (word score, 0 for one words did not
// find, against z-score clipped to ±t, so the few memories that stand
// out do not set the line); a line that does not rise (vectors that do
// not follow the words: noise, or a model that knows what words miss)
// takes nothing, and so do fewer than minWordFit word-found memories (too
// few to draw a line through: one memory found by both would be taken as
// the words' doing). What the line leaves of each word-found memory is
// then judged against what it leaves of the others (their median and
// robust spread, at the false-alarm rate over as many memories): an
// embedder that weighs words otherwise than the word ranking misses the
// line by much on many memories, and none of them stands out for that.
// Memories words did not find keep their z-score.
func explainedByWords(sims []scored, z []float64, words map[string]float64, t, alarm float64) {
	if len(words) < minWordFit {
		return
	}
	n := float64(len(sims))
	var sx, sy, sxx, sxy float64
	for i, s := range sims {
		x, y := words[s.key], max(-t, min(t, z[i]))
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	vx := sxx - sx*sx/n
	if vx <= 1e-12 {
		return
	}
	slope := (sxy - sx*sy/n) / vx
	if slope <= 0 {
		return
	}
	intercept := sy/n - slope*sx/n
	var found []int
	var res []float64
	for i, s := range sims {
		if x := words[s.key]; x > 0 {
			z[i] -= intercept + slope*x
			found = append(found, i)
			res = append(res, z[i])
		}
	}
	// How far the line misses is itself spread: an embedder that weighs
	// words otherwise than the word ranking does misses by much on many
	// memories. A word-found memory counts only when what is left stands
	// out from what is left of the others, as a memory's similarity must
	// stand out from the directory's.
	median, spread, _ := robustSpread(res)
	if spread <= 1e-9 {
		return
	}
	tw := math.Sqrt2 * math.Erfcinv(2*alarm/float64(len(found)))
	for _, i := range found {
		z[i] = (z[i] - median) / spread * t / tw
	}
}

// robustSpread returns the median of vals and their spread about it: the
// larger of the median absolute deviation and the mean absolute
// deviation, each scaled to a normal distribution's sigma (1.4826,
// 1.2533), so the few values that stand out do not widen it. mostAlike
// reports that at least half the values equal the median (a median
// absolute deviation of zero). vals is reordered and overwritten.
func robustSpread(vals []float64) (median, spread float64, mostAlike bool) {
	median = medianOf(vals)
	var absDev float64
	for i, v := range vals {
		vals[i] = math.Abs(v - median)
		absDev += vals[i]
	}
	mad := medianOf(vals)
	return median, max(1.4826*mad, 1.2533*absDev/float64(len(vals))), mad <= 1e-12
}

// medianOf returns the median of v, reordering v: a selection in linear
// time, where sorting would take n log n (it runs once per Find over
// every memory's similarity).
func medianOf(v []float64) float64 {
	n := len(v)
	hi := nthSmallest(v, n/2)
	if n%2 == 1 {
		return hi
	}
	// v[:n/2] now holds the n/2 smallest values: the other middle one is
	// their largest.
	return (slices.Max(v[:n/2]) + hi) / 2
}

// nthSmallest returns the k-th smallest value of v (from 0), leaving the
// k smallest in v[:k] (Hoare's selection with a median-of-three pivot).
func nthSmallest(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// sortScored orders a ranking best first, ties by key.
func sortScored(out []scored) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].key < out[j].key
	})
}
