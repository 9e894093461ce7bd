package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/agentmem-sdk/agentmem/examples/recalleval/convset"
	"github.com/agentmem-sdk/agentmem/examples/recalleval/updateset"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/recall"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmbeddersThatKnowNothingCostNothing runs the control embedders and
// the oracle on both generated sets, smaller than the full ones (3
// conversations, 5 users: quick enough under -race), with seeds 2 and 3
// (the fusion's rules were looked at on seed 1 only), per directory and
// merged; go run ./examples/recalleval -embedders -seed N runs the full
// sets. An embedder that knows nothing (the zero vector, random vectors)
// or only words (hashed words, averaged random word vectors, character
// trigrams) must not cost more than half a point of recall@5; the oracle
// must raise recall, more at quality 0.5 than at 0.25, and by at least 3
// points at 0.5 (measured on the full sets: 7 to 13 points), and so must
// the oracle blended with trigrams (an embedder that knows words and
// some meaning).
func TestEmbeddersThatKnowNothingCostNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, seed := range []uint64{2, 3} {
		conv := FromConvset(convset.Generate(convset.Options{Seed: seed, Conversations: 3}))
		upd, _ := FromUpdateset(updateset.Generate(updateset.Options{Seed: seed, Users: 5}))
		for _, s := range []namedSet{{"conversational", conv}, {"updates", upd}} {
			root, err := Materialise(s.set)
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(root) })
			dir, err := memdir.NewDir(afero.NewOsFs(), root, memdir.DirOptions{})
			require.NoError(t, err)
			for _, per := range []bool{true, false} {
				where := fmt.Sprintf("%s seed %d per-directory %v", s.name, seed, per)
				check := func(e recall.Embedder) recall.EmbedderComparison {
					c, err := recall.CompareEmbedder(ctx, recall.CompareRequest{Dir: dir, Questions: Labelled(s.set.Queries), Embedder: e, PerFolder: per})
					require.NoError(t, err, where)
					return c
				}
				var c0 recall.EmbedderComparison
				controls := map[string]recall.Embedder{"trigrams": TrigramEmbedder{}}
				for _, name := range recall.ControlEmbedderNames() {
					controls[name], _ = recall.ControlEmbedder(name)
				}
				for _, name := range append(recall.ControlEmbedderNames(), "trigrams") {
					c := check(controls[name])
					c0 = c
					t.Logf("%s %s: words %.3f hybrid %.3f (%d questions, abstained on %d)", where, name, c.WordsRecall, c.HybridRecall, c.Questions, c.Abstained)
					assert.GreaterOrEqual(t, c.HybridRecall, c.WordsRecall-0.005, "%s: %s costs recall", where, name)
				}
				last := c0.WordsRecall
				for _, q := range []float64{0.25, 0.5} {
					c := check(NewOracle(s.set, q))
					t.Logf("%s oracle %.2f: words %.3f hybrid %.3f", where, q, c.WordsRecall, c.HybridRecall)
					assert.Greater(t, c.HybridRecall, last, "%s: recall rises with the oracle's quality", where)
					if q == 0.5 {
						assert.GreaterOrEqual(t, c.Gain(), 0.03, where)
					}
					last = c.HybridRecall
				}
				c := check(Blend{NewOracle(s.set, 0.5), TrigramEmbedder{}})
				t.Logf("%s oracle 0.50+trigrams: words %.3f hybrid %.3f", where, c.WordsRecall, c.HybridRecall)
				assert.GreaterOrEqual(t, c.Gain(), 0.03, "%s: an embedder that knows words and meaning raises recall", where)
			}
		}
	}
}

// TestWriteSetsAndCheckEmbedders: the sets written for the command line
// load back as they were generated, and the embedder table has a row per
// embedder.
func TestWriteSetsAndCheckEmbedders(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteSets(dir, 2))
	got, err := Load(dir + "/updates-seed2.json")
	require.NoError(t, err)
	want, _ := Updates(2)
	require.Equal(t, len(want.Memories), len(got.Memories))
	assert.True(t, want.Memories[3].Date.Equal(got.Memories[3].Date), "dates travel")
	assert.Equal(t, want.Queries, got.Queries)
}

// TestEmbeddersThatKnowWordsCostNothingMerged runs the full
// conversational set of seed 4 merged into one directory, where character
// trigrams cost 1.1 points of recall@5 while the vector side still
// counted what the words already said: every embedder that knows only
// words must now stay within half a point of words alone.
func TestEmbeddersThatKnowWordsCostNothingMerged(t *testing.T) {
	t.Parallel()
	set := Conversational(4)
	root, err := Materialise(set)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	dir, err := memdir.NewDir(afero.NewOsFs(), root, memdir.DirOptions{})
	require.NoError(t, err)
	for _, name := range []string{"hashed-words", "word-vectors", "trigrams"} {
		e := recall.Embedder(TrigramEmbedder{})
		if name != "trigrams" {
			e, _ = recall.ControlEmbedder(name)
		}
		c, err := recall.CompareEmbedder(context.Background(), recall.CompareRequest{Dir: dir, Questions: Labelled(set.Queries), Embedder: e})
		require.NoError(t, err)
		t.Logf("%s: words %.3f hybrid %.3f (%d better, %d worse)", name, c.WordsRecall, c.HybridRecall, c.Better, c.Worse)
		assert.GreaterOrEqual(t, c.HybridRecall, c.WordsRecall-0.005, name)
	}
}

// TestStemmedWordsCostLittleMerged: a bag of stemmed words that counts
// every word alike, however common, disagrees with the word ranking on
// many memories; merged into one directory, the knowledge-update set of
// seed 15 lost 1.0 point of recall@5 to it while what the word scores
// leave unexplained was taken at face value. It is now judged against
// what they leave of the other memories: within half a point.
func TestStemmedWordsCostLittleMerged(t *testing.T) {
	t.Parallel()
	set, _ := Updates(15)
	root, err := Materialise(set)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	dir, err := memdir.NewDir(afero.NewOsFs(), root, memdir.DirOptions{})
	require.NoError(t, err)
	e, err := recall.ControlEmbedder("stemmed-words")
	require.NoError(t, err)
	c, err := recall.CompareEmbedder(context.Background(), recall.CompareRequest{Dir: dir, Questions: Labelled(set.Queries), Embedder: e})
	require.NoError(t, err)
	t.Logf("stemmed-words: words %.3f hybrid %.3f (%d better, %d worse)", c.WordsRecall, c.HybridRecall, c.Better, c.Worse)
	assert.GreaterOrEqual(t, c.HybridRecall, c.WordsRecall-0.005)
}
