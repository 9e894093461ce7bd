package recall

import (
	"context"
	"slices"

	"github.com/agentmem/agentmem/lexical"
)

// maxNameHolders is how many memories may hold a name the message gives
// for the best match on it alone to be an answer.
const maxNameHolders = 3

// DefaultMinSimilarity is FinderOptions.MinSimilarity's default.
const DefaultMinSimilarity = 0.4

// Recency as a tie-breaker.
const (
	// recencyWeight is how much newer counts among close scores: a
	// memory's score grows by up to this share, the newest the most, so
	// when the words cannot tell memories apart the recent ones come
	// first (what is true now was most likely said last), while a
	// clearly better match still wins.
	recencyWeight = 0.1
	// recencyDepth is how many lexical hits the recency order looks at.
	recencyDepth = 100
)

// recencyOrder re-ranks hits with the recency boost.
func recencyOrder(hits []lexical.Hit, snap *snapshot) []lexical.Hit {
	n := len(snap.headers)
	if n < 2 {
		return hits
	}
	for i := range hits {
		age, ok := snap.age[hits[i].Key]
		if ok {
			hits[i].Score *= 1 + recencyWeight*(1-float64(age)/float64(n-1))
		}
	}
	slices.SortStableFunc(hits, func(a, b lexical.Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return hits
}

// selectLexical is the selection without a model: the lexical ranking
// (fused with the embedding ranking when there is an Embedder), newer
// values of a subject ahead of older ones, cut by the lexical rules, then
// linked memories that also score in the last free slots.
func (f *Finder) selectLexical(ctx context.Context, query string, snap *snapshot, skip func(string) bool, ev *Event) []string {
	max, n := f.cfg.MaxSelected, len(snap.headers)
	pool := f.corpus.search(query, recencyDepth, skip)
	// Whether words answer at all is the best match's to say, before
	// recency reorders close matches.
	lexicalOK := len(pool) > 0 && (!f.lexical.Abstain(pool[0], n) || f.namesOnlyIt(query, pool[0].Key))
	pool = recencyOrder(pool, snap)
	if len(pool) > fusionDepth {
		pool = pool[:fusionDepth]
	}
	lexScore := make(map[string]float64, len(pool))
	for _, h := range pool {
		lexScore[h.Key] = h.Score
	}

	// all is the whole ranking, on one scale (BM25, or fused ranks with an
	// embedder); ranked is what of it the rules keep.
	var all, ranked []scored
	var similar map[string]float64 // by meaning, at or above MinSimilarity
	vec, err := f.vectorRanking(ctx, query, skip)
	if err != nil {
		ev.EmbedErr = err
		f.log.Warn("recall: the embedder failed; selecting by words alone", "event", "recall_embed_failed", "error", err)
	}
	if vec != nil {
		similar = map[string]float64{}
		keys := make([]string, len(vec))
		for i, v := range vec {
			keys[i] = v.key
			if v.score >= f.cfg.MinSimilarity {
				similar[v.key] = v.score
			}
		}
		lexKeys := make([]string, 0, len(pool))
		if lexicalOK {
			for _, h := range pool {
				lexKeys = append(lexKeys, h.Key)
			}
		}
		all = fuse(lexKeys, keys)
		for _, s := range all {
			// Kept: what either side finds relevant on its own terms.
			if lexicalOK && lexScore[s.key] >= f.lexical.MinRelative*pool[0].Score || similar[s.key] > 0 {
				ranked = append(ranked, s)
			}
		}
	} else if lexicalOK {
		for _, h := range pool {
			all = append(all, scored{h.Key, h.Score})
			if h.Score >= f.lexical.MinRelative*pool[0].Score {
				ranked = append(ranked, scored{h.Key, h.Score})
			}
		}
	}
	if len(ranked) == 0 {
		return nil
	}
	// Newer values first: within the selection a newer memory on the same
	// subject goes before the older one, and one from the rest of the
	// ranking comes in when it scores at least half as well (the older's
	// wording may match the message better); the lowest-ranked leave to
	// make room.
	if len(ranked) > max {
		ranked = ranked[:max]
	}
	var out []string
	for _, s := range supersede(ranked, all, snap) {
		if len(out) == max {
			break
		}
		out = append(out, s.key)
	}
	return addLinked(out, max, snap, func(key string) bool {
		return !skip(key) && (lexScore[key] > 0 || similar[key] > 0)
	})
}

// namesOnlyIt reports whether the message names something (a capitalized
// word inside a sentence: a person, a place, a product) that key holds
// and at most maxNameHolders memories do: one weak word is then a strong
// answer ("What is Freya's job?" and the memory that speaks of Freya).
func (f *Finder) namesOnlyIt(query, key string) bool {
	for _, name := range lexical.Names(query) {
		if h := f.corpus.index.Holders(name, maxNameHolders+1); len(h) <= maxNameHolders && slices.Contains(h, key) {
			return true
		}
	}
	return false
}

// vectorRanking ranks the memories by meaning (nil without an Embedder).
func (f *Finder) vectorRanking(ctx context.Context, query string, skip func(string) bool) ([]scored, error) {
	if f.corpus.embedder == nil {
		return nil, nil
	}
	if err := f.corpus.embedPending(ctx); err != nil {
		return nil, err
	}
	q, err := embedAll(ctx, f.corpus.embedder, []string{query})
	if err != nil {
		return nil, err
	}
	return f.corpus.nearest(q[0], func(rel string) bool { return !skip(rel) }, fusionDepth), nil
}

// supersede puts, for each memory of ranked, a newer memory of candidates
// on the same subject (lexical.SameSubject) scoring at least half as well
// right before it, so the current value of a thing ranks above the one it
// replaced.
func supersede(ranked, candidates []scored, snap *snapshot) []scored {
	out := make([]scored, 0, len(ranked))
	placed := map[string]bool{}
	var place func(s scored, depth int)
	place = func(s scored, depth int) {
		if placed[s.key] {
			return
		}
		if depth < 4 { // a chain of updates: the newest first
			if newer, ok := newestOnSubject(s, candidates, snap, placed); ok {
				place(scored{newer, s.score}, depth+1)
			}
		}
		placed[s.key] = true
		out = append(out, s)
	}
	for _, s := range ranked {
		place(s, 0)
	}
	return out
}

// newestOnSubject returns the newest candidate not placed yet that speaks
// of s's subject, is newer, and scores at least half as well.
func newestOnSubject(s scored, candidates []scored, snap *snapshot, placed map[string]bool) (string, bool) {
	key := s.key
	mine, ok := snap.byName[key]
	if !ok {
		return "", false
	}
	best, found := mine.ModTime, ""
	for _, c := range candidates {
		if c.key == key || placed[c.key] || c.score < s.score/2 {
			continue
		}
		h := snap.byName[c.key]
		if h.ModTime.After(best) && lexical.SameSubject(snap.subjects[key], snap.subjects[c.key]) {
			best, found = h.ModTime, c.key
		}
	}
	return found, found != ""
}

// addLinked fills the free slots with the [[name]] neighbours of the
// chosen memories, in order, that also score for the query.
func addLinked(chosen []string, max int, snap *snapshot, scores func(string) bool) []string {
	if len(chosen) == 0 || len(chosen) >= max {
		return chosen
	}
	in := map[string]bool{}
	for _, k := range chosen {
		in[k] = true
	}
	for i := 0; i < len(chosen) && len(chosen) < max; i++ {
		for _, to := range snap.links[chosen[i]] {
			if len(chosen) == max {
				break
			}
			if !in[to] && scores(to) {
				in[to] = true
				chosen = append(chosen, to)
			}
		}
	}
	return chosen
}
