package recall

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
	"github.com/agentmem-sdk/agentmem/internal/lexical"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// Defaults of the recall rules.
const (
	// MaxSelected is the most memories one query surfaces.
	MaxSelected = 5
	// MaxCandidates is how many memories a selector chooses from.
	MaxCandidates = 200
	// sessionBudgetBytes stops surfacing once this much has been surfaced
	// in a session.
	sessionBudgetBytes = 60 << 10
	// maxFileLines and maxFileBytes bound each surfaced file.
	maxFileLines = 200
	maxFileBytes = 4096
)

// Event reports one selection, also an empty one: a selection rate needs
// its denominator.
type Event struct {
	// Selector is "model" or "lexical".
	Selector string
	// Candidates is how many memories were offered; Selected how many
	// were kept (after dropping names that are not candidates).
	Candidates int
	Selected   int
	// Dropped counts names the selector returned that are not candidates.
	Dropped int
	// Err is why the selection failed (the result is then empty).
	Err error
	// EmbedErr is why the embedder failed: this selection used words
	// alone.
	EmbedErr error
	// VectorMatches is how many memories the embedder found with
	// confidence (0: it abstained, or there is no Embedder).
	VectorMatches int
	// Trust is what the embedder earned on this directory and the weight
	// and false-alarm rate that gave the vector side (nil without an
	// Embedder, or when it failed).
	Trust *Trust
	// Why says, when the lexical selection chose nothing, what held it
	// back: no memory shares a word with the message, the best match is
	// one weak word (with the strength it has and needs), or every memory
	// was surfaced already.
	Why      string
	Duration time.Duration
}

// CandidateRule says which memories a selector chooses from.
type CandidateRule int

const (
	// ByRelevance (the default) ranks every memory in the directory
	// lexically and offers the best: the lexical selector picks straight
	// from the ranking, a model selector gets the MaxCandidates best
	// (topped up with the newest). A memory is never out of reach for
	// being old.
	ByRelevance CandidateRule = iota
	// Newest is Claude Code's rule: only the MaxCandidates most recently
	// modified memories are candidates.
	Newest
)

// FinderOptions configures a Finder; the zero value means the defaults.
type FinderOptions struct {
	// Selector chooses among candidates; nil means the lexical selector
	// with default options (a *LexicalSelector given here lends its
	// options to the Finder's own cached index).
	Selector Selector
	// Candidates is the candidate rule (default ByRelevance).
	Candidates CandidateRule
	// MaxCandidates and MaxSelected override the defaults.
	MaxCandidates int
	MaxSelected   int
	// Embedder, when set, makes the lexical selection hybrid: a memory
	// whose embedding stands out in similarity to the message's, beyond
	// what noise would give and, for a memory words found, beyond what
	// its word score predicts (see the package doc), is found by meaning
	// too, so a message that names a thing by another word still finds
	// it. An embedder whose similarities do not separate the memories,
	// only follow the words, or are mostly one value (a sparse bag of
	// words), abstains and leaves the lexical selection as it is. How much
	// it may say is earned on the directory (Trust; see the package doc).
	// Embeddings are
	// cached by the hash of the text embedded. Nil: words alone. Check
	// what an embedder brings with CompareEmbedder.
	Embedder Embedder
	// VectorCache, when set, is a directory where the Embedder's vectors
	// are kept (one file per embedder, by the hash of each text), so a
	// new Finder, a restart or another directory holding the same memory
	// does not embed it again; an embedder is known by its EmbedderID
	// (IdentifiedEmbedder) or else by its vectors of a fixed set of
	// texts, so a changed model is noticed. Empty: vectors are kept in
	// memory only. The front door sets it (agentmem.Options.VectorCache).
	VectorCache string
	// VectorWeight is how much a memory found by meaning counts against
	// the word matches: its confidence (0 to 1) times VectorWeight is
	// added to its share of the best word match's score (default
	// 1). Lower it to let meaning only fill slots
	// words leave free, raise it to let meaning outrank weak word
	// matches sooner. The best word match is never displaced.
	VectorWeight float64
	// MinSimilarity, when positive, is a cosine below which no memory
	// counts as found by meaning, however it stands out (default none;
	// it depends on the embedding model).
	MinSimilarity float64
	// FullWalkEvery is how often Find walks the whole directory even when
	// nothing says it changed (default 30 s; negative:
	// on every Find, as on a filesystem other than the real disk).
	FullWalkEvery time.Duration
	// Observer receives one Event per selection; it must not block.
	Observer func(Event)
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
}

