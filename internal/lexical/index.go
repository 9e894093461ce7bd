package lexical

import (
	"maps"
	"math"
	"slices"
	"sync"
)

// Document is what the index knows of one memory or message.
type Document struct {
	// Key identifies the document (a memory's path relative to its
	// directory).
	Key         string
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
	doc int32
	tf  float32
}

type docInfo struct {
	key    string
	length float64
	terms  []string // distinct terms, to remove the postings again
}

// Index is a BM25F index. Put adds or replaces a document, Delete removes
// one; Search ranks. The zero value is not ready: use NewIndex.
type Index struct {
	mu       sync.RWMutex
	docs     []docInfo // by id; a free slot has key ""
	free     []int32
	byKey    map[string]int32
	postings map[string][]posting
	total    float64
	scratch  sync.Pool // *scorer
	stems    sync.Pool // stemCache, one per preparing goroutine
}

// Hit is one search result.
type Hit struct {
	Key string
	// Score is the BM25F score; it grows with the number of documents and
	// query terms, so compare it only within one search.
	Score float64
	// Strength is Score in units of one term that only this document has,
	// matched at saturation: about 1 for one strong distinctive term,
	// comparable across index sizes.
	Strength float64
	// Matched is how many distinct query terms the document holds, and
	// Coverage their share of the query's total IDF weight (0..1).
	Matched  int
	Coverage float64
	// Shared is how many documents hold the rarest of the query terms
	// this one matched: 1 when it matched a term no other document has,
	// large when all it shares with the query is a word common to the
	// whole index.
	Shared int
}

// NewIndex returns an index holding docs.
func NewIndex(docs ...Document) *Index {
	ix := &Index{byKey: map[string]int32{}, postings: map[string][]posting{}}
	for _, d := range docs {
		ix.Put(d)
	}
	return ix
}

// Len returns the number of documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.byKey)
}

// Has reports whether a document with key is indexed.
func (ix *Index) Has(key string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.byKey[key]
	return ok
}

// Prepared is a document tokenized for PutPrepared.
type Prepared struct {
	key     string
	tf      map[string]float32
	length  float64
	subject Subject
}

// Subject is the document's Subject (SubjectOf its name and description),
// from the terms Prepare found anyway.
func (p Prepared) Subject() Subject { return p.subject }

// Prepare tokenizes d for PutPrepared. It takes no lock on the index, so
// several goroutines can prepare documents at once.
func (ix *Index) Prepare(d Document) Prepared {
	stems, _ := ix.stems.Get().(stemCache)
	if stems == nil {
		stems = stemCache{}
	}
	p := Prepared{key: d.Key, tf: map[string]float32{}}
	add := func(terms []string, w float32) {
		for _, t := range terms {
			p.tf[t] += w
			p.length += float64(w)
		}
	}
	name, desc := appendTokens(nil, d.Name, true, stems), appendTokens(nil, d.Description, false, stems)
	add(name, nameWeight)
	add(desc, descWeight)
	add(appendTokens(nil, d.Body, false, stems), bodyWeight)
	p.subject = subjectOf(name, desc)
	ix.stems.Put(stems)
	return p
}

// Put adds d, replacing any document with the same key.
func (ix *Index) Put(d Document) { ix.PutPrepared(ix.Prepare(d)) }

// PutPrepared adds a prepared document, replacing any with the same key.
func (ix *Index) PutPrepared(p Prepared) {
	terms := slices.AppendSeq(make([]string, 0, len(p.tf)), maps.Keys(p.tf))
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.deleteLocked(p.key)
	var id int32
	info := docInfo{key: p.key, length: p.length, terms: terms}
	if n := len(ix.free); n > 0 {
		id, ix.free = ix.free[n-1], ix.free[:n-1]
		ix.docs[id] = info
	} else {
		id = int32(len(ix.docs))
		ix.docs = append(ix.docs, info)
	}
	ix.byKey[p.key] = id
	ix.total += p.length
	for t, n := range p.tf {
		ix.postings[t] = append(ix.postings[t], posting{doc: id, tf: n})
	}
}

// Delete removes the document with key, if any.
func (ix *Index) Delete(key string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.deleteLocked(key)
}

func (ix *Index) deleteLocked(key string) {
	id, ok := ix.byKey[key]
	if !ok {
		return
	}
	d := ix.docs[id]
	for _, t := range d.terms {
		ps := ix.postings[t]
		for i := range ps {
			if ps[i].doc == id {
				ps[i] = ps[len(ps)-1]
				ps = ps[:len(ps)-1]
				break
			}
		}
		if len(ps) == 0 {
			delete(ix.postings, t)
		} else {
			ix.postings[t] = ps
		}
	}
	ix.total -= d.length
	ix.docs[id] = docInfo{}
	ix.free = append(ix.free, id)
	delete(ix.byKey, key)
}

