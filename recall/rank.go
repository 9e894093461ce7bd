package recall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agentmem-sdk/agentmem/internal/lexical"
)

// maxNameHolders is how many memories may hold a name the message gives
// for the best match on it alone to be an answer.
const maxNameHolders = 3

// minNamedScope is how many memories must hold the names a message gives
// for the vector side to look among them alone (namedScope).
const minNamedScope = 20

// defaultVectorWeight is FinderOptions.VectorWeight's default: a memory
// found by meaning with full confidence counts as much as the best word
// match.
const defaultVectorWeight = 1.0

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
// (weighed with the memories the embedder finds with confidence, when
// there is an Embedder and vectors is set), newer values of a subject
// ahead of older ones, cut by the lexical rules, then linked memories
// that also score in the last free slots.
func (f *Finder) selectLexical(ctx context.Context, query string, snap *snapshot, skip func(string) bool, ev *Event, vectors bool) []string {
	max, n := f.cfg.MaxSelected, len(snap.headers)
	var pool []lexical.Hit
	// What the words know, even when they do not answer: the vector side
	// counts only what they do not say, of every memory the words match
	// (an embedder that knows words finds them all too).
	var wordScores map[string]float64
	if vectors {
		var all []lexical.Hit
		pool, all = f.corpus.searchAll(query, recencyDepth, skip)
		if len(pool) > 0 {
			wordScores = make(map[string]float64, len(all))
			for _, h := range all {
				wordScores[h.Key] = h.Score / pool[0].Score
			}
		}
	} else {
		pool = f.corpus.search(query, recencyDepth, skip)
	}
	// Whether words answer at all is the best match's to say, before
	// recency reorders close matches.
	lexicalOK := len(pool) > 0 && (!f.lexical.Abstain(pool[0], n) || f.namesOnlyIt(query, pool[0].Key))
	switch {
	case len(pool) == 0:
		ev.Why = "no memory holds a word of the message (memories surfaced already left aside)"
	case !lexicalOK:
		ev.Why = fmt.Sprintf("the best match, %s, holds one word of the message at strength %.2f, less than the %.2f one word needs among %d memories",
			pool[0].Key, pool[0].Strength, f.lexical.StrengthNeeded(n), n)
	}
	if !lexicalOK {
		pool = nil
	}
	pool = recencyOrder(pool, snap)
	if len(pool) > selectionDepth {
		pool = pool[:selectionDepth]
	}

	var found map[string]float64 // by meaning, with confidence
	weight := f.cfg.VectorWeight
	if vectors && f.corpus.embedder != nil {
		// The message goes in a call of its own: an embedder without an
		// EmbedderID is known by the test texts' vectors (openCache),
		// which must never depend on what else shares their call.
		qs, err := embedAll(ctx, f.corpus.embedder, []string{query})
		var trust Trust
		if err == nil {
			trust, err = f.vectorTrust(ctx, snap)
		}
		if cerr := f.corpus.cacheFailure(); cerr != nil {
			f.log.Warn("recall: vectors are kept in memory only", "event", "recall_vector_cache_failed", "error", cerr)
		}
		if err == nil {
			weight = trust.Weight
			ev.Trust = &trust
			alarm := trust.FalseAlarm
			if !lexicalOK {
				// Words say nothing is needed: meaning alone must stand
				// out as clearly as for an embedder not trusted.
				alarm = falseAlarm
			}
			scope := skip
			if trust.level() > 0 {
				scope = f.namedScope(query, skip, n)
			}
			found, err = f.vectorMatches(ctx, qs[0], scope, wordScores, alarm)
		}
		if err != nil {
			ev.EmbedErr = err
			f.log.Warn("recall: the embedder failed; selecting by words alone", "event", "recall_embed_failed", "error", err)
		}
		ev.VectorMatches = len(found)
	}
	all, ranked, base := weigh(pool, found, f.lexical.MinRelative, weight, max)
	if len(ranked) == 0 {
		if ev.Trust != nil && ev.Why != "" {
			ev.Why += "; the embedder found no memory with confidence"
		}
		return nil
	}
	ev.Why = ""
	// Newer values first: within the selection a newer memory on the same
	// subject goes before the older one, and one from the rest of the
	// ranking comes in when it scores at least half as well (the older's
	// wording may match the message better); the lowest-ranked leave to
	// make room.
	var out []string
	for _, s := range supersede(ranked, all, base, snap, f.valueUpdate(snap, skip)) {
		if len(out) == max {
			break
		}
		out = append(out, s.key)
	}
	if len(found) > 0 && len(pool) > 0 && !slices.Contains(out, pool[0].Key) && slices.ContainsFunc(ranked, func(s scored) bool { return s.key == pool[0].Key }) {
		// Memories found by meaning brought newer ones in: the best word
		// match stays all the same.
		out[len(out)-1] = pool[0].Key
	}
	inPool := make(map[string]bool, len(pool))
	for _, h := range pool {
		inPool[h.Key] = true
	}
	return addLinked(out, max, snap, func(key string) bool {
		return !skip(key) && (inPool[key] || found[key] > 0)
	})
}