// Finder selects the memories relevant to a query. It keeps the directory
// indexed between calls and walks it only when it may have changed (see
// the package doc): a Find on an unchanged directory reads nothing. It
// never fails a turn: any error gives an empty result and an Event
// carrying it. Safe for concurrent use.
type Finder struct {
	fs        afero.Fs
	cfg       FinderOptions
	corpus    *corpus
	closeOnce sync.Once
	lexical   LexicalOptions
	log       *slog.Logger
}

// ErrNoMemoryDir is returned by NewFinder and CompareEmbedder without a
// memory directory: give the *memdir.Dir the host opened.
var ErrNoMemoryDir = errors.New("recall: NewFinder needs the memory directory (a *memdir.Dir)")

// NewFinder returns a Finder over d (the auto-memory directory, team/
// included, or a view of one of its folders).
func NewFinder(d *memdir.Dir, cfg FinderOptions) (*Finder, error) {
	if d == nil {
		return nil, ErrNoMemoryDir
	}
	fsys, dir := d.FS(), d.Path()
	defaults.IfUnset(&cfg.MaxCandidates, MaxCandidates)
	defaults.IfUnset(&cfg.MaxSelected, MaxSelected)
	if cfg.FullWalkEvery == 0 {
		cfg.FullWalkEvery = defaultFullWalkEvery
	}
	dir = filepath.Clean(dir)
	changes := newChangeDetector(fsys, dir, cfg.FullWalkEvery, cfg.FullWalkEvery > 0, time.Now)
	defaults.IfUnset(&cfg.VectorWeight, defaultVectorWeight)
	c := newCorpus(fsys, dir, changes)
	if cfg.Embedder != nil {
		c.embedder, c.vectors, c.pending, c.cacheDir = cfg.Embedder, map[[32]byte]vector{}, map[[32]byte]string{}, cfg.VectorCache
	}
	f := &Finder{fs: fsys, cfg: cfg, corpus: c, lexical: LexicalOptions{}.withDefaults(), log: defaults.Logger(cfg.Logger)}
	// A Finder nobody closed releases its watcher when it is collected.
	runtime.AddCleanup(f, func(c *changeDetector) { c.close() }, changes)
	if ls, ok := cfg.Selector.(*LexicalSelector); ok {
		f.lexical = ls.opts
	}
	return f, nil
}

// Find brings the index up to date, drops already-surfaced paths, and
// returns the selected memories (at most MaxSelected), keeping only names
// that really are candidates.
func (f *Finder) Find(ctx context.Context, query string, alreadySurfaced map[string]bool, recentTools []string) []memdir.MemoryHeader {
	start := time.Now()
	ev := Event{Selector: "lexical"}
	if f.modelSelector() {
		ev.Selector = "model"
	}
	out, err := f.find(ctx, query, alreadySurfaced, recentTools, &ev)
	ev.Err = err
	ev.Selected = len(out)
	ev.Duration = time.Since(start)
	if err != nil {
		f.log.Warn("recall: selection failed; surfacing nothing", "event", "recall_failed", "error", err)
		out = nil
		ev.Selected = 0
	}
	if f.cfg.Observer != nil {
		f.cfg.Observer(ev)
	}
	return out
}

// modelSelector reports whether a selector other than the lexical one
// chooses.
func (f *Finder) modelSelector() bool {
	if f.cfg.Selector == nil {
		return false
	}
	_, lexical := f.cfg.Selector.(*LexicalSelector)
	return !lexical
}

