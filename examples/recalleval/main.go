// Command recalleval measures how well recall selectors pick the memories
// a message needs, on a labelled set: memories, messages, and for each
// message the memories it needs (none, for messages that need no memory).
//
//	go run ./examples/recalleval                       # lexical selector
//	ANTHROPIC_API_KEY=... go run ./examples/recalleval # also the model selector
//	go run ./examples/recalleval -set my.json -minscore 1.5
//
// For each selector it prints recall@5 (share of needed memories found,
// over messages that need some), precision@5 (share of selected memories
// that were needed, over messages with a selection) and how often a
// message that needs nothing got nothing.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agentmem/agentmem/llm/anthropic"
	"github.com/agentmem/agentmem/recall"
	"github.com/spf13/afero"
)

// Set is a labelled recall set.
type Set struct {
	Memories []struct {
		File        string `json:"file"`
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Body        string `json:"body"`
	} `json:"memories"`
	Queries []struct {
		Query string   `json:"query"`
		Needs []string `json:"needs"`
	} `json:"queries"`
}

// Metrics summarises one selector on one set.
type Metrics struct {
	RecallAt5    float64
	PrecisionAt5 float64
	NoneCorrect  float64 // share of need-nothing messages that got nothing
	Queries      int
}

func main() {
	_, file, _, _ := runtime.Caller(0)
	def := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "recall", "shop.json")
	setPath := flag.String("set", def, "labelled set (JSON)")
	minScore := flag.Float64("minscore", 0, "lexical score threshold (0: the default)")
	minRel := flag.Float64("minrel", 0, "lexical threshold relative to the best match (0: the default)")
	minStrength := flag.Float64("minstrength", 0, "lexical strength threshold (0: the default)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *setPath, recall.LexicalOptions{MinScore: *minScore, MinRelative: *minRel, MinStrength: *minStrength}, os.Getenv("ANTHROPIC_API_KEY")); err != nil {
		fmt.Fprintln(os.Stderr, "recalleval:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, setPath string, lexical recall.LexicalOptions, apiKey string) error {
	set, err := Load(setPath)
	if err != nil {
		return err
	}
	fsys, dir, err := Materialise(set)
	if err != nil {
		return err
	}
	selectors := map[string]recall.Selector{
		"lexical": recall.NewLexicalSelector(fsys, lexical),
	}
	if apiKey != "" {
		model, err := anthropic.New(anthropic.Config{APIKey: apiKey})
		if err != nil {
			return err
		}
		selectors["model"] = recall.ModelSelector{Model: model}
	}
	fmt.Fprintf(w, "%d memories, %d messages (%d need none)\n", len(set.Memories), len(set.Queries), countNone(set))
	for _, name := range []string{"lexical", "model"} {
		sel, ok := selectors[name]
		if !ok {
			continue
		}
		m, err := Evaluate(ctx, fsys, dir, sel, set)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-8s recall@5 %.3f  precision@5 %.3f  none-correct %.3f\n", name, m.RecallAt5, m.PrecisionAt5, m.NoneCorrect)
	}
	return nil
}

// Load reads a labelled set.
func Load(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Set
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Materialise writes the set's memories into an in-memory tree, each with
// its own mtime, and returns it with its directory.
func Materialise(s *Set) (afero.Fs, string, error) {
	fsys := afero.NewMemMapFs()
	dir := "/memory"
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, m := range s.Memories {
		content := fmt.Sprintf("---\nname: %q\ndescription: %q\ntype: %s\n---\n\n%s\n", m.Name, m.Description, m.Type, m.Body)
		p := filepath.Join(dir, m.File)
		if err := afero.WriteFile(fsys, p, []byte(content), 0o644); err != nil {
			return nil, "", err
		}
		mt := base.Add(time.Duration(i) * time.Hour)
		if err := fsys.Chtimes(p, mt, mt); err != nil {
			return nil, "", err
		}
	}
	return fsys, dir, nil
}

// Evaluate runs every message of the set through a Finder with sel.
func Evaluate(ctx context.Context, fsys afero.Fs, dir string, sel recall.Selector, s *Set) (Metrics, error) {
	f, err := recall.NewFinder(recall.FinderConfig{Fs: fsys, Dir: dir, Selector: sel})
	if err != nil {
		return Metrics{}, err
	}
	var m Metrics
	var recallSum, precSum float64
	var recallN, precN, noneN, noneOK int
	for _, q := range s.Queries {
		got := f.Find(ctx, q.Query, nil, nil)
		need := map[string]bool{}
		for _, n := range q.Needs {
			need[n] = true
		}
		hit := 0
		for _, h := range got {
			if need[h.Filename] {
				hit++
			}
		}
		if len(q.Needs) == 0 {
			noneN++
			if len(got) == 0 {
				noneOK++
			}
		} else {
			recallN++
			recallSum += float64(hit) / float64(len(q.Needs))
		}
		if len(got) > 0 {
			precN++
			precSum += float64(hit) / float64(len(got))
		}
	}
	m.Queries = len(s.Queries)
	if recallN > 0 {
		m.RecallAt5 = recallSum / float64(recallN)
	}
	if precN > 0 {
		m.PrecisionAt5 = precSum / float64(precN)
	}
	if noneN > 0 {
		m.NoneCorrect = float64(noneOK) / float64(noneN)
	}
	return m, nil
}

func countNone(s *Set) int {
	n := 0
	for _, q := range s.Queries {
		if len(q.Needs) == 0 {
			n++
		}
	}
	return n
}
