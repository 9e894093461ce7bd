package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/llm/openai"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/recall"
	"github.com/spf13/afero"
)

func recallFlags(fs *flag.FlagSet) runner {
	var o recallOptions
	fs.BoolVar(&o.explain, "explain", false, "show the lexical scores of the best candidates, the trust an --embedder earned, and why nothing was surfaced")
	fs.BoolVar(&o.json, "json", false, "print the recall event as JSON: the mode, and each memory's file, scope, writer and text")
	fs.StringVar(&o.embedder, "embedder", "", "recall by meaning as well as words: openai, or a control ("+strings.Join(recall.ControlEmbedderNames(), ", ")+")")
	fs.StringVar(&o.url, "openai-url", "", "with --embedder openai: the endpoint, up to before /embeddings (default $OPENAI_BASE_URL, else OpenAI's)")
	fs.StringVar(&o.model, "openai-model", "", "with --embedder openai: the embedding model (default "+openai.DefaultEmbeddingModel+")")
	return func(e env, c *common, args []string) (int, error) { return runRecall(e, c, args, o) }
}

// recallOptions are agentmem recall's flags.
type recallOptions struct {
	explain, json        bool
	embedder, url, model string
}

// recallEvent is agentmem recall --json: the recall event a host's UI
// gets (agentmem.RecallTurn), each memory with the text recall shows.
type recallEvent struct {
	Mode     string           `json:"mode"`
	Memories []recalledMemory `json:"memories"`
}

type recalledMemory struct {
	File   string `json:"file"`
	Scope  string `json:"scope"`
	Author string `json:"author,omitempty"`
	Text   string `json:"text"`
}

func runRecall(e env, c *common, args []string, o recallOptions) (int, error) {
	explain := o.explain
	if explain && o.json {
		return exitError, errors.New("--explain and --json go apart: --json prints only the recall event")
	}
	query := strings.TrimSpace(strings.Join(args, " "))
	if query == "" {
		return exitError, fmt.Errorf("give the message to recall for, e.g. agentmem recall \"how do we test?\"")
	}
	r, err := existingMemory(e, c)
	if err != nil {
		return exitError, err
	}
	now, err := c.clock()
	if err != nil {
		return exitError, err
	}
	ctx := context.Background()
	d, err := memdir.NewDir(e.fs, r.path.Dir, memdir.DirOptions{})
	if err != nil {
		return exitError, err
	}
	var last recall.Event
	opts := recall.FinderOptions{Observer: func(ev recall.Event) { last = ev }}
	if o.embedder != "" {
		if opts.Embedder, _, err = checkedEmbedder(e, o.embedder, o.url, o.model); err != nil {
			return exitError, err
		}
		if cache, err := os.UserCacheDir(); err == nil {
			// The vectors the front door keeps, shared with it.
			opts.VectorCache = filepath.Join(cache, "agentmem", "vectors")
		}
	}
	finder, err := recall.NewFinder(d, opts)
	if err != nil {
		return exitError, err
	}
	defer finder.Close()
	if explain {
		hits, err := finder.Rank(ctx, query, 10)
		if err != nil {
			return exitError, err
		}
		o := finder.Options()
		n, err := finder.Memories(ctx)
		if err != nil {
			return exitError, err
		}
		fmt.Fprintf(e.stdout, "tokens: %s\n", strings.Join(lexical.Tokenize(query), " "))
		fmt.Fprintf(e.stdout, "best candidates (score, strength, query words matched); nothing is selected when the best matches one word with strength < %.2f (among these %d memories) and that word is no name at most 3 of them hold, else up to %d scoring >= %.0f%% of the best:\n",
			o.StrengthNeeded(n), n, recall.MaxSelected, 100*o.MinRelative)
		if len(hits) == 0 {
			fmt.Fprintln(e.stdout, "  none match")
		}
		for _, h := range hits {
			fmt.Fprintf(e.stdout, "  %7.2f %5.2f %3d  %s\n", h.Score, h.Strength, h.Matched, h.Key)
		}
		fmt.Fprintln(e.stdout)
	}
	got := recall.NewSession(finder, recall.SessionOptions{Now: func() time.Time { return now }}).Recall(ctx, query, nil)
	if explain {
		explainEvent(e, o.embedder, last)
	}
	if len(got) == 0 && o.json {
		return printJSON(e.stdout, recallEvent{Mode: agentmem.RecallSelect, Memories: []recalledMemory{}})
	}
	if len(got) == 0 {
		fmt.Fprintln(e.stdout, "nothing to surface for this message")
		why := last.Why
		if last.Selector == "" { // the session asked for nothing
			why = "a message of one word is not recalled for: it carries no topic"
		}
		if explain && why != "" {
			fmt.Fprintf(e.stdout, "why: %s\n", why)
		}
		return exitOK, nil
	}
	if o.json {
		files := make([]string, len(got))
		for i, s := range got {
			rel, err := filepath.Rel(r.path.Dir, s.Path)
			if err != nil {
				rel = s.Path
			}
			files[i] = filepath.ToSlash(rel)
		}
		turn := agentmem.DescribeRecall(e.fs, r.path.Dir, files)
		ev := recallEvent{Mode: turn.Mode, Memories: []recalledMemory{}}
		for i, m := range turn.Memories {
			ev.Memories = append(ev.Memories, recalledMemory{File: m.File, Scope: m.Scope, Author: m.Author, Text: got[i].Text()})
		}
		return printJSON(e.stdout, ev)
	}
	for i, s := range got {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintln(e.stdout, s.Text())
	}
	return exitOK, nil
}

