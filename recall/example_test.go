package recall_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/recall"
	"github.com/spf13/afero"
)

func ExampleSession() {
	fsys := afero.NewMemMapFs()
	dir, _ := memdir.NewDir(fsys, "/mem", memdir.DirOptions{})
	_, _ = dir.Save(context.Background(), memdir.Memory{File: "testing_policy.md", Name: "Testing policy", Type: memdir.TypeFeedback,
		Description: "Integration tests hit the real database, never mocks", Body: "Use the testdb helper."})
	_, _ = dir.Save(context.Background(), memdir.Memory{File: "deploy.md", Name: "Deploy days", Type: memdir.TypeProject,
		Description: "Deploys happen on Tuesdays and Thursdays", Body: "No Friday deploys."})

	finder, _ := recall.NewFinder(dir, recall.FinderOptions{
		Observer: func(e recall.Event) { fmt.Printf("%s: %d of %d\n", e.Selector, e.Selected, e.Candidates) }})
	session := recall.NewSession(finder, recall.SessionOptions{})
	for _, m := range session.Recall(context.Background(), "should this integration test mock the database?", nil) {
		fmt.Println(m.Path)
	}
	fmt.Println(len(session.Recall(context.Background(), "thanks", nil))) // one word: skipped, no selection
	// Output:
	// lexical: 1 of 2
	// /mem/testing_policy.md
	// 0
}

// A host checks an embedder on its own labelled questions before turning
// hybrid recall on: CompareEmbedder selects for each question by words
// alone and with the embedder, on one index, and compares recall@5. Here
// a toy embedder that knows "automobile" and "sedan" mean one thing finds
// the memory words miss; the zero-vector control, which knows nothing,
// abstains and changes nothing.
func ExampleCompareEmbedder() {
	ctx := context.Background()
	dir, _ := memdir.NewDir(afero.NewMemMapFs(), "/mem", memdir.DirOptions{})
	save := func(file, description, body string) {
		_, _ = dir.Save(ctx, memdir.Memory{File: file, Name: strings.TrimSuffix(file, ".md"), Type: memdir.TypeProject, Description: description, Body: body})
	}
	save("car.md", "Priya bought a used sedan", "A blue sedan, bought in March.")
	save("deploy.md", "Deploys happen on Tuesdays and Thursdays", "No Friday deploys.")
	for i, topic := range []string{"the build cache", "code review", "the staging database", "on-call rotation", "release notes", "the style guide", "flaky tests", "the API gateway"} {
		save(fmt.Sprintf("note%d.md", i), "Notes on "+topic, "What we decided about "+topic+".")
	}
	questions := []recall.Question{
		{Query: "do deploys happen on Fridays?", Needs: []string{"deploy.md"}},
		{Query: "which automobile did she buy", Needs: []string{"car.md"}},
	}

	// synonyms gives each text a vector of its own (drawn from the text,
	// as a model's differ from text to text), plus a shared direction
	// when it speaks of a car.
	synonyms := recall.EmbedderFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, text := range texts {
			h := fnv.New64a()
			h.Write([]byte(text))
			r := rand.New(rand.NewPCG(h.Sum64(), 1))
			v := make([]float32, 65)
			for d := 1; d < len(v); d++ {
				v[d] = float32(r.NormFloat64()) / 8
			}
			if strings.Contains(text, "sedan") || strings.Contains(text, "automobile") {
				v[0] = 1
			}
			out[i] = v
		}
		return out, nil
	})
	zero, _ := recall.ControlEmbedder("zero")
	for _, e := range []struct {
		name     string
		embedder recall.Embedder
	}{{"synonyms", synonyms}, {"zero", zero}} {
		c, err := recall.CompareEmbedder(ctx, recall.CompareRequest{Dir: dir, Questions: questions, Embedder: e.embedder})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: words %.2f, with the embedder %.2f (gain %+.2f), abstained on %d of %d\n", e.name, c.WordsRecall, c.HybridRecall, c.Gain(), c.Abstained, c.Questions)
	}
	// Output:
	// synonyms: words 0.50, with the embedder 1.00 (gain +0.50), abstained on 1 of 2
	// zero: words 0.50, with the embedder 0.50 (gain +0.00), abstained on 2 of 2
}
