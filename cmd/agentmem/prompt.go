package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

func promptFlags(fs *flag.FlagSet) runner {
	team := fs.Bool("team", false, "include the team directory (as when team memory is active)")
	skipIndex := fs.Bool("skip-index", false, "the variant without MEMORY.md")
	inSystem := fs.Bool("index-in-system-prompt", false, "put MEMORY.md in the system prompt, as Claude Code 2.1.336 and older and agentmem.Options.Prompt.IndexInSystemPrompt do, instead of the first user message")
	return func(e env, c *common, args []string) (int, error) {
		return runPrompt(e, c, args, promptShape{team: *team, skipIndex: *skipIndex, inSystem: *inSystem})
	}
}

// promptShape is what agentmem prompt prints.
type promptShape struct{ team, skipIndex, inSystem bool }

// firstMessageHeader separates the system prompt's memory section from
// the index block the first user message starts with.
const firstMessageHeader = "\n--- the first user message of a session starts with ---\n\n"

func runPrompt(e env, c *common, args []string, shape promptShape) (int, error) {
	team, skipIndex := shape.team, shape.skipIndex
	if len(args) > 0 {
		return exitError, fmt.Errorf("unexpected argument %q", args[0])
	}
	r, err := existingMemory(e, c)
	if err != nil {
		return exitError, err
	}
	// Read-only: the prompt must not create directories as a side effect.
	fsys := afero.NewReadOnlyFs(e.fs)
	p, err := memdir.LoadMemoryPrompt(context.Background(), fsys, memdir.LoadPromptRequest{
		Enabled:            true,
		AutoDir:            r.path.Dir,
		TeamActive:         team,
		SkipIndex:          skipIndex,
		IndexInUserMessage: !shape.inSystem,
		TeamAuthors:        teamAuthors(sharedAuthors(e.fs, r.path.Dir)),
	})
	if err != nil {
		return exitError, err
	}
	fmt.Fprint(e.stdout, p.Text)
	if skipIndex || shape.inSystem {
		return exitOK, nil
	}
	// What the front door sends, as the newest Claude Code does: the index
	// in the session's first user message.
	block, err := memdir.BuildIndexContext(context.Background(), fsys, memdir.LoadPromptRequest{AutoDir: r.path.Dir, TeamActive: team})
	if err != nil {
		return exitError, err
	}
	if block != "" {
		fmt.Fprint(e.stdout, firstMessageHeader+block)
		if !strings.HasSuffix(block, "\n") {
			fmt.Fprintln(e.stdout)
		}
	}
	return exitOK, nil
}

// teamAuthors keeps the writers of the team directory's memories (its
// own and its store folders'), keyed by their path in it.
func teamAuthors(shared map[string]memdir.Attribution) map[string]memdir.Attribution {
	out := map[string]memdir.Attribution{}
	for k, a := range shared {
		if rel, ok := strings.CutPrefix(k, memdir.TeamDirName+"/"); ok {
			out[rel] = a
		}
	}
	return out
}
