package recall

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// Question is one labelled message: what a user might say, and the
// memory files (paths relative to the memory directory, "/"-separated)
// it needs. The JSON form, a list of them, is the labels file of
// CompareEmbedder's command (agentmem recall check-embedder):
//
//	[{"query": "who is my manager now?", "needs": ["manager.md"]}, ...]
type Question struct {
	Query string   `json:"query"`
	Needs []string `json:"needs"`
}

// CompareRequest is what CompareEmbedder measures.
type CompareRequest struct {
	// Dir is the memory directory the questions are asked of.
	Dir *memdir.Dir
	// Questions are the labelled messages; those that need no memory
	// are skipped.
	Questions []Question
	// Embedder is the embedder to check.
	Embedder Embedder
	// K is how many memories a selection returns: recall@K (default
	// MaxSelected).
	K int
	// PerFolder asks each question of the top folder of Dir that holds
	// what it needs, as its own memory directory (a set that keeps one
	// user or one conversation per folder), instead of Dir as a whole.
	PerFolder bool
	// Options are the Finder's other options (VectorWeight,
	// MinSimilarity); its Embedder, Selector, Candidates and
	// MaxSelected are set by the comparison.
	Options FinderOptions
}

// EmbedderComparison is recall@K with and without an embedder over the
// same questions and directory.
type EmbedderComparison struct {
	K int
	// Questions is how many questions were asked (those needing some
	// memory); Skipped how many need none.
	Questions, Skipped int
	// WordsRecall is recall@K by words alone, HybridRecall with the
	// embedder: the mean, over the questions, of the share of the needed
	// memories selected.
	WordsRecall, HybridRecall float64
	// Better and Worse count the questions on which the embedder found
	// more, or fewer, of the needed memories than words alone.
	Better, Worse int
	// Abstained counts the questions on which the embedder found no
	// memory with confidence (its selection is then words alone).
	Abstained int
}

// Gain is HybridRecall - WordsRecall: what the embedder adds to recall@K
// (negative: what it costs).
func (c EmbedderComparison) Gain() float64 { return c.HybridRecall - c.WordsRecall }

// ErrBadLabels is returned by CompareEmbedder when the questions do not
// fit the directory: no question needs a memory, a question needs a file
// that is not a memory of the directory, or (with PerFolder) one needs
// memories of several folders. The error names the question; fix the
// labels file.
var ErrBadLabels = errors.New("recall: the labelled questions do not fit the memory directory")

// ErrNoEmbedder is returned by CompareEmbedder without an embedder to
// check.
var ErrNoEmbedder = errors.New("recall: CompareEmbedder needs an embedder to check")

// CompareEmbedder measures what an embedder brings to recall: each
// question is selected for twice on the same index, by words alone and
// with the embedder (as a Finder with FinderOptions.Embedder selects),
// and recall@K is compared. An embedder that helps raises HybridRecall;
// one that knows nothing should leave it at WordsRecall (hybrid recall
// abstains on it). An embedder failure is returned (wrapping
// ErrEmbedding): the check says nothing then.
func CompareEmbedder(ctx context.Context, req CompareRequest) (EmbedderComparison, error) {
	out := EmbedderComparison{K: req.K}
	defaults.IfUnset(&out.K, MaxSelected)
	if req.Embedder == nil {
		return out, ErrNoEmbedder
	}
	if req.Dir == nil {
		return out, ErrNoMemoryDir
	}
	groups := map[string][]Question{}
	for i, q := range req.Questions {
		if len(q.Needs) == 0 {
			out.Skipped++
			continue
		}
		folder := ""
		if req.PerFolder {
			folder, _, _ = strings.Cut(q.Needs[0], "/")
			local := Question{Query: q.Query}
			for _, n := range q.Needs {
				rest, ok := strings.CutPrefix(n, folder+"/")
				if !ok {
					return out, fmt.Errorf("%w: question %d (%q) needs memories of several folders; ask it without PerFolder", ErrBadLabels, i+1, q.Query)
				}
				local.Needs = append(local.Needs, rest)
			}
			q = local
		}
		groups[folder] = append(groups[folder], q)
	}
	if len(groups) == 0 {
		return out, fmt.Errorf("%w: no question needs a memory; label some with the files they need", ErrBadLabels)
	}
	var words, hybrid float64
	for _, folder := range slices.Sorted(maps.Keys(groups)) {
		w, h, err := compareIn(ctx, req, out.K, folder, groups[folder], &out)
		if err != nil {
			return out, err
		}
		words += w
		hybrid += h
	}
	out.WordsRecall = words / float64(out.Questions)
	out.HybridRecall = hybrid / float64(out.Questions)
	return out, nil
}

// compareIn asks qs of one directory (Dir, or its folder) and returns
// the sums of their recalls by words and with the embedder.
func compareIn(ctx context.Context, req CompareRequest, k int, folder string, qs []Question, out *EmbedderComparison) (words, hybrid float64, err error) {
	opts := req.Options
	opts.Embedder, opts.Selector, opts.Candidates, opts.MaxSelected = req.Embedder, nil, ByRelevance, k
	dir := req.Dir
	if folder != "" {
		if dir, err = dir.Sub(folder); err != nil {
			return 0, 0, err
		}
	}
	f, err := NewFinder(dir, opts)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	snap, err := f.corpus.refresh(ctx)
	if err != nil {
		return 0, 0, err
	}
	none := func(string) bool { return false }
	for i, q := range qs {
		for _, n := range q.Needs {
			if _, ok := snap.byName[n]; !ok {
				return 0, 0, fmt.Errorf("%w: question %q needs %q, which is not a memory file there (paths are relative to the memory directory)", ErrBadLabels, q.Query, path.Join(folder, n))
			}
		}
		if i%16 == 0 && ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		var ev Event
		byWords := recallOf(f.selectLexical(ctx, q.Query, snap, none, &ev, false), q.Needs)
		withVectors := recallOf(f.selectLexical(ctx, q.Query, snap, none, &ev, true), q.Needs)
		if ev.EmbedErr != nil {
			return 0, 0, ev.EmbedErr
		}
		out.Questions++
		words += byWords
		hybrid += withVectors
		switch {
		case withVectors > byWords:
			out.Better++
		case withVectors < byWords:
			out.Worse++
		}
		if ev.VectorMatches == 0 {
			out.Abstained++
		}
	}
	return words, hybrid, nil
}

// recallOf is the share of needs that got holds.
func recallOf(got, needs []string) float64 {
	found := 0
	for _, n := range needs {
		for _, g := range got {
			if g == n {
				found++
				break
			}
		}
	}
	return float64(found) / float64(len(needs))
}
