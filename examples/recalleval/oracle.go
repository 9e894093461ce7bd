package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/agentmem-sdk/agentmem/recall"
)

// oracleDims is the length of the oracle's vectors.
const oracleDims = 256

// Oracle is an embedder built from a labelled set's answers: each memory
// a random direction of its own (by its name and description, the first
// two lines of what recall embeds), and each question, for a share
// quality of the questions (picked by the question's hash), the sum of
// the directions of the memories it needs plus as much noise; for the
// rest, and for any other text, a random direction. quality 0 is a
// random embedder; 1 knows every answer, through noise.
type Oracle struct {
	quality float64
	needs   map[string][]string // question → needed memories' name and description
}

// NewOracle returns the oracle embedder of set at quality (0 to 1).
func NewOracle(set *Set, quality float64) *Oracle {
	key := map[string]string{}
	for _, m := range set.Memories {
		key[m.File] = m.Name + "\n" + m.Description
	}
	o := &Oracle{quality: quality, needs: map[string][]string{}}
	for _, q := range set.Queries {
		for _, n := range q.Needs {
			o.needs[q.Query] = append(o.needs[q.Query], key[n])
		}
	}
	return o
}

// direction is a random unit vector seeded by s.
func direction(s string) []float64 {
	h := sha256.Sum256([]byte(s))
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
	v := make([]float64, oracleDims)
	var n float64
	for i := range v {
		v[i] = r.NormFloat64()
		n += v[i] * v[i]
	}
	for i := range v {
		v[i] /= math.Sqrt(n)
	}
	return v
}

// Embed implements recall.Embedder.
func (o *Oracle) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float64, oracleDims)
		if needs, ok := o.needs[t]; ok {
			h := sha256.Sum256([]byte("quality " + t))
			if float64(binary.LittleEndian.Uint64(h[:8])>>11)/(1<<53) < o.quality {
				for _, n := range needs {
					for j, x := range direction(n) {
						v[j] += x / math.Sqrt(float64(len(needs)))
					}
				}
			}
			for j, x := range direction("noise " + t) {
				v[j] += x
			}
		} else if lines := strings.SplitN(t, "\n", 3); len(lines) == 3 {
			v = direction(lines[0] + "\n" + lines[1])
		} else {
			v = direction(t)
		}
		out[i] = make([]float32, oracleDims)
		for j, x := range v {
			out[i][j] = float32(x)
		}
	}
	return out, nil
}

// Labelled turns a set's queries into CompareEmbedder's questions.
func Labelled(qs []Query) []recall.Question {
	out := make([]recall.Question, len(qs))
	for i, q := range qs {
		out[i] = recall.Question{Query: q.Query, Needs: q.Needs}
	}
	return out
}