// explainEvent prints what the embedder earned and did for one Find.
func explainEvent(e env, name string, ev recall.Event) {
	switch {
	case ev.EmbedErr != nil:
		fmt.Fprintf(e.stdout, "embedder %s failed, words alone: %v\n\n", name, ev.EmbedErr)
	case ev.Trust != nil:
		t := ev.Trust
		fmt.Fprintf(e.stdout, "embedder %s: meaning %.2f, fit on this directory %.2f; a memory found by meaning adds up to %.2f (the best word match is 1), false-alarm rate %.2f; found by meaning: %d\n\n",
			name, t.Meaning, t.Fit, t.Weight, t.FalseAlarm, ev.VectorMatches)
	}
}

// checkEmbedderCommand is recall's subcommand that measures an embedder.
const checkEmbedderCommand = "check-embedder"

const checkEmbedderUsage = `usage: agentmem recall check-embedder --embedder NAME (--set FILE | --questions FILE) [flags]

Measures what an embedder brings to recall: every labelled question is
selected for by words alone and with the embedder, and recall@K is
compared (exit 1 when the embedder lowers it).

--set FILE is a labelled set, memories and questions in one JSON file
(what go run ./examples/recalleval -write-sets writes):
  {"memories": [{"file": "a.md", "name": "...", "description": "...", "body": "...",
                 "type": "user", "date": "2026-01-02T15:04:05Z"}],
   "queries":  [{"query": "...", "needs": ["a.md"]}]}
--questions FILE labels the memory directory agentmem resolves (as for
agentmem recall; --dir to name one): [{"query": "...", "needs": ["a.md"]}].
Paths are relative to the memory directory; questions needing nothing
are skipped.

--embedder is an OpenAI-compatible endpoint ("openai": OPENAI_API_KEY,
--openai-url or OPENAI_BASE_URL, --openai-model) or a control that knows nothing of meaning
(` + "zero, random, hashed-words, stemmed-words, word-vectors" + `), which should change nothing.

Flags:
`

// checkEmbedderSet is the JSON of --set.
type checkEmbedderSet struct {
	Memories []struct {
		File        string    `json:"file"`
		Type        string    `json:"type"`
		Name        string    `json:"name"`
		Description string    `json:"description"`
		Body        string    `json:"body"`
		Date        time.Time `json:"date"`
	} `json:"memories"`
	Queries []recall.Question `json:"queries"`
}

