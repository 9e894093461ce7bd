package main

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/agentmem-sdk/agentmem/recall"
)

// trigramDims is the length of a TrigramEmbedder's vectors.
const trigramDims = 512

// TrigramEmbedder is a recall.Embedder that needs no model: each word's
// character trigrams (with word boundaries) hashed into trigramDims
// buckets. It knows word forms ("employed", "employer") and shared
// spellings, never synonyms: it measures the hybrid fusion's machinery
// offline, with an embedder far weaker than a model's.
type TrigramEmbedder struct{}

// Embed implements recall.Embedder.
func (TrigramEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, trigramDims)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if len(w) < 3 {
				continue
			}
			w = "^" + w + "$"
			for k := 0; k+3 <= len(w); k++ {
				h := fnv.New32a()
				_, _ = h.Write([]byte(w[k : k+3]))
				v[h.Sum32()%trigramDims]++
			}
		}
		v[0] += 0.01 // no text is the zero vector
		out[i] = v
	}
	return out, nil
}

// Blend is an embedder whose vector is each of its embedders' unit
// vectors side by side: its cosine is the mean of theirs.
type Blend []recall.Embedder

// Embed implements recall.Embedder.
func (b Blend) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for _, e := range b {
		vs, err := e.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		for i, v := range vs {
			var n float64
			for _, x := range v {
				n += float64(x) * float64(x)
			}
			scale := float32(0)
			if n > 0 {
				scale = float32(1 / math.Sqrt(n))
			}
			for _, x := range v {
				out[i] = append(out[i], x*scale)
			}
		}
	}
	return out, nil
}
