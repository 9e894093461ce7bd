package recall

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewerValueRanksFirst: two memories on one subject with different
// values: the newer ranks first, even when the older's wording matches the
// message better; memories of another subject are left as they are.
func TestNewerValueRanksFirst(t *testing.T) {
	fsys, dir := memTree(t,
		[3]string{"deploy-window.md", "the deploy window is tuesday afternoon", "We deploy in the tuesday afternoon window."},
		[3]string{"oncall.md", "the pager rotates weekly", "Four engineers share the pager."},
		[3]string{"deploy-window-moved.md", "the deploy window moved to thursday afternoon", "Since the freeze we deploy thursdays."},
	)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	got := names(f, "is the deploy window still tuesday afternoon?")
	require.NotEmpty(t, got)
	assert.Equal(t, "deploy-window-moved.md", got[0], "the newer value first")
	assert.Contains(t, got, "deploy-window.md", "the older stays in the selection")
}

// TestLinkedNeighboursFillFreeSlots: a chosen memory's [[name]] neighbour
// joins when it scores for the message (here below the relative cut, so
// without the link it stays out), never one that does not score.
func TestLinkedNeighboursFillFreeSlots(t *testing.T) {
	find := func(links string) []string {
		fsys := afero.NewMemMapFs()
		write := func(file, name, desc, body string) {
			require.NoError(t, afero.WriteFile(fsys, "/mem/"+file, []byte("---\nname: "+name+"\ndescription: "+desc+"\ntype: project\n---\n\n"+body+"\n"), 0o644))
		}
		write("release.md", "release-process", "how a release is cut, tagged and shipped", "Cut the release branch, tag it, ship it. "+links)
		write("canary.md", "canary-checks", "what to watch while a canary runs", "Watch the error rates of a release before promoting it.")
		write("lunch.md", "lunch-menu", "what the team orders for lunch", "Tacos on Fridays.")
		for i := range 12 {
			write("other"+strings.Repeat("x", i)+".md", "other", "notes on the build cache "+strings.Repeat("z", i), "Cache keys and eviction.")
		}
		f, err := NewFinder(mustDir(fsys, "/mem"), FinderOptions{})
		require.NoError(t, err)
		return names(f, "how is a release cut, tagged and shipped")
	}
	without := find("")
	require.Equal(t, []string{"release.md"}, without, "the neighbour scores below the cut on its own")
	with := find("See [[Canary-Checks]] and [[lunch-menu]].") // links match names case-folded
	assert.Equal(t, []string{"release.md", "canary.md"}, with, "the linked neighbour that scores joins; the one that does not stays out")
}

// fakeEmbedder maps each text to a vector of concept counts: words of one
// concept ("car", "automobile", "vehicle") count for the same axis, as an
// embedding model's would.
type fakeEmbedder struct {
	calls, texts atomic.Int32
	fail         atomic.Bool
}

var concepts = [][]string{
	{"car", "automobile", "vehicle", "sedan"},
	{"physician", "doctor", "gp", "clinic"},
	{"holiday", "vacation", "trip", "getaway"},
	{"salary", "pay", "wage", "raise"},
}

