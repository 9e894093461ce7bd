package memdir

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/internal/defaults"
)

// PromptMode says which memory prompt LoadMemoryPrompt built.
type PromptMode int

// The prompt variants, in dispatch order.
const (
	// PromptDisabled: auto memory is off; there is no memory section.
	PromptDisabled PromptMode = iota
	// PromptDailyLog: the daily-log prompt (long sessions append to a log).
	PromptDailyLog
	// PromptCombined: the private and the team directory.
	PromptCombined
	// PromptSingle: one directory, the full prompt.
	PromptSingle
	// PromptLean: one directory, the short prompt of the larger models.
	PromptLean
)

func (m PromptMode) String() string {
	return enumName("PromptMode", int(m), []string{PromptDisabled: "disabled", PromptDailyLog: "daily-log",
		PromptCombined: "combined", PromptSingle: "single", PromptLean: "lean"})
}

// LoadPromptRequest is what LoadMemoryPrompt needs. The zero value of each
// optional field means its default.
type LoadPromptRequest struct {
	// Enabled is the result of IsAutoMemoryEnabled.
	Enabled bool
	// AutoDir is the auto-memory directory, from ResolveAutoMemPath
	// (required when Enabled).
	AutoDir string
	// DailyLog selects daily-log mode; it wins over team memory.
	DailyLog bool
	// TeamActive includes the team directory: set it only when team memory
	// is enabled and the last sync found content for the repository, so an
	// empty team layer costs no prompt tokens.
	TeamActive bool
	// TeamDir is the team directory the combined prompt describes
	// (default TeamMemPath(AutoDir)).
	TeamDir string
	// IndividualMemoryFiles are the host's already-loaded instruction files, passed through
	// in the combined prompt.
	IndividualMemoryFiles []InstructionFile
	// OmitHowToSave drops the how-to-save section from the combined prompt.
	OmitHowToSave bool
	// SkipIndex selects the single-directory prompt without an index
	// (for a host whose recall brings memories to each message).
	SkipIndex bool
	// Lean selects the short prompt when no team
	// or daily log is active; its index always goes to IndexContext.
	Lean bool
	// IndexInUserMessage delivers the index as Claude Code 2.1.328 does:
	// not in Text but in IndexContext, for the first user message.
	IndexInUserMessage bool
	// Stores are the memory stores synced into the directory: the prompt
	// ends with a section naming each mount and its access.
	Stores []MountedStore
	// Heading replaces the prompt's first heading ("Memory").
	Heading string
	// ExtraGuidelines are the host's own rules, one per entry.
	ExtraGuidelines []string
	// IndexLimits bounds each index loaded into the prompt.
	IndexLimits IndexLimits
	// Logger receives events such as memdir_index_unreadable,
	// memdir_disabled and memdir_mkdir_failed; nil discards them.
	Logger *slog.Logger
	// Layout is the header layout the prompt teaches (default
	// LayoutCurrent); give the one the host's Dir writes.
	Layout Layout
	// TeamAuthors say who wrote each team memory as it is and when,
	// keyed by its path in the team directory ("/"-separated): the team
	// listing names them (teammem.Attributions reads what the last syncs
	// learned from the server).
	TeamAuthors map[string]Attribution
}

// MemoryPrompt is the memory section of a system prompt.
type MemoryPrompt struct {
	// Text is empty when Mode is PromptDisabled.
	Text string
	Mode PromptMode
	// IndexContext, with IndexInUserMessage or Lean (and no SkipIndex),
	// is BuildIndexContext's block for the first user message: "" when
	// there is no index to send.
	IndexContext string
}

// LoadMemoryPrompt builds the memory section a host puts into its system
// prompt, choosing the variant: disabled → none (and a "memdir_disabled"
// event); daily-log mode → the daily-log prompt; team active →
// the combined prompt; Lean → the short prompt; else the full one. It first makes sure
// the directories exist (EnsureMemoryDir); a failure there is logged and
// does not stop the prompt, since the model's first write will surface it.
func LoadMemoryPrompt(ctx context.Context, fsys afero.Fs, cfg LoadPromptRequest) (MemoryPrompt, error) {
	log := defaults.Logger(cfg.Logger)
	if !cfg.Enabled {
		log.Debug("memdir: auto memory is disabled; no memory prompt", "event", "memdir_disabled")
		return MemoryPrompt{Mode: PromptDisabled}, nil
	}
	if cfg.AutoDir == "" {
		return MemoryPrompt{}, ErrNoMemoryDir
	}
	ensure := cfg.AutoDir
	if cfg.TeamActive && !cfg.DailyLog {
		ensure = TeamMemPath(cfg.AutoDir) // creating the team dir creates the auto dir
	}
	if err := EnsureMemoryDir(fsys, ensure); err != nil {
		log.Warn("memdir: could not create the memory directory", "event", "memdir_mkdir_failed", "error", err)
	}
	var (
		text string
		mode PromptMode
		err  error
	)
	switch {
	case cfg.DailyLog:
		mode = PromptDailyLog
		text, err = buildDailyLogPrompt(ctx, fsys, cfg)
	case cfg.TeamActive:
		mode = PromptCombined
		text, err = buildCombinedMemoryPrompt(ctx, fsys, cfg)
	case cfg.Lean:
		mode = PromptLean
		text, err = buildLeanMemoryPrompt(ctx, fsys, cfg)
	default:
		mode = PromptSingle
		text, err = buildMemoryPrompt(ctx, fsys, cfg)
	}
	if err != nil {
		return MemoryPrompt{}, err
	}
	stores, err := buildStoresSection(ctx, fsys, cfg.AutoDir, cfg.Stores)
	if err != nil {
		return MemoryPrompt{}, err
	}
	p := MemoryPrompt{Text: text + stores, Mode: mode}
	if split := cfg.IndexInUserMessage || mode == PromptLean; split && !cfg.DailyLog && !(cfg.SkipIndex && mode != PromptCombined) {
		p.IndexContext, err = BuildIndexContext(ctx, fsys, cfg)
		if err != nil {
			return MemoryPrompt{}, err
		}
	}
	return p, nil
}

// BuildCombinedMemoryPrompt returns the memory section for a private
// directory and its team directory: the text LoadMemoryPrompt gives when
// req.TeamActive is set, for a host that assembles its own system prompt
// and already knows team memory is active. Only AutoDir, TeamDir,
// IndividualMemoryFiles, OmitHowToSave, IndexInUserMessage and the prompt
// options (Heading, ExtraGuidelines, IndexLimits, Logger, Layout,
// TeamAuthors) are read; it creates no directory and adds no store section.
func BuildCombinedMemoryPrompt(ctx context.Context, fsys afero.Fs, req LoadPromptRequest) (string, error) {
	if req.AutoDir == "" {
		return "", ErrNoMemoryDir // before a cancelled ctx, as it always was
	}
	return buildCombinedMemoryPrompt(ctx, fsys, req)
}

// EnsureMemoryDir creates dir and its parents (mode 0o755). It is
// idempotent: an existing directory is not an error.
func EnsureMemoryDir(fsys afero.Fs, dir string) error {
	if dir == "" {
		return ErrNoMemoryDir
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("memdir: create memory directory: %w", err)
	}
	return nil
}
