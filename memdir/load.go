package memdir

import (
	"context"
	"fmt"

	"github.com/spf13/afero"
)

// PromptMode says which memory prompt LoadMemoryPrompt built.
type PromptMode int

// The prompt variants, in dispatch order.
const (
	// PromptDisabled: auto memory is off; there is no memory section.
	PromptDisabled PromptMode = iota
	// PromptDailyLog: BuildDailyLogPrompt.
	PromptDailyLog
	// PromptCombined: BuildCombinedMemoryPrompt (private + team).
	PromptCombined
	// PromptSingle: BuildMemoryPrompt.
	PromptSingle
	// PromptLean: BuildLeanMemoryPrompt.
	PromptLean
)

func (m PromptMode) String() string {
	switch m {
	case PromptDisabled:
		return "disabled"
	case PromptDailyLog:
		return "daily-log"
	case PromptCombined:
		return "combined"
	case PromptSingle:
		return "single"
	case PromptLean:
		return "lean"
	}
	return fmt.Sprintf("PromptMode(%d)", int(m))
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
	// IndividualMemoryFiles are passed to BuildCombinedMemoryPrompt.
	IndividualMemoryFiles []InstructionFile
	// OmitHowToSave drops the how-to-save section from the combined prompt.
	OmitHowToSave bool
	// SkipIndex selects the single-directory prompt without an index
	// (for a host whose recall brings memories to each message).
	SkipIndex bool
	// Lean selects the short prompt (BuildLeanMemoryPrompt) when no team
	// or daily log is active; its index always goes to IndexContext.
	Lean bool
	// IndexInUserMessage delivers the index as Claude Code 2.1.328 does:
	// not in Text but in IndexContext, for the first user message.
	IndexInUserMessage bool
	// Stores are the memory stores synced into the directory: the prompt
	// ends with BuildStoresSection.
	Stores []MountedStore
	// PromptOptions go to the chosen builder. Its Logger also receives
	// memdir_disabled and memdir_mkdir_failed.
	PromptOptions
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
// event); daily-log mode → BuildDailyLogPrompt; team active →
// BuildCombinedMemoryPrompt; else BuildMemoryPrompt. It first makes sure
// the directories exist (EnsureMemoryDir); a failure there is logged and
// does not stop the prompt, since the model's first write will surface it.
func LoadMemoryPrompt(ctx context.Context, fsys afero.Fs, cfg LoadPromptRequest) (MemoryPrompt, error) {
	log := logger(cfg.Logger)
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
		text, err = BuildDailyLogPrompt(ctx, fsys, DailyLogPromptRequest{AutoDir: cfg.AutoDir, PromptOptions: cfg.PromptOptions})
	case cfg.TeamActive:
		mode = PromptCombined
		text, err = BuildCombinedMemoryPrompt(ctx, fsys, CombinedPromptRequest{
			AutoDir: cfg.AutoDir, IndividualMemoryFiles: cfg.IndividualMemoryFiles,
			OmitHowToSave: cfg.OmitHowToSave, IndexInUserMessage: cfg.IndexInUserMessage, PromptOptions: cfg.PromptOptions,
		})
	case cfg.Lean:
		mode = PromptLean
		text, err = BuildLeanMemoryPrompt(ctx, fsys, LeanPromptRequest{Dir: cfg.AutoDir, SkipIndex: cfg.SkipIndex, PromptOptions: cfg.PromptOptions})
	default:
		mode = PromptSingle
		text, err = BuildMemoryPrompt(ctx, fsys, MemoryPromptRequest{Dir: cfg.AutoDir, SkipIndex: cfg.SkipIndex,
			IndexInUserMessage: cfg.IndexInUserMessage, PromptOptions: cfg.PromptOptions})
	}
	if err != nil {
		return MemoryPrompt{}, err
	}
	stores, err := BuildStoresSection(ctx, fsys, cfg.AutoDir, cfg.Stores)
	if err != nil {
		return MemoryPrompt{}, err
	}
	p := MemoryPrompt{Text: text + stores, Mode: mode}
	if split := cfg.IndexInUserMessage || mode == PromptLean; split && !cfg.DailyLog && !(cfg.SkipIndex && mode != PromptCombined) {
		p.IndexContext, err = BuildIndexContext(ctx, fsys, IndexContextRequest{AutoDir: cfg.AutoDir, Team: mode == PromptCombined,
			IndexLimits: cfg.IndexLimits, Logger: cfg.Logger})
		if err != nil {
			return MemoryPrompt{}, err
		}
	}
	return p, nil
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
