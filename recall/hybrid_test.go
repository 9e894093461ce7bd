package recall

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sims(vals ...float64) []scored {
	out := make([]scored, len(vals))
	for i, v := range vals {
		out[i] = scored{fmt.Sprintf("m%03d", i), v}
	}
	return out
}

// TestVectorsAbstainWhenSimilaritiesDoNotSeparate: equal similarities
// (an embedder giving one vector, or the zero vector, to every text) find
// nothing; noise finds something on about falseAlarm of the messages; a
// memory that stands out is found, with a confidence below 1 that grows
// with how far it stands out.
func TestVectorsAbstainWhenSimilaritiesDoNotSeparate(t *testing.T) {
	assert.Nil(t, confident(sims(0, 0, 0, 0, 0, 0, 0, 0), 0, nil), "all zero")
	assert.Nil(t, confident(sims(0.3, 0.3, 0.3, 0.3, 0.3), 0, nil), "all equal")
	assert.Nil(t, confident(sims(0.9), 0, nil), "one memory cannot stand out")
	assert.Nil(t, confident(sims(0.9, 0.1, 0.1), 0, nil), "nor one of three")

	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{20, 200, 2000} {
		alarms := 0
		const trials = 400
		for range trials {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = 0.2 + 0.05*r.NormFloat64()
			}
			if confident(sims(vals...), 0, nil) != nil {
				alarms++
			}
		}
		assert.LessOrEqual(t, alarms, trials*4/100, "noise over %d memories: found something on %d of %d messages (falseAlarm is 1%%)", n, alarms, trials)
	}

	vals := make([]float64, 200)
	for i := range vals {
		vals[i] = 0.2 + 0.05*r.NormFloat64()
	}
	vals[7], vals[9] = 0.8, 0.5
	got := confident(sims(vals...), 0, nil)
	require.Len(t, got, 2)
	assert.Greater(t, got["m007"], got["m009"])
	assert.Less(t, got["m007"], 1.0)
	assert.Greater(t, got["m009"], 0.0)
	assert.Len(t, confident(sims(vals...), 0.6, nil), 1, "MinSimilarity is a floor besides the statistic")
}

// TestVectorsCountOnlyWhatWordsDoNotExplain: an embedder that follows
// the words (its similarity rises with the word score) finds nothing
// words found already; a memory it finds beyond what its words explain,
// and one words did not find, are still found.
func TestVectorsCountOnlyWhatWordsDoNotExplain(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var all []scored
	words := map[string]float64{}
	for i := range 400 {
		key := fmt.Sprintf("m%03d", i)
		sim := 0.2 + 0.02*r.NormFloat64()
		if i < 40 { // found by words, from 1 down to 0.1
			words[key] = 1 - float64(i)/44
			sim += 0.5 * words[key]
		}
		all = append(all, scored{key, sim})
	}
	all[30].score += 0.4 // a weak word match meaning finds beyond its words
	all[200].score = 0.8 // words missed it
	raw := confident(all, 0, nil)
	assert.Contains(t, raw, "m000", "without the word scores the best word match stands out")
	assert.Greater(t, len(raw), 10)
	got := confident(all, 0, words)
	assert.Equal(t, []string{"m030", "m200"}, slices.Sorted(maps.Keys(got)))

	flat := map[string]float64{}
	for i := range 40 {
		flat[fmt.Sprintf("m%03d", i+100)] = 0.5 // words that say nothing of these similarities
	}
	assert.Equal(t, raw, confident(all, 0, flat), "a line that does not rise takes nothing")
}

func hits(scores ...float64) []lexical.Hit {
	out := make([]lexical.Hit, len(scores))
	for i, s := range scores {
		out[i] = lexical.Hit{Key: fmt.Sprintf("w%d", i), Score: s}
	}
	return out
}

func keys(ss []scored) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.key
	}
	return out
}

