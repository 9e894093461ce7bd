package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/agentmem-sdk/agentmem/dream"
	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/linediff"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// dreamHistory is the file history every CLI consolidation is recorded in.
const dreamHistory = "dream-runs"

func dreamFlags(fs *flag.FlagSet) runner {
	staged := fs.Bool("staged", false, "consolidate a copy, print the diff and ask before applying it")
	yes := fs.Bool("yes", false, "with --staged: apply without asking")
	model := fs.String("model", "", "the Anthropic model (default "+anthropic.DefaultModel+")")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) > 0 {
			return exitError, fmt.Errorf("unexpected argument %q", args[0])
		}
		if *yes && !*staged {
			return exitError, errors.New("--yes only means something with --staged")
		}
		r, err := existingMemory(e, c)
		if err != nil {
			return exitError, err
		}
		key := e.getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return exitError, errors.New("set ANTHROPIC_API_KEY: consolidation runs a model (nothing was changed)")
		}
		home, err := configHome(e, c)
		if err != nil {
			return exitError, err
		}
		m, err := anthropic.New(anthropic.Options{APIKey: key, Model: *model, BaseURL: e.getenv("ANTHROPIC_BASE_URL")})
		if err != nil {
			return exitError, err
		}
		history, err := filehistory.Open(e.fs, home, dreamHistory, filehistory.Options{})
		if err != nil {
			return exitError, err
		}
		memDir, err := memdir.NewDir(e.fs, r.path.Dir, memdir.DirOptions{})
		if err != nil {
			return exitError, err
		}
		d, err := dream.New(memDir, m, dream.Options{ConfigHome: home, OriginalCwd: r.project, History: history})
		if err != nil {
			return exitError, err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if !*staged {
			return reportDream(e, d.Force(ctx))
		}
		return stagedDream(ctx, e, d, *yes)
	}
}

// reportDream prints what an in-place consolidation did and how to undo it.
func reportDream(e env, o dream.Outcome) (int, error) {
	if o.Stopped != "" {
		return exitError, fmt.Errorf("did not run: %s", o.Stopped)
	}
	if o.Err != nil {
		return exitError, fmt.Errorf("consolidation failed (the lock was rolled back; files it already wrote are in checkpoint %s): %w", o.Checkpoint, o.Err)
	}
	fmt.Fprintf(e.stdout, "improved %d memories in %d turn(s)\n", len(o.Files), o.Turns)
	for _, f := range o.Files {
		fmt.Fprintf(e.stdout, "    %s\n", f)
	}
	if o.Checkpoint != "" && len(o.Files) > 0 {
		fmt.Fprintf(e.stdout, "undo with: agentmem rewind %s --session %s\n", o.Checkpoint, dreamHistory)
	}
	return exitOK, nil
}

// stagedDream consolidates a copy, prints its diff and applies it when the
// user (or --yes) accepts.
func stagedDream(ctx context.Context, e env, d *dream.Dreamer, yes bool) (int, error) {
	st, err := d.ForceStaged(ctx, dream.StageOptions{})
	if err != nil {
		return exitError, err
	}
	if st.Outcome.Stopped != "" {
		return exitError, fmt.Errorf("did not run: %s", st.Outcome.Stopped)
	}
	if st.Outcome.Err != nil {
		return exitError, fmt.Errorf("consolidation failed; nothing was changed: %w", st.Outcome.Err)
	}
	if len(st.Changes) == 0 {
		fmt.Fprintln(e.stdout, "the consolidation changed nothing")
		return exitOK, st.Accept(ctx)
	}
	for _, ch := range st.Changes {
		fmt.Fprint(e.stdout, linediff.Unified("a/"+ch.Rel, "b/"+ch.Rel, ch.Before, ch.After))
	}
	fmt.Fprintf(e.stdout, "%d file(s): %s\n", len(st.Changes), changeSummary(st.Changes))
	if !yes {
		fmt.Fprint(e.stdout, "Apply these changes? [y/N] ")
		if !confirmed(e) {
			if err := st.Discard(); err != nil {
				return exitError, err
			}
			fmt.Fprintln(e.stdout, "discarded: the memory directory is unchanged")
			return exitOK, nil
		}
	}
	if err := st.Accept(ctx); err != nil {
		_ = st.Discard()
		if errors.Is(err, dream.ErrStageStale) {
			return exitError, errors.New("a memory changed while you reviewed; nothing was applied: run agentmem dream again")
		}
		return exitError, err
	}
	fmt.Fprintln(e.stdout, "applied")
	if st.Checkpoint != "" {
		fmt.Fprintf(e.stdout, "undo with: agentmem rewind %s --session %s\n", st.Checkpoint, dreamHistory)
	}
	return exitOK, nil
}

func changeSummary(cs []dream.StagedChange) string {
	n := map[dream.ChangeKind]int{}
	for _, c := range cs {
		n[c.Kind]++
	}
	return fmt.Sprintf("%d added, %d changed, %d deleted", n[dream.Added], n[dream.Changed], n[dream.Deleted])
}

// confirmed reads one answer line: only y or yes accepts.
func confirmed(e env) bool {
	if e.stdin == nil {
		return false
	}
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
