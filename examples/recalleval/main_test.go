package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/examples/recalleval/convset"
	"github.com/agentmem-sdk/agentmem/examples/recalleval/updateset"
	"github.com/agentmem-sdk/agentmem/internal/docstest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/recall"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var shopSet = filepath.Join("..", "..", "testdata", "recall", "shop.json")

func methodByName(t *testing.T, name string) Method {
	for _, m := range Methods("") {
		if m.Name() == name {
			return m
		}
	}
	t.Fatalf("no method %s", name)
	return nil
}

// TestShopQuality pins the default Finder on the set its thresholds are
// tuned on, a little below the measured figures (recall@5 0.830,
// abstain 0.929: 13 of the 14 messages that need no memory get none).
func TestShopQuality(t *testing.T) {
	set, err := Load(shopSet)
	require.NoError(t, err)
	root, err := Materialise(set)
	require.NoError(t, err)
	defer os.RemoveAll(root)
	m, err := Evaluate(context.Background(), methodByName(t, "agentmem"), []Group{{Dir: root, Queries: set.Queries}})
	require.NoError(t, err)
	t.Logf("shop: recall@5 %.3f hit@5 %.3f empty %.3f abstain %.3f", m.RecallAt5, m.HitAt5, m.Empty, m.Abstain)
	assert.GreaterOrEqual(t, m.RecallAt5, 0.78)
	assert.GreaterOrEqual(t, m.Abstain, 0.92, "recall is not bought by always returning five")
}

// TestConversationalQuality runs the default Finder on the conversational
// set it was never tuned on, per directory and merged, with minisearch in
// the same run: agentmem must reach recall@5 0.60 at both sizes, return
// nothing for under 5% of the questions, and beat minisearch.
func TestConversationalQuality(t *testing.T) {
	t.Parallel()
	set := Conversational(1)
	root, err := Materialise(set)
	require.NoError(t, err)
	defer os.RemoveAll(root)
	ctx := context.Background()
	per := PerDirectory(root, set.Queries)
	merged := []Group{{Dir: root, Queries: set.Queries}}
	ours := map[string]Metrics{}
	for name, groups := range map[string][]Group{"per-directory": per, "merged": merged} {
		m, err := Evaluate(ctx, methodByName(t, "agentmem"), groups)
		require.NoError(t, err)
		ours[name] = m
		t.Logf("%s: recall@5 %.3f hit@5 %.3f empty %.3f", name, m.RecallAt5, m.HitAt5, m.Empty)
		assert.GreaterOrEqual(t, m.RecallAt5, 0.60, name)
		assert.Less(t, m.Empty, 0.05, name)
	}
	old, err := Evaluate(ctx, methodByName(t, "agentmem-newest200"), merged)
	require.NoError(t, err)
	assert.Less(t, old.RecallAt5, 0.2, "the newest-200 rule cannot reach old memories in a large directory")

	peer := minisearchPeer(t)
	for name, groups := range map[string][]Group{"per-directory": per, "merged": merged} {
		m, err := Evaluate(ctx, peer, groups)
		require.NoError(t, err)
		t.Logf("%s minisearch: recall@5 %.3f (agentmem / minisearch = %.2f)", name, m.RecallAt5, ours[name].RecallAt5/m.RecallAt5)
		assert.Greater(t, ours[name].RecallAt5, m.RecallAt5, name)
	}
}

func TestConvsetShape(t *testing.T) {
	a, b := convset.Generate(convset.Options{Seed: 1}), convset.Generate(convset.Options{Seed: 1})
	assert.Equal(t, a, b, "deterministic for a seed")
	assert.NotEqual(t, a.Queries[0], convset.Generate(convset.Options{Seed: 2}).Queries[0])
	assert.GreaterOrEqual(t, len(a.Memories), 1000)
	assert.GreaterOrEqual(t, len(a.Queries), 500)
	kinds := map[string]int{}
	files := map[string]bool{}
	for _, m := range a.Memories {
		files[m.Dir+"/"+m.File] = true
	}
	for _, q := range a.Queries {
		kinds[q.Kind]++
		for _, n := range q.Needs {
			assert.True(t, files[n], "a question needs a memory that exists: %s", n)
		}
	}
	for _, k := range []string{"single", "temporal", "other", "multi"} {
		assert.Positive(t, kinds[k], k)
	}
	assert.True(t, strings.HasPrefix(a.Queries[0].Needs[0], "conv"))
}