// TestWeighKeepsWhatWordsFound: with nothing found by meaning the
// selection is the lexical one as it is; a memory found by meaning takes
// the place of a word match it beats, never the best word match, and
// reorders the matches words found too.
func TestWeighKeepsWhatWordsFound(t *testing.T) {
	pool := hits(10, 9, 8, 6, 5, 4, 1)
	_, ranked, _ := weigh(pool, nil, 0.2, 1, 5)
	assert.Equal(t, []string{"w0", "w1", "w2", "w3", "w4"}, keys(ranked), "words alone")

	_, ranked, _ = weigh(pool, map[string]float64{"v": 0.55}, 0.2, 1, 5)
	assert.Equal(t, []string{"w0", "w1", "w2", "w3", "v"}, keys(ranked), "in for the weakest word match it beats (0.5 < 0.55)")

	_, ranked, _ = weigh(pool, map[string]float64{"v": 0.3}, 0.2, 1, 5)
	assert.Equal(t, []string{"w0", "w1", "w2", "w3", "w4"}, keys(ranked), "less sure than words: nothing moves")

	_, ranked, _ = weigh(pool, map[string]float64{"w4": 0.9}, 0.2, 1, 5)
	assert.Equal(t, []string{"w4", "w0", "w1", "w2", "w3"}, keys(ranked), "found by both: first")

	found := map[string]float64{"a": 0.99, "b": 0.99, "c": 0.99, "d": 0.99, "e": 0.99}
	_, ranked, _ = weigh(pool, found, 0.2, 10, 5)
	assert.Contains(t, keys(ranked), "w0", "the best word match stays whatever the weight")
	assert.Len(t, ranked, 5)

	_, ranked, _ = weigh(nil, map[string]float64{"v": 0.1}, 0.2, 1, 5)
	assert.Equal(t, []string{"v"}, keys(ranked), "words found nothing: meaning answers")
}

// knowsNothing are embedders whose similarities say nothing.
func knowsNothing(t *testing.T) map[string]Embedder {
	out := map[string]Embedder{}
	for _, n := range []string{"zero", "random"} {
		e, err := ControlEmbedder(n)
		require.NoError(t, err)
		out[n] = e
	}
	out["constant"] = EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		v := make([][]float32, len(texts))
		for i := range v {
			v[i] = []float32{1, 2, 3}
		}
		return v, nil
	})
	return out
}

// TestAnEmbedderThatKnowsNothingChangesNothing: with the zero, a random
// or a constant embedder every selection is the lexical one, superseding
// included: a newer memory on the same subject that words did not find
// does not come in through the vectors.
func TestAnEmbedderThatKnowsNothingChangesNothing(t *testing.T) {
	mems := [][3]string{
		{"deploy-window.md", "the deploy window is tuesday afternoon", "Ask Priya about exceptions."},
		{"deploy-window-moved.md", "the deploy window moved to thursday afternoon", "Since the freeze."},
	}
	for i := range 40 {
		mems = append(mems, [3]string{fmt.Sprintf("note%02d.md", i), fmt.Sprintf("note %d on %s", i, benchWords[i%len(benchWords)]), benchWords[(i*7)%len(benchWords)] + " and " + benchWords[(i*3)%len(benchWords)]})
	}
	fsys, dir := memTree(t, mems...)
	words, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	queries := []string{"ask priya about exceptions", "is the deploy window still tuesday", "postgres migration", "kafka lag and redis", "thanks!"}
	assert.Equal(t, []string{"deploy-window.md"}, names(words, queries[0]), "words find only the older memory")
	for name, e := range knowsNothing(t) {
		var events []Event
		f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: e, Observer: func(ev Event) { events = append(events, ev) }})
		require.NoError(t, err)
		for _, q := range queries {
			assert.Equal(t, names(words, q), names(f, q), "%s: %q", name, q)
			assert.Zero(t, events[len(events)-1].VectorMatches, name)
		}
	}
}