func (f *Finder) find(ctx context.Context, query string, surfaced map[string]bool, recentTools []string, ev *Event) ([]memdir.MemoryHeader, error) {
	snap, err := f.corpus.refresh(ctx)
	if err != nil {
		return nil, err
	}
	skip, nSurfaced := f.skipper(surfaced, snap)
	candidates := snap.headers
	if f.cfg.Candidates == Newest {
		candidates = make([]memdir.MemoryHeader, 0, f.cfg.MaxCandidates)
		for _, h := range snap.headers {
			if len(candidates) == f.cfg.MaxCandidates {
				break
			}
			if !skip(h.Filename) {
				candidates = append(candidates, h)
			}
		}
		ev.Candidates = len(candidates)
		if len(candidates) == 0 {
			return nil, nil
		}
		in := make(map[string]bool, len(candidates))
		for _, c := range candidates {
			in[c.Filename] = true
		}
		skip = func(rel string) bool { return !in[rel] }
	} else {
		ev.Candidates = len(snap.headers) - nSurfaced
		if ev.Candidates == 0 {
			ev.Why = "every memory was surfaced already"
			return nil, nil
		}
	}

	var names []string
	if f.modelSelector() {
		if f.cfg.Candidates == ByRelevance {
			candidates = f.prefilter(query, snap, skip)
			ev.Candidates = len(candidates)
		}
		names, err = f.cfg.Selector.Select(ctx, SelectRequest{Query: query, Candidates: candidates, RecentTools: recentTools, Max: f.cfg.MaxSelected})
		if err != nil {
			return nil, err
		}
	} else {
		names = f.selectLexical(ctx, query, snap, skip, ev, true)
	}
	var out []memdir.MemoryHeader
	seen := map[string]bool{}
	for _, n := range names {
		h, ok := snap.byName[n]
		if !ok || skip(n) {
			ev.Dropped++ // a name the selector made up
			continue
		}
		if seen[n] || len(out) == f.cfg.MaxSelected {
			continue
		}
		seen[n] = true
		out = append(out, h)
	}
	return out, nil
}

// skipper returns the test for memories already surfaced (given by
// absolute path), or expired, and how many of the snapshot's memories
// it skips as surfaced.
func (f *Finder) skipper(surfaced map[string]bool, snap *snapshot) (func(rel string) bool, int) {
	rels := make(map[string]bool, len(surfaced))
	n := 0
	for p, on := range surfaced {
		if !on {
			continue
		}
		if rel, err := filepath.Rel(f.corpus.dir, p); err == nil {
			rel = filepath.ToSlash(rel)
			rels[rel] = true
			if _, ok := snap.byName[rel]; ok {
				n++
			}
		}
	}
	if len(snap.expires) == 0 {
		return func(rel string) bool { return rels[rel] }, n
	}
	// A memory past its expires date is never recalled.
	now := time.Now()
	return func(rel string) bool { return rels[rel] || snap.expired(rel, now) }, n
}

// prefilter offers a model selector the MaxCandidates lexically best
// memories, topped up with the newest when too few match at all.
func (f *Finder) prefilter(query string, snap *snapshot, skip func(string) bool) []memdir.MemoryHeader {
	n := f.cfg.MaxCandidates
	out := make([]memdir.MemoryHeader, 0, n)
	taken := map[string]bool{}
	for _, h := range f.corpus.search(query, n, skip) {
		out = append(out, snap.byName[h.Key])
		taken[h.Key] = true
	}
	for _, c := range snap.headers { // newest first
		if len(out) == n {
			break
		}
		if !taken[c.Filename] && !skip(c.Filename) {
			out = append(out, c)
		}
	}
	return out
}

// Hit is one lexically ranked memory: Key is its file name relative to
// the directory; Score, Strength, Matched, Coverage and Shared say how
// well it matched (see LexicalOptions for how the selection reads them).
type Hit = lexical.Hit

// Rank brings the index up to date and returns the k lexically best
// memories for query over the whole directory, with no thresholds: what
// the lexical selection chooses from (see LexicalOptions for its rules).
func (f *Finder) Rank(ctx context.Context, query string, k int) ([]Hit, error) {
	if _, err := f.corpus.refresh(ctx); err != nil {
		return nil, err
	}
	return f.corpus.search(query, k, nil), nil
}

// Memories brings the index up to date and returns how many memories
// the directory holds (what LexicalOptions.StrengthNeeded is measured
// against).
func (f *Finder) Memories(ctx context.Context) (int, error) {
	snap, err := f.corpus.refresh(ctx)
	if err != nil {
		return 0, err
	}
	return len(snap.headers), nil
}

// Close stops watching the directory for changes. Find still works after
// it, walking the directory's folders as it would without change notices.
// A second Close does nothing. A Finder that becomes unreachable without a
// Close releases its watcher when the garbage collector frees it.
func (f *Finder) Close() error {
	f.closeOnce.Do(f.corpus.changes.close)
	return nil
}

// Options returns the lexical selection rules the Finder applies.
func (f *Finder) Options() LexicalOptions { return f.lexical }