// scorer is per-search scratch space, reused through a pool.
type scorer struct {
	scores  []float64
	matched []int32
	shared  []int32
	cover   []float64
	touched []int32
}

// Search returns up to k documents for query, best first (ties by key),
// leaving out those for which keep returns false (nil keeps all).
func (ix *Index) Search(query string, k int, keep func(key string) bool) []Hit {
	top, _ := ix.search(query, k, keep, false)
	return top
}

// SearchAll is Search that also returns every document the query
// matches (that keep keeps), in no order: what a caller needs of the
// rest is their scores, which cost no sort.
func (ix *Index) SearchAll(query string, k int, keep func(key string) bool) (top, all []Hit) {
	return ix.search(query, k, keep, true)
}

func (ix *Index) search(query string, k int, keep func(key string) bool, wantAll bool) (top, all []Hit) {
	if k <= 0 {
		return nil, nil
	}
	terms := Tokenize(query)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := float64(len(ix.byKey))
	if n == 0 {
		return nil, nil
	}
	avgLen := ix.total / n
	sc, _ := ix.scratch.Get().(*scorer)
	if sc == nil {
		sc = &scorer{}
	}
	defer ix.scratch.Put(sc)
	if len(sc.scores) < len(ix.docs) {
		sc.scores = make([]float64, len(ix.docs))
		sc.matched = make([]int32, len(ix.docs))
		sc.shared = make([]int32, len(ix.docs))
		sc.cover = make([]float64, len(ix.docs))
	}
	sc.touched = sc.touched[:0]
	seen := map[string]bool{}
	totalIDF := 0.0
	for _, t := range terms {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		totalIDF += idf
		for _, p := range ps {
			if sc.matched[p.doc] == 0 {
				sc.touched = append(sc.touched, p.doc)
				sc.shared[p.doc] = int32(len(ps))
			}
			sc.shared[p.doc] = min(sc.shared[p.doc], int32(len(ps)))
			tf := float64(p.tf)
			norm := tf + bm25K1*(1-bm25B+bm25B*ix.docs[p.doc].length/avgLen)
			sc.scores[p.doc] += idf * tf * (bm25K1 + 1) / norm
			sc.matched[p.doc]++
			sc.cover[p.doc] += idf
		}
	}
	unit := math.Log(1+(n-0.5)/1.5) * (bm25K1 + 1) // one term only this document has, saturated
	// Keep the k best in a heap whose root is the worst kept.
	top = make([]Hit, 0, min(k, len(sc.touched)))
	if wantAll {
		all = make([]Hit, 0, len(sc.touched))
	}
	for _, d := range sc.touched {
		score := sc.scores[d]
		h := Hit{Key: ix.docs[d].key, Score: score, Strength: score / unit, Matched: int(sc.matched[d]), Shared: int(sc.shared[d])}
		if totalIDF > 0 {
			h.Coverage = sc.cover[d] / totalIDF
		}
		sc.scores[d], sc.matched[d], sc.cover[d] = 0, 0, 0
		if wantAll {
			if keep != nil && !keep(h.Key) {
				continue
			}
			all = append(all, h)
		}
		if len(top) == k && better(top[0], h) <= 0 {
			continue // not better than the worst kept
		}
		if !wantAll && keep != nil && !keep(h.Key) {
			continue
		}
		if len(top) < k {
			top = append(top, h)
			siftUp(top, len(top)-1)
		} else {
			top[0] = h
			siftDown(top, 0)
		}
	}
	slices.SortFunc(top, better)
	return top, all
}

// better orders hits best first: higher score, then key.
func better(a, b Hit) int {
	switch {
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	case a.Key < b.Key:
		return -1
	case a.Key > b.Key:
		return 1
	}
	return 0
}

// siftUp and siftDown keep h a heap with the worst hit at the root.
func siftUp(h []Hit, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if better(h[p], h[i]) >= 0 {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []Hit, i int) {
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && better(h[l], h[worst]) > 0 {
			worst = l
		}
		if r < len(h) && better(h[r], h[worst]) > 0 {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// DocFreq returns how many documents hold term (a term as Tokenize
// gives it).
func (ix *Index) DocFreq(term string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.postings[term])
}

// Holders returns the keys of the documents that hold term (a term as
// Tokenize gives it), at most max of them.
func (ix *Index) Holders(term string, max int) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ps := ix.postings[term]
	out := make([]string, 0, min(len(ps), max))
	for _, p := range ps {
		if len(out) == max {
			break
		}
		out = append(out, ix.docs[p.doc].key)
	}
	return out
}