// runCheckEmbedder runs agentmem recall check-embedder.
func runCheckEmbedder(e env, args []string) int {
	fs := flag.NewFlagSet("agentmem recall check-embedder", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var com common
	com.register(fs)
	embedder := fs.String("embedder", "", "the embedder to check: openai, or a control ("+strings.Join(recall.ControlEmbedderNames(), ", ")+")")
	setFile := fs.String("set", "", "a labelled set: memories and questions in one JSON file")
	questionsFile := fs.String("questions", "", "labelled questions for the resolved memory directory (JSON)")
	perFolder := fs.Bool("per-folder", false, "ask each question of the top folder holding what it needs, as its own memory directory")
	k := fs.Int("k", recall.MaxSelected, "measure recall@K (memories selected per question)")
	weight := fs.Float64("vector-weight", 0, "recall.FinderOptions.VectorWeight (default 1)")
	url := fs.String("openai-url", "", "with --embedder openai: the endpoint, up to before /embeddings (default $OPENAI_BASE_URL, else OpenAI's)")
	model := fs.String("openai-model", "", "with --embedder openai: the embedding model (default "+openai.DefaultEmbeddingModel+")")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	if _, err := parseAnywhere(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, checkEmbedderUsage)
			fs.SetOutput(e.stdout)
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintf(e.stderr, "agentmem recall check-embedder: %v (see agentmem recall check-embedder --help)\n", err)
		return exitError
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "agentmem recall check-embedder: %v\n", err)
		return exitError
	}
	emb, name, err := checkedEmbedder(e, *embedder, *url, *model)
	if err != nil {
		return fail(err)
	}
	req := recall.CompareRequest{Embedder: emb, K: *k, PerFolder: *perFolder, Options: recall.FinderOptions{VectorWeight: *weight}}
	switch {
	case (*setFile == "") == (*questionsFile == ""):
		return fail(errors.New("give either --set FILE (memories and questions) or --questions FILE (questions for the memory directory)"))
	case *setFile != "":
		set, err := readJSON[checkEmbedderSet](e, *setFile)
		if err != nil {
			return fail(err)
		}
		fsys := afero.NewMemMapFs()
		if err := writeSet(fsys, "/memory", set); err != nil {
			return fail(err)
		}
		if req.Dir, err = memdir.NewDir(fsys, "/memory", memdir.DirOptions{}); err != nil {
			return fail(err)
		}
		req.Questions = set.Queries
	default:
		qs, err := readJSON[[]recall.Question](e, *questionsFile)
		if err != nil {
			return fail(err)
		}
		r, err := existingMemory(e, &com)
		if err != nil {
			return fail(err)
		}
		if req.Dir, err = memdir.NewDir(e.fs, r.path.Dir, memdir.DirOptions{}); err != nil {
			return fail(err)
		}
		req.Questions = qs
	}
	c, err := recall.CompareEmbedder(context.Background(), req)
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		out, _ := json.MarshalIndent(map[string]any{"embedder": name, "k": c.K, "questions": c.Questions, "skipped": c.Skipped,
			"words_recall": c.WordsRecall, "hybrid_recall": c.HybridRecall, "gain": c.Gain(), "better": c.Better, "worse": c.Worse, "abstained": c.Abstained}, "", "  ")
		fmt.Fprintln(e.stdout, string(out))
	} else {
		fmt.Fprintf(e.stdout, "%d questions", c.Questions)
		if c.Skipped > 0 {
			fmt.Fprintf(e.stdout, " (%d needing no memory skipped)", c.Skipped)
		}
		fmt.Fprintf(e.stdout, ", recall@%d:\n", c.K)
		fmt.Fprintf(e.stdout, "  %-17s %.3f\n", "words alone", c.WordsRecall)
		fmt.Fprintf(e.stdout, "  %-17s %.3f  (%+.3f; better on %d, worse on %d; found nothing with confidence on %d)\n",
			"with the embedder", c.HybridRecall, c.Gain(), c.Better, c.Worse, c.Abstained)
	}
	switch {
	case c.Gain() < 0:
		fmt.Fprintf(e.stderr, "%s lowers recall on these questions: leave it out, or lower --vector-weight\n", name)
		return exitProblems
	case c.Gain() == 0 && !*asJSON:
		fmt.Fprintf(e.stdout, "%s changes nothing on these questions\n", name)
	case !*asJSON:
		fmt.Fprintf(e.stdout, "%s helps on these questions\n", name)
	}
	return exitOK
}

// checkedEmbedder returns the embedder --embedder names, and its name.
func checkedEmbedder(e env, name, url, model string) (recall.Embedder, string, error) {
	switch name {
	case "":
		return nil, "", fmt.Errorf("--embedder is required: openai, or a control (%s)", strings.Join(recall.ControlEmbedderNames(), ", "))
	case "openai":
		url = cmp.Or(url, e.getenv("OPENAI_BASE_URL"))
		key := e.getenv("OPENAI_API_KEY")
		if key == "" {
			return nil, "", errors.New("--embedder openai needs OPENAI_API_KEY (any value for an endpoint that takes none)")
		}
		m, err := openai.New(openai.Options{APIKey: key, BaseURL: url, EmbeddingModel: model})
		if err != nil {
			return nil, "", err
		}
		return m, cmp.Or(model, openai.DefaultEmbeddingModel), nil
	}
	emb, err := recall.ControlEmbedder(name)
	if errors.Is(err, recall.ErrUnknownControl) {
		return nil, "", fmt.Errorf("--embedder %s is not one: give openai (an OpenAI-compatible endpoint), or a control (%s)", shellQuote(name), strings.Join(recall.ControlEmbedderNames(), ", "))
	}
	return emb, name, err
}

// readJSON reads a JSON file.
func readJSON[T any](e env, file string) (T, error) {
	var v T
	data, err := afero.ReadFile(e.fs, file)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%s is not the expected JSON: %w (see agentmem recall check-embedder --help)", file, err)
	}
	return v, nil
}

// writeSet writes a set's memories under dir on fsys, each dated by its
// date or one hour apart in set order.
func writeSet(fsys afero.Fs, dir string, set checkEmbedderSet) error {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, m := range set.Memories {
		rel := path.Clean("/" + m.File)
		if !strings.HasSuffix(rel, ".md") || rel == "/MEMORY.md" {
			return fmt.Errorf("memory %d: file %q must be a .md path inside the set", i+1, m.File)
		}
		p := path.Join(dir, rel)
		typ := cmp.Or(m.Type, "user")
		content := fmt.Sprintf("---\nname: %q\ndescription: %q\ntype: %s\n---\n\n%s\n", m.Name, m.Description, typ, m.Body)
		if err := fsys.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := afero.WriteFile(fsys, p, []byte(content), 0o644); err != nil {
			return err
		}
		mt := m.Date
		if mt.IsZero() {
			mt = base.Add(time.Duration(i) * time.Hour)
		}
		if err := fsys.Chtimes(p, mt, mt); err != nil {
			return err
		}
	}
	return nil
}
