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
	return func(e env, c *common, args []string) (int, error) { return runPrompt(e, c, args, *team, *skipIndex) }
}

func runPrompt(e env, c *common, args []string, team, skipIndex bool) (int, error) {
	if len(args) > 0 {
		return exitError, fmt.Errorf("unexpected argument %q", args[0])
	}
	r, err := existingMemory(e, c)
	if err != nil {
		return exitError, err
	}
	// Read-only: the prompt must not create directories as a side effect.
	p, err := memdir.LoadMemoryPrompt(context.Background(), afero.NewReadOnlyFs(e.fs), memdir.LoadPromptRequest{
		Enabled:     true,
		AutoDir:     r.path.Dir,
		TeamActive:  team,
		SkipIndex:   skipIndex,
		TeamAuthors: teamAuthors(sharedAuthors(e.fs, r.path.Dir)),
	})
	if err != nil {
		return exitError, err
	}
	fmt.Fprint(e.stdout, p.Text)
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