func (e *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.texts.Add(int32(len(texts)))
	if e.fail.Load() {
		return nil, errors.New("embedding service down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		// Like a real model's, every text's vector is its own (a little
		// of it drawn from the text), so texts that share no concept are
		// alike by chance only, not all equally.
		v := append(make([]float32, len(concepts)), textNoise(t, 16, 0.05)...)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return r < 'a' || r > 'z' }) {
			for c, words := range concepts {
				for _, cw := range words {
					if w == cw {
						v[c]++
					}
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

// textNoise is dims normal draws seeded by text, times scale: the part of
// a test embedder's vector that makes each text its own.
func textNoise(text string, dims int, scale float32) []float32 {
	g := gaussian(sha256.Sum256([]byte(text)))[:dims]
	for i := range g {
		g[i] *= scale
	}
	return g
}

// TestHybridRecallFindsOtherWords: with an Embedder a message that names a
// memory's subject by another word finds it; each memory is embedded once
// (cached by content), in batches; without one, or when it fails, recall
// is the lexical one.
func TestHybridRecallFindsOtherWords(t *testing.T) {
	fsys, dir := memTree(t,
		[3]string{"car.md", "Priya bought a used sedan", "A blue sedan, bought in March."},
		[3]string{"doctor.md", "Omar's new physician", "Dr. Lee at the Elm Street practice."},
		[3]string{"trip.md", "vacation plans", "Two weeks in Lisbon in June."},
		[3]string{"lunch.md", "what the team orders for lunch", "Tacos on Fridays."},
		[3]string{"build.md", "the build cache", "Cache keys and eviction."},
	)
	lexicalOnly, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	assert.Empty(t, names(lexicalOnly, "which automobile did she get"), "no shared word: nothing by words alone")

	emb := &fakeEmbedder{}
	var events []Event
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{Embedder: emb, Observer: func(e Event) { events = append(events, e) }})
	require.NoError(t, err)
	assert.Equal(t, []string{"car.md"}, names(f, "which automobile did she get"))
	assert.Equal(t, []string{"doctor.md"}, names(f, "who is the doctor now"))
	assert.Equal(t, []string{"trip.md"}, names(f, "vacation plans for summer"), "a word match still counts")
	assert.Equal(t, int32(5+3), emb.texts.Load(), "five memories embedded once, plus one text per message")

	// A changed memory is embedded again, the others are not.
	require.NoError(t, afero.WriteFile(fsys, "/mem/car.md", []byte("---\nname: car\ndescription: Priya sold the sedan\n---\n\nSold in May.\n"), 0o644))
	names(f, "which automobile")
	assert.Equal(t, int32(8+2), emb.texts.Load())

	// A failing embedder: words alone, and the event says why.
	emb.fail.Store(true)
	assert.Equal(t, []string{"trip.md"}, names(f, "vacation plans for summer"))
	require.ErrorIs(t, events[len(events)-1].EmbedErr, ErrEmbedding)
	assert.NoError(t, events[len(events)-1].Err)
}

// TestEmbedderAnswersAreChecked: a wrong count, mixed lengths, NaN or an
// infinity are an embedding failure, not a panic or a wrong ranking.
func TestEmbedderAnswersAreChecked(t *testing.T) {
	for name, e := range map[string]EmbedderFunc{
		"too few": func(_ context.Context, texts []string) ([][]float32, error) { return [][]float32{{1}}, nil },
		"lengths": func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = make([]float32, 1+i)
			}
			return out, nil
		},
		"empty": func(_ context.Context, texts []string) ([][]float32, error) {
			return make([][]float32, len(texts)), nil
		},
		"NaN": func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = []float32{1, float32(math.NaN())}
			}
			return out, nil
		},
		"infinity": func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = []float32{float32(math.Inf(1)), 0}
			}
			return out, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := embedAll(context.Background(), e, []string{"a", "b", "c"})
			assert.ErrorIs(t, err, ErrEmbedding)
		})
	}
}

// TestEmbedBatches: Embed never gets more than embedBatch texts.
func TestEmbedBatches(t *testing.T) {
	var most int
	e := EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		most = max(most, len(texts))
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = []float32{1, 0}
		}
		return out, nil
	})
	texts := make([]string, 3*embedBatch+5)
	got, err := embedAll(context.Background(), e, texts)
	require.NoError(t, err)
	assert.Len(t, got, len(texts))
	assert.Equal(t, embedBatch, most)
}

// TestANameOnlyOneMemoryHoldsIsAnAnswer: a message whose only match is a
// name that one memory alone holds gets that memory, while a lone weak
// word that is no name still gets nothing.
func TestANameOnlyOneMemoryHoldsIsAnAnswer(t *testing.T) {
	mems := [][3]string{{"partner.md", "Ingrid's partner Freya works as a pilot", "Freya flies long haul."}}
	for i := range 40 {
		mems = append(mems, [3]string{fmt.Sprintf("m%02d.md", i), fmt.Sprintf("note %d on the build cache", i), "Cache keys and eviction."})
	}
	fsys, dir := memTree(t, mems...)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"partner.md"}, names(f, "What is Freya's occupation?"))
	assert.Empty(t, names(f, "what does a pilot earn"), "one weak word that is no name: nothing")
}

// TestQuantizedCosine: int8 vectors keep the cosine within 0.02 of the
// exact one (the doc says about 1%).
func TestQuantizedCosine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		a, b := make([]float32, 256), make([]float32, 256)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			if i%2 == 0 {
				b[i] += a[i] // related, so cosines spread over 0..1
			}
		}
		var dot, na, nb float64
		for i := range a {
			dot += float64(a[i]) * float64(b[i])
			na += float64(a[i]) * float64(a[i])
			nb += float64(b[i]) * float64(b[i])
		}
		exact := dot / math.Sqrt(na*nb)
		assert.InDelta(t, exact, cosine(quantize(a), quantize(b)), 0.02)
	}
}