// TestCompareEmbedder: an embedder that knows synonyms raises recall,
// one that knows nothing leaves it as it is and abstains; labels that do
// not fit are refused.
func TestCompareEmbedder(t *testing.T) {
	mems := [][3]string{
		{"p1/car.md", "Priya bought a used sedan", "A blue sedan, bought in March."},
		{"p1/doctor.md", "Omar's new physician", "Dr. Lee at the Elm Street practice."},
		{"p2/trip.md", "vacation plans", "Two weeks in Lisbon in June."},
		{"p2/pay.md", "the salary review", "A raise in April."},
	}
	for i := range 12 {
		mems = append(mems, [3]string{fmt.Sprintf("p%d/note%02d.md", 1+i%2, i), fmt.Sprintf("note %d on %s", i, benchWords[i]), benchWords[i+20]})
	}
	fsys, dir := memTree(t, mems...)
	questions := []Question{
		{Query: "which automobile did she get", Needs: []string{"p1/car.md"}},
		{Query: "who is the doctor now", Needs: []string{"p1/doctor.md"}},
		{Query: "vacation plans for summer", Needs: []string{"p2/trip.md"}},
		{Query: "how much is the wage now", Needs: []string{"p2/pay.md"}},
		{Query: "thanks!"},
	}
	ctx := context.Background()
	for _, per := range []bool{false, true} {
		c, err := CompareEmbedder(ctx, CompareRequest{Dir: mustDir(fsys, dir), Questions: questions, Embedder: &fakeEmbedder{}, PerFolder: per})
		require.NoError(t, err)
		assert.Equal(t, EmbedderComparison{K: 5, Questions: 4, Skipped: 1, WordsRecall: 0.25, HybridRecall: 1, Better: 3, Abstained: c.Abstained}, c, "per folder %v", per)
		assert.InDelta(t, 0.75, c.Gain(), 1e-9)

		zero, _ := ControlEmbedder("zero")
		c, err = CompareEmbedder(ctx, CompareRequest{Dir: mustDir(fsys, dir), Questions: questions, Embedder: zero, PerFolder: per})
		require.NoError(t, err)
		assert.Equal(t, EmbedderComparison{K: 5, Questions: 4, Skipped: 1, WordsRecall: 0.25, HybridRecall: 0.25, Abstained: 4}, c)
	}

	bad := map[string]struct {
		req  CompareRequest
		want error
	}{
		"no embedder":    {CompareRequest{Dir: mustDir(fsys, dir), Questions: questions}, ErrNoEmbedder},
		"no directory":   {CompareRequest{Questions: questions, Embedder: &fakeEmbedder{}}, ErrNoMemoryDir},
		"no labels":      {CompareRequest{Dir: mustDir(fsys, dir), Questions: questions[4:], Embedder: &fakeEmbedder{}}, ErrBadLabels},
		"missing file":   {CompareRequest{Dir: mustDir(fsys, dir), Questions: []Question{{Query: "q", Needs: []string{"p1/gone.md"}}}, Embedder: &fakeEmbedder{}}, ErrBadLabels},
		"across folders": {CompareRequest{Dir: mustDir(fsys, dir), Questions: []Question{{Query: "q", Needs: []string{"p1/car.md", "p2/trip.md"}}}, Embedder: &fakeEmbedder{}, PerFolder: true}, ErrBadLabels},
		"failing":        {CompareRequest{Dir: mustDir(fsys, dir), Questions: questions, Embedder: EmbedderFunc(func(context.Context, []string) ([][]float32, error) { return nil, errors.New("down") })}, ErrEmbedding},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := CompareEmbedder(ctx, tc.req)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// TestControlEmbedders: each control is deterministic and gives one
// vector per text; an unknown name is refused.
func TestControlEmbedders(t *testing.T) {
	for _, n := range ControlEmbedderNames() {
		e, err := ControlEmbedder(n)
		require.NoError(t, err)
		a, err := e.Embed(context.Background(), []string{"the deploy window", "a sedan", ""})
		require.NoError(t, err)
		b, _ := e.Embed(context.Background(), []string{"the deploy window"})
		require.Len(t, a, 3, n)
		assert.Equal(t, a[0], b[0], n)
		assert.Len(t, a[1], len(a[0]), n)
	}
	_, err := ControlEmbedder("bert")
	assert.ErrorIs(t, err, ErrUnknownControl)
}

// TestTheBestWordMatchStays: memories found by meaning, given a large
// weight, bring a newer memory on their subject in; the best word match
// still stays in the selection.
func TestTheBestWordMatchStays(t *testing.T) {
	mems := [][3]string{
		{"best.md", "the deploy window is friday", "Deploy in the window."},
		{"zebra-stripes-a.md", "the zebra stripes are black afternoon", "Stripes."},
		{"zebra-stripes-b.md", "the zebra stripes moved to white afternoon", "Stripes, newer."},
	}
	for i := range 10 {
		mems = append(mems, [3]string{fmt.Sprintf("note%02d.md", i), fmt.Sprintf("note %d on the build cache", i), "Cache keys."})
	}
	fsys, dir := memTree(t, mems...)
	near := EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, text := range texts {
			out[i] = append([]float32{0, 1}, textNoise(text, 16, 0.05)...)
			if text == "deploy window friday" || strings.Contains(text, "zebra") {
				out[i][0], out[i][1] = 1, 0
			}
		}
		return out, nil
	})
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: near, VectorWeight: 5, MaxSelected: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"zebra-stripes-b.md", "best.md"}, names(f, "deploy window friday"))
}
