package recall

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentmem/agentmem/memdir"
	"github.com/spf13/afero"
)

// Defaults of the recall rules.
const (
	// MaxSelected is the most memories one query surfaces.
	MaxSelected = 5
	// MaxCandidates is how many memories a selector chooses from.
	MaxCandidates = 200
	// SessionBudgetBytes stops surfacing once this much has been surfaced
	// in a session.
	SessionBudgetBytes = 60 << 10
	// MaxFileLines and MaxFileBytes bound each surfaced file.
	MaxFileLines = 200
	MaxFileBytes = 4096
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
	Err      error
	Duration time.Duration
}

// FinderConfig configures a Finder. Fs and Dir are required; the zero
// value of the rest means the defaults.
type FinderConfig struct {
	Fs afero.Fs
	// Dir is the auto-memory directory (team/ included).
	Dir string
	// Selector chooses among candidates; nil means a LexicalSelector.
	Selector Selector
	// Prefilter, when the directory holds more than MaxCandidates
	// memories, offers the selector the lexically best ones instead of
	// only the newest.
	Prefilter bool
	// MaxCandidates and MaxSelected override the defaults.
	MaxCandidates int
	MaxSelected   int
	// Observer receives one Event per selection; it must not block.
	Observer func(Event)
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
}

// Finder selects the memories relevant to a query. It never fails a turn:
// any error gives an empty result and an Event carrying it. Safe for
// concurrent use.
type Finder struct {
	cfg     FinderConfig
	lexical *LexicalSelector
	log     *slog.Logger
}

// ErrNoMemoryDir is returned by NewFinder without a filesystem or dir.
var ErrNoMemoryDir = errors.New("recall: FinderConfig needs Fs and Dir")

// NewFinder returns a Finder.
func NewFinder(cfg FinderConfig) (*Finder, error) {
	if cfg.Fs == nil || cfg.Dir == "" {
		return nil, ErrNoMemoryDir
	}
	if cfg.MaxCandidates <= 0 {
		cfg.MaxCandidates = MaxCandidates
	}
	if cfg.MaxSelected <= 0 {
		cfg.MaxSelected = MaxSelected
	}
	f := &Finder{cfg: cfg, lexical: NewLexicalSelector(cfg.Fs, LexicalOptions{}), log: cfg.Logger}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f, nil
}

// Find scans the memory directory, drops already-surfaced paths, offers the
// rest to the selector and returns the selected memories (at most
// MaxSelected), keeping only names that really are candidates.
func (f *Finder) Find(ctx context.Context, query string, alreadySurfaced map[string]bool, recentTools []string) []memdir.MemoryHeader {
	start := time.Now()
	ev := Event{Selector: "lexical"}
	if f.cfg.Selector != nil {
		if _, lexical := f.cfg.Selector.(*LexicalSelector); !lexical {
			ev.Selector = "model"
		}
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

func (f *Finder) find(ctx context.Context, query string, surfaced map[string]bool, recentTools []string, ev *Event) ([]memdir.MemoryHeader, error) {
	scanMax := f.cfg.MaxCandidates
	if f.cfg.Prefilter {
		scanMax = 1 << 20 // everything: the prefilter picks
	}
	headers, err := memdir.ScanMemoryFiles(ctx, f.cfg.Fs, f.cfg.Dir, memdir.ScanOptions{MaxFiles: scanMax})
	if err != nil {
		return nil, err
	}
	candidates := headers[:0:0]
	for _, h := range headers {
		if !surfaced[h.Path] {
			candidates = append(candidates, h)
		}
	}
	if len(candidates) > f.cfg.MaxCandidates {
		candidates, err = f.prefilter(ctx, query, candidates)
		if err != nil {
			return nil, err
		}
	}
	ev.Candidates = len(candidates)
	if len(candidates) == 0 {
		return nil, nil
	}
	sel := f.cfg.Selector
	if sel == nil {
		sel = f.lexical
	}
	names, err := sel.Select(ctx, SelectRequest{Query: query, Candidates: candidates, RecentTools: recentTools, Max: f.cfg.MaxSelected})
	if err != nil {
		return nil, err
	}
	byName := make(map[string]memdir.MemoryHeader, len(candidates))
	for _, c := range candidates {
		byName[c.Filename] = c
	}
	var out []memdir.MemoryHeader
	seen := map[string]bool{}
	for _, n := range names {
		h, ok := byName[n]
		if !ok {
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

// prefilter keeps the MaxCandidates lexically best candidates, topped up
// with the newest when too few match at all.
func (f *Finder) prefilter(ctx context.Context, query string, candidates []memdir.MemoryHeader) ([]memdir.MemoryHeader, error) {
	n := f.cfg.MaxCandidates
	hits, err := f.lexical.Rank(ctx, query, candidates, n, 1e-9)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]memdir.MemoryHeader, len(candidates))
	for _, c := range candidates {
		byName[c.Filename] = c
	}
	out := make([]memdir.MemoryHeader, 0, n)
	taken := map[string]bool{}
	for _, h := range hits {
		out = append(out, byName[h.Filename])
		taken[h.Filename] = true
	}
	for _, c := range candidates { // newest first
		if len(out) == n {
			break
		}
		if !taken[c.Filename] {
			out = append(out, c)
		}
	}
	return out, nil
}
