package recall

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Embedder turns texts into vectors, for recall by meaning as well as by
// words: a question that names a thing by another word still finds it.
// The host implements it over its embedding model (llm/openai has one).
// Embed returns one vector per text, in order, all of one length; it is
// called with at most EmbedBatch texts at a time.
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
	// EmbedBatch is the most texts one Embed call carries.
	EmbedBatch = 64
	// MaxEmbeddedBytes is how much of a memory (name, description, body)
	// is embedded.
	MaxEmbeddedBytes = 2048
	// rrfK is reciprocal rank fusion's constant: 1/(rrfK + rank).
	rrfK = 60
	// fusionDepth is how deep each ranking goes into the fusion.
	fusionDepth = 30
)

// ErrEmbedding is wrapped around an embedder's failure or a malformed
// answer (a count or a length that does not match); recall then falls
// back to words alone for that Find.
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
	var dot int64
	for i := range a {
		dot += int64(a[i]) * int64(b[i])
	}
	return float64(dot) / (127 * 127)
}

// embedText is what of a memory is embedded.
func embedText(name, description, body string) string {
	t := name + "\n" + description + "\n" + body
	if len(t) > MaxEmbeddedBytes {
		t = t[:MaxEmbeddedBytes]
	}
	return t
}

// embedAll embeds texts in batches of EmbedBatch, checking each answer.
func embedAll(ctx context.Context, e Embedder, texts []string) ([]vector, error) {
	out := make([]vector, 0, len(texts))
	for start := 0; start < len(texts); start += EmbedBatch {
		batch := texts[start:min(start+EmbedBatch, len(texts))]
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

// fuse merges rankings by reciprocal rank fusion: each key scores
// Σ 1/(rrfK + rank) over the rankings it is in; best first.
func fuse(rankings ...[]string) []scored {
	score := map[string]float64{}
	for _, r := range rankings {
		for i, key := range r {
			score[key] += 1 / float64(rrfK+i+1)
		}
	}
	out := make([]scored, 0, len(score))
	for k, s := range score {
		out = append(out, scored{k, s})
	}
	sortScored(out)
	return out
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