// weigh merges the lexical ranking (best first, nil when words do not
// answer) with the memories found by meaning with confidence (each with
// its confidence in (0, 1)) on one scale: a memory scores its share of
// the best word match plus weight times its confidence by meaning. It
// returns every memory either side found (all: what supersession may
// bring in), the selection, best first, at most max, and each memory's
// own-side score (base: its share of the best word match, or for one
// words did not find, its weighed confidence by meaning).
//
// The selection takes the memories of the lexical selection (the first
// max word matches at or above minRelative of the best) and those found
// by meaning, by score. The best word match always stays; a weaker one
// leaves only for a memory whose score beats its own, that is one found
// by meaning more confidently than words found it. With nothing found by
// meaning the selection is the lexical one, whole and in its order.
func weigh(pool []lexical.Hit, found map[string]float64, minRelative, weight float64, max int) (all, ranked []scored, base map[string]float64) {
	score := make(map[string]float64, len(pool)+len(found))
	base = make(map[string]float64, len(pool)+len(found))
	kept := map[string]bool{}
	for i, h := range pool {
		s := h.Score / pool[0].Score
		score[h.Key], base[h.Key] = s, s
		if s >= minRelative && i < max {
			kept[h.Key] = true
		}
	}
	for key, c := range found {
		if _, ok := base[key]; !ok {
			base[key] = weight * c
		}
		score[key] += weight * c
		kept[key] = true
	}
	for k, s := range score {
		all = append(all, scored{k, s})
	}
	sortScored(all)
	if len(found) == 0 {
		// The lexical selection as it is, in its (recency) order.
		for _, h := range pool {
			if len(ranked) == max || !kept[h.Key] {
				break
			}
			ranked = append(ranked, scored{h.Key, score[h.Key]})
		}
		return all, ranked, base
	}
	in := make(map[string]bool, max)
	free := max
	if len(pool) > 0 && kept[pool[0].Key] {
		in[pool[0].Key] = true
		free--
	}
	for _, s := range all {
		if free == 0 {
			break
		}
		if kept[s.key] && !in[s.key] {
			in[s.key] = true
			free--
		}
	}
	for _, s := range all {
		if in[s.key] {
			ranked = append(ranked, s)
		}
	}
	return all, ranked, base
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

// namedScope narrows the vector side of an embedder that earned trust
// to the memories that hold a name the message gives, when those are
// fewer than half of the n memories and at least minNamedScope (a name
// few memories hold is a rare word, which the words find; narrowed to
// those, meaning would have nothing to add): a message that names people asks
// about them, and a memory alike in meaning but about someone else is no
// answer (a directory shared by many people, or many conversations).
// Otherwise it is skip. An embedder that knows only words is left to see
// every memory, as words already say which hold the name.
func (f *Finder) namedScope(query string, skip func(string) bool, n int) func(string) bool {
	names := lexical.Names(query)
	if len(names) == 0 {
		return skip
	}
	total := 0 // counted before any holder is listed
	for _, name := range names {
		held := f.corpus.index.DocFreq(name)
		if held > n/2 {
			return skip
		}
		total += held
	}
	if total < minNamedScope {
		return skip
	}
	holders := make(map[string]bool, total)
	for _, name := range names {
		for _, k := range f.corpus.index.Holders(name, total) {
			holders[k] = true
		}
	}
	if len(holders) < minNamedScope || len(holders) > n/2 {
		return skip
	}
	return func(rel string) bool { return !holders[rel] || skip(rel) }
}

// vectorMatches returns the memories the embedder finds with confidence
// for the message's vector q beyond what their word scores (words: share
// of the best word match) explain (see confident), each with its
// confidence.
func (f *Finder) vectorMatches(ctx context.Context, q vector, skip func(string) bool, words map[string]float64, alarm float64) (map[string]float64, error) {
	if err := f.corpus.embedPending(ctx); err != nil {
		return nil, err
	}
	return confident(f.corpus.similarities(q, func(rel string) bool { return !skip(rel) }), f.cfg.MinSimilarity, words, alarm), nil
}

// supersede puts, for each memory of ranked, a newer memory of candidates
// on the same subject (lexical.SameSubject) scoring at least half as well
// on its own side (base) right before it, so the current value of a thing
// ranks above the one it replaced. Candidates are memories words found
// or meaning found with confidence, and (update) a newer memory that
// names the older one's values and says they changed.
func supersede(ranked, candidates []scored, base map[string]float64, snap *snapshot, update func(key string, placed map[string]bool) (string, bool)) []scored {
	out := make([]scored, 0, len(ranked))
	placed := map[string]bool{}
	// bar is what the first of a chain scores on its own side: a newer
	// memory comes in when it scores at least half of it.
	var place func(s scored, bar float64, depth int)
	place = func(s scored, bar float64, depth int) {
		if placed[s.key] {
			return
		}
		if depth < 4 { // a chain of updates: the newest first
			if newer, ok := newestOnSubject(s.key, bar/2, candidates, base, snap, placed); ok {
				place(scored{newer, s.score}, bar, depth+1)
			} else if newer, ok := update(s.key, placed); ok {
				place(scored{newer, s.score}, bar, depth+1)
			}
		}
		placed[s.key] = true
		out = append(out, s)
	}
	for _, s := range ranked {
		place(s, base[s.key], 0)
	}
	return out
}

// newestOnSubject returns the newest candidate not placed yet that speaks
// of key's subject, is newer, and scores at least least on its own side
// (base).
func newestOnSubject(key string, least float64, candidates []scored, base map[string]float64, snap *snapshot, placed map[string]bool) (string, bool) {
	mine, ok := snap.byName[key]
	if !ok {
		return "", false
	}
	best, found := mine.ModTime, ""
	for _, c := range candidates {
		if c.key == key || placed[c.key] || base[c.key] < least {
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

// maxValueHolders is how many memories may hold a term of a memory's
// description for a newer one holding it to count as its update.
const maxValueHolders = 3

// valueUpdate returns, for a memory, the newest memory not placed yet
// that is newer and names at least half of the values of its
// description (the terms at most maxValueHolders memories hold): "Ingrid
// left Northwind Logistics and joined Juniper Media" updates "Ingrid
// works at Northwind Logistics", whatever the two are named and however
// little the newer one shares with the message.
func (f *Finder) valueUpdate(snap *snapshot, skip func(string) bool) func(key string, placed map[string]bool) (string, bool) {
	return func(key string, placed map[string]bool) (string, bool) {
		mine, ok := snap.byName[key]
		if !ok {
			return "", false
		}
		values := 0
		named := map[string]int{}
		for _, term := range snap.values[key] {
			holders := f.corpus.index.Holders(term, maxValueHolders+1)
			if len(holders) > maxValueHolders {
				continue
			}
			values++
			for _, h := range holders {
				if h != key && !placed[h] && !skip(h) {
					named[h]++
				}
			}
		}
		best, found := mine.ModTime, ""
		for h, n := range named {
			if other, ok := snap.byName[h]; ok && 2*n >= values && saysItChanges(other.Description) && (other.ModTime.After(best) || other.ModTime.Equal(best) && found != "" && h < found) {
				best, found = other.ModTime, h
			}
		}
		return found, found != ""
	}
}

// changeWords are the words with which a memory says a value changed.
var changeWords = map[string]bool{
	"left": true, "joined": true, "moved": true, "changed": true, "switched": true, "replaced": true,
	"instead": true, "longer": true, "now": true, "became": true, "anymore": true, "updated": true,
	"slipped": true, "renamed": true, "migrated": true,
}

// saysItChanges reports whether a description says something changed
// ("left", "moved", "switched", "no longer", "instead", ...).
func saysItChanges(description string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(description), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if changeWords[w] {
			return true
		}
	}
	return false
}