func TestRunPrintsEveryMethod(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), &out, Config{SetPath: shopSet}))
	s := out.String()
	assert.Contains(t, s, "shop.json: 150 memories, 61 messages (14 need none)")
	for _, m := range []string{"agentmem ", "agentmem-newest200", "agentmem-bm25-top5"} {
		assert.Contains(t, s, "  "+m)
	}
	assert.Error(t, Run(context.Background(), &out, Config{SetPath: "missing.json"}))
}

// TestOwnTree is the user's path: a memory directory and a labels file.
func TestOwnTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("deploy.md", "---\nname: Deploy days\ndescription: Deploys happen on Tuesdays\n---\n\nNo Friday deploys.\n")
	write("team/ci.md", "---\nname: CI\ndescription: CI must stay green\n---\n\nQuarantine flaky tests.\n")
	labels := filepath.Join(t.TempDir(), "labels.json")
	data, _ := json.Marshal([]Query{{Query: "can we deploy on friday", Needs: []string{"deploy.md"}}, {Query: "what to do with flaky tests in CI", Needs: []string{"team/ci.md"}}, {Query: "thanks!"}})
	require.NoError(t, os.WriteFile(labels, data, 0o644))
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), &out, Config{Dir: dir, Labels: labels}))
	assert.Contains(t, out.String(), "3 messages")
	assert.Regexp(t, `agentmem +1\.000 +1\.000 +0\.000 +1\.000`, out.String())
	assert.Error(t, Run(context.Background(), &out, Config{Dir: dir}), "labels are required")

	// The performance guide's command, as written, from the repository's
	// root, on this tree instead of the reader's.
	root := filepath.Join("..", "..")
	lines := docstest.Block(t, root, "(paths relative\nto the directory")
	require.Len(t, lines, 1)
	line := strings.NewReplacer("~/.claude/projects/<project>/memory", dir, " labels.json", " "+labels).Replace(lines[0])
	require.NotEqual(t, lines[0], line, "the command names the reader's tree and labels")
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+line)
	cmd.Dir = root
	got, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", line, got)
	assert.Contains(t, string(got), "3 messages")
	assert.Regexp(t, `agentmem +1\.000 +1\.000 +0\.000 +1\.000`, string(got))
}

// TestUpdatesQuality runs the default Finder on the set with knowledge
// updates (other speakers, other topics, facts that change), per
// directory and merged, with minisearch in the same run. It pins agentmem
// a little below its measured figures (recall@5 0.718 per directory,
// 0.600 merged, 0.487 on the questions for a current value; seed 1 was
// not looked at while the rule that a newer memory naming an older one's
// values and saying it changed supersedes it was chosen on seeds 3 and
// 5), requires answers for over 95% of the questions, and requires
// agentmem to beat minisearch on the current values (0.404).
func TestUpdatesQuality(t *testing.T) {
	t.Parallel()
	set, kinds := Updates(1)
	root, err := Materialise(set)
	require.NoError(t, err)
	defer os.RemoveAll(root)
	ctx := context.Background()
	current := OfKind(set.Queries, kinds, "current")
	runs := map[string][]Group{
		"per-directory": PerDirectory(root, set.Queries),
		"merged":        {{Dir: root, Queries: set.Queries}},
		"current":       PerDirectory(root, current),
	}
	floor := map[string]float64{"per-directory": 0.70, "merged": 0.57, "current": 0.46}
	ours := map[string]Metrics{}
	for name, groups := range runs {
		m, err := Evaluate(ctx, methodByName(t, "agentmem"), groups)
		require.NoError(t, err)
		ours[name] = m
		t.Logf("%s: recall@5 %.3f hit@5 %.3f empty %.3f", name, m.RecallAt5, m.HitAt5, m.Empty)
		assert.GreaterOrEqual(t, m.RecallAt5, floor[name], name)
		assert.Less(t, m.Empty, 0.05, name)
	}
	peer := minisearchPeer(t)
	for name, groups := range runs {
		m, err := Evaluate(ctx, peer, groups)
		require.NoError(t, err)
		t.Logf("%s minisearch: recall@5 %.3f (agentmem / minisearch = %.2f)", name, m.RecallAt5, ours[name].RecallAt5/m.RecallAt5)
		if name == "current" {
			assert.Greater(t, ours[name].RecallAt5, m.RecallAt5, "the current value: agentmem beats minisearch")
		}
	}
}

