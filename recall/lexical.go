package recall

import (
	"math"
	"sort"
)

// Document is what the lexical index knows of one memory.
type Document struct {
	// Filename identifies the memory (its path relative to the memory dir).
	Filename    string
	Name        string
	Description string
	Body        string
}

// Field weights: a term in the name counts three times, in the
// description twice, in the body once (a simple BM25F).
const (
	nameWeight = 3
	descWeight = 2
	bodyWeight = 1
	bm25K1     = 1.2
	bm25B      = 0.75
)

type posting struct {
	doc int
	tf  float64
}

// Index is a BM25 index over memories. Build it once with NewIndex and
// search it many times; it is immutable and safe for concurrent use.
type Index struct {
	files    []string
	lengths  []float64
	avgLen   float64
	postings map[string][]posting
}

// Hit is one search result.
type Hit struct {
	Filename string
	// Score is the BM25 score; it grows with the number of memories and
	// query terms, so compare it only within one search.
	Score float64
	// Strength is Score in units of one term that only this document has,
	// matched at saturation: about 1 for one strong distinctive term,
	// comparable across directory sizes (3 memories or 20,000).
	Strength float64
}

// NewIndex builds the index.
func NewIndex(docs []Document) *Index {
	ix := &Index{files: make([]string, len(docs)), lengths: make([]float64, len(docs)), postings: map[string][]posting{}}
	total := 0.0
	for d, doc := range docs {
		ix.files[d] = doc.Filename
		tf := map[string]float64{}
		length := 0.0
		for _, f := range []struct {
			text   string
			weight float64
		}{{doc.Name, nameWeight}, {doc.Description, descWeight}, {doc.Body, bodyWeight}} {
			for _, t := range Tokenize(f.text) {
				tf[t] += f.weight
				length += f.weight
			}
		}
		for t, n := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: d, tf: n})
		}
		ix.lengths[d] = length
		total += length
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	return ix
}

// Len returns the number of documents.
func (ix *Index) Len() int { return len(ix.files) }

// Search returns up to k documents for query, best first, leaving out
// those scoring below minScore.
func (ix *Index) Search(query string, k int, minScore float64) []Hit {
	if len(ix.files) == 0 || k <= 0 {
		return nil
	}
	seen := map[string]bool{}
	scores := map[int]float64{}
	n := float64(len(ix.files))
	unit := math.Log(1+(n-0.5)/1.5) * (bm25K1 + 1) // one term only this document has, saturated
	for _, t := range Tokenize(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		if len(ps) == 0 {
			continue
		}
		for _, p := range ps {
			norm := p.tf + bm25K1*(1-bm25B+bm25B*ix.lengths[p.doc]/ix.avgLen)
			scores[p.doc] += idf * p.tf * (bm25K1 + 1) / norm
		}
	}
	hits := make([]Hit, 0, len(scores))
	for d, s := range scores {
		if s >= minScore {
			hits = append(hits, Hit{Filename: ix.files[d], Score: s, Strength: s / unit})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Filename < hits[j].Filename
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}
