package recall

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// controlDims is the length of a control embedder's vectors, and
// stemmedDims of "stemmed-words" (few words share a bucket).
const (
	controlDims = 256
	stemmedDims = 4096
)

// ErrUnknownControl is returned by ControlEmbedder for a name it does not
// know; ControlEmbedderNames lists the names it does.
var ErrUnknownControl = errors.New("recall: no such control embedder")

// ControlEmbedderNames returns the names ControlEmbedder knows.
func ControlEmbedderNames() []string {
	return []string{"zero", "random", "hashed-words", "stemmed-words", "word-vectors"}
}

// ControlEmbedder returns an embedder that knows nothing of meaning, to
// see with CompareEmbedder what hybrid recall costs when an embedder adds
// nothing (it should cost nothing):
//
//   - "zero": every text the zero vector (an embedder that knows nothing);
//   - "random": a random vector per text (the same text, the same vector);
//   - "hashed-words": the text's words counted into 256 hashed buckets (a
//     bag of words, which words alone already know better);
//   - "stemmed-words": the text's stemmed words, each counted 1 + ln(times
//     it occurs), in 4,096 hashed buckets (a bag of words that weighs
//     words otherwise than the word ranking does: every word alike,
//     however common);
//   - "word-vectors": the average of a random vector per word (averaged
//     word vectors that were never trained).
//
// They need no model and no network.
func ControlEmbedder(name string) (Embedder, error) {
	switch name {
	case "zero":
		return EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = make([]float32, controlDims)
			}
			return out, nil
		}), nil
	case "random":
		return eachText(func(t string) []float32 { return gaussian(sha256.Sum256([]byte(t))) }), nil
	case "hashed-words":
		return eachText(func(t string) []float32 {
			v := make([]float32, controlDims)
			for _, w := range words(t) {
				h := fnv.New32a()
				_, _ = h.Write([]byte(w))
				v[h.Sum32()%controlDims]++
			}
			return v
		}), nil
	case "stemmed-words":
		return eachText(func(t string) []float32 {
			tf := map[string]int{}
			for _, w := range words(t) {
				tf[english.Stem(w, false)]++
			}
			v := make([]float32, stemmedDims)
			for w, n := range tf {
				h := fnv.New32a()
				_, _ = h.Write([]byte(w))
				v[h.Sum32()%stemmedDims] += float32(1 + math.Log(float64(n)))
			}
			return v
		}), nil
	case "word-vectors":
		return eachText(func(t string) []float32 {
			v := make([]float32, controlDims)
			ws := words(t)
			for _, w := range ws {
				for i, x := range gaussian(sha256.Sum256([]byte(w))) {
					v[i] += x / float32(len(ws))
				}
			}
			return v
		}), nil
	}
	return nil, fmt.Errorf("%w: %q (want one of %s)", ErrUnknownControl, name, strings.Join(ControlEmbedderNames(), ", "))
}

// eachText makes an Embedder of a function of one text.
func eachText(embed func(string) []float32) Embedder {
	return EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = embed(t)
		}
		return out, nil
	})
}

// gaussian is a vector of controlDims normal draws seeded by seed.
func gaussian(seed [32]byte) []float32 {
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:16])))
	v := make([]float32, controlDims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// words are the text's lower-cased runs of letters and digits.
func words(t string) []string {
	return strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