func TestUpdatesetShape(t *testing.T) {
	a, b := updateset.Generate(updateset.Options{Seed: 1}), updateset.Generate(updateset.Options{Seed: 1})
	assert.Equal(t, a, b, "deterministic for a seed")
	files := map[string]updateset.Memory{}
	for _, m := range a.Memories {
		files[m.Dir+"/"+m.File] = m
	}
	kinds := map[string]int{}
	for _, q := range a.Queries {
		kinds[q.Kind]++
		for _, n := range q.Needs {
			require.Contains(t, files, n, "a question needs a memory that exists")
		}
		if q.Kind == "current" {
			// The newest memory of its chain: nothing on the same topic
			// by the same user is newer, and something older is.
			need := files[q.Needs[0]]
			older := 0
			for _, m := range a.Memories {
				if m.Dir == need.Dir && m.Topic == need.Topic && m.File != need.File {
					assert.True(t, m.Date.Before(need.Date), "%s: %s is newer than the answer", q.Query, m.File)
					older++
				}
			}
			assert.Positive(t, older, "a current value replaced an older one: %s", q.Query)
		}
	}
	for _, k := range []string{"current", "previous", "single", "chain"} {
		assert.Positive(t, kinds[k], k)
	}
	assert.GreaterOrEqual(t, len(a.Memories), 500)
	assert.GreaterOrEqual(t, len(a.Queries), 300)
}

// minisearchPeer starts the peer (see startPeer).
func minisearchPeer(t *testing.T) *Minisearch {
	return startPeer(t, "minisearch", NewMinisearch)
}

// startPeer starts a node peer and closes it after the test, or skips
// where node is missing, unless AGENTMEM_REQUIRE_PEER (set by .ci/run)
// makes a missing peer a failure.
func startPeer[P interface{ Close() }](t *testing.T, what string, start func() (P, error)) P {
	t.Helper()
	peer, err := start()
	if err != nil {
		if os.Getenv("AGENTMEM_REQUIRE_PEER") != "" {
			t.Fatalf("%s must run here: %v", what, err)
		}
		t.Skipf("%s cannot run on this machine (%v); .ci/run installs node and requires it", what, err)
	}
	t.Cleanup(peer.Close)
	return peer
}

// TestEmbeddersThatKnowNothingCostNothing runs the control embedders and
// the oracle on both generated sets, smaller than the full ones (2
// conversations and 4 users, 3 and 5 with AGENTMEM_RECALL_FULL: quick
// enough under -race), with seed 2
// (AGENTMEM_RECALL_SEEDS; CI runs 2 and 3), per directory and merged;
// the zero, random and stemmed-words controls and trigrams by default,
// every control with AGENTMEM_RECALL_FULL (CI); go run
// ./examples/recalleval -embedders -seed N runs the full sets. An embedder that knows nothing (the zero vector, random vectors)
// or only words (hashed words, averaged random word vectors, character
// trigrams) must not cost more than half a point of recall@5; the oracle
// must raise recall, more at quality 0.5 than at 0.25, and by at least 3
// points at 0.5 (measured on the full sets: 7 to 13 points), and so must
// the oracle blended with trigrams (an embedder that knows words and
// some meaning).
func TestEmbeddersThatKnowNothingCostNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conversations, users := 2, 4
	if fullRecallRuns() {
		conversations, users = 3, 5
	}
	for _, seed := range recallSeeds(t) {
		conv := FromConvset(convset.Generate(convset.Options{Seed: seed, Conversations: conversations}))
		upd, _ := FromUpdateset(updateset.Generate(updateset.Options{Seed: seed, Users: users}))
		for _, s := range []namedSet{{"conversational", conv}, {"updates", upd}} {
			dir := materialisedDir(t, s.set)
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
				names := []string{"zero", "random", "stemmed-words", "trigrams"}
				if fullRecallRuns() {
					names = append(recall.ControlEmbedderNames(), "trigrams")
				}
				for _, name := range names {
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
// words must now stay within half a point of words alone (trigrams by
// default; hashed words and word vectors too with AGENTMEM_RECALL_FULL,
// as CI runs it).
func TestEmbeddersThatKnowWordsCostNothingMerged(t *testing.T) {
	t.Parallel()
	needFullRuns(t)
	set := Conversational(4)
	dir := materialisedDir(t, set)
	names := []string{"trigrams"}
	if fullRecallRuns() {
		names = []string{"hashed-words", "word-vectors", "trigrams"}
	}
	for _, name := range names {
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
	needFullRuns(t)
	set, _ := Updates(15)
	dir := materialisedDir(t, set)
	e, err := recall.ControlEmbedder("stemmed-words")
	require.NoError(t, err)
	c, err := recall.CompareEmbedder(context.Background(), recall.CompareRequest{Dir: dir, Questions: Labelled(set.Queries), Embedder: e})
	require.NoError(t, err)
	t.Logf("stemmed-words: words %.3f hybrid %.3f (%d better, %d worse)", c.WordsRecall, c.HybridRecall, c.Better, c.Worse)
	assert.GreaterOrEqual(t, c.HybridRecall, c.WordsRecall-0.005)
}

// fullRecallRuns reports whether AGENTMEM_RECALL_FULL (set by CI) asks
// the embedder checks to run every control embedder, not a few.
func fullRecallRuns() bool { return os.Getenv("AGENTMEM_RECALL_FULL") != "" }

// needFullRuns runs a regression check of one large merged set only
// with AGENTMEM_RECALL_FULL (CI's recall step sets it): by default the
// same embedders are held to the same bound on the smaller sets of
// TestEmbeddersThatKnowNothingCostNothing, which keeps the package
// within go test's time on a busy machine.
func needFullRuns(t *testing.T) {
	t.Helper()
	if !fullRecallRuns() {
		t.Skip("a large merged set: runs with AGENTMEM_RECALL_FULL=1, as CI's recall step sets it")
	}
}

// recallSeeds are the seeds the embedder checks run: 2 by default, those
// AGENTMEM_RECALL_SEEDS lists (CI runs "2,3").
func recallSeeds(t *testing.T) []uint64 {
	t.Helper()
	return seedsFrom(t, "AGENTMEM_RECALL_SEEDS", 2)
}

// seedsFrom reads a comma-separated list of seeds from the variable name,
// or gives def.
func seedsFrom(t *testing.T, name string, def uint64) []uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return []uint64{def}
	}
	var out []uint64
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		require.NoError(t, err, "%s=%q: a comma-separated list of seeds", name, v)
		out = append(out, n)
	}
	return out
}

// encoder starts the sentence encoder (see startPeer).
func encoder(t *testing.T) *SentenceEncoder {
	return startPeer(t, "the sentence encoder", NewSentenceEncoder)
}

// TestARealSentenceEncoderRaisesRecall plugs a real sentence encoder
// (Universal Sentence Encoder lite, in node) into the Finder as a host
// would, on generated sets of seeds the fusion was not tuned on (3
// conversations, 5 users, as the control check), per directory and
// merged: it earns trust (it pairs most of the questions with their
// statements) and recall@5 rises by at least 1 point on every set and
// layout, 4 on average (on the full sets of seeds 3 and 5: 3.4 to 15
// points, docs/performance.md).
func TestARealSentenceEncoderRaisesRecall(t *testing.T) {
	t.Parallel()
	enc := encoder(t)
	ctx := context.Background()
	var gains []float64
	for _, seed := range encoderSeeds(t) {
		conv := FromConvset(convset.Generate(convset.Options{Seed: seed, Conversations: 3}))
		upd, _ := FromUpdateset(updateset.Generate(updateset.Options{Seed: seed, Users: 5}))
		for _, s := range []namedSet{{"conversational", conv}, {"updates", upd}} {
			dir := materialisedDir(t, s.set)
			for _, per := range []bool{true, false} {
				c, err := recall.CompareEmbedder(ctx, recall.CompareRequest{Dir: dir, Questions: Labelled(s.set.Queries), Embedder: enc, PerFolder: per})
				require.NoError(t, err)
				where := fmt.Sprintf("%s seed %d per-directory %v", s.name, seed, per)
				t.Logf("%s: words %.3f, with the encoder %.3f (%+.3f; better %d, worse %d)", where, c.WordsRecall, c.HybridRecall, c.Gain(), c.Better, c.Worse)
				assert.GreaterOrEqual(t, c.Gain(), 0.01, where)
				gains = append(gains, c.Gain())
			}
		}
	}
	var sum float64
	for _, g := range gains {
		sum += g
	}
	assert.GreaterOrEqual(t, sum/float64(len(gains)), 0.04, "mean gain")
}

// encoderSeeds are the seeds the encoder check runs: 3 by default, those
// AGENTMEM_ENCODER_SEEDS lists.
func encoderSeeds(t *testing.T) []uint64 {
	t.Helper()
	return seedsFrom(t, "AGENTMEM_ENCODER_SEEDS", 3)
}

// materialisedDir writes set into a temporary tree, removed after the
// test, and opens it as a memory directory.
func materialisedDir(t *testing.T, set *Set) *memdir.Dir {
	t.Helper()
	root, err := Materialise(set)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	dir, err := memdir.NewDir(afero.NewOsFs(), root, memdir.DirOptions{})
	require.NoError(t, err)
	return dir
}
