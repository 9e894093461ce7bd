package main

import (
	"flag"
	"fmt"

	"github.com/agentmem-sdk/agentmem/memdir"
)

func pauseFlags(*flag.FlagSet) runner {
	return func(e env, c *common, args []string) (int, error) { return runPause(e, c, args, true) }
}

func resumeFlags(*flag.FlagSet) runner {
	return func(e env, c *common, args []string) (int, error) { return runPause(e, c, args, false) }
}

// runPause pauses or resumes the agents' writes to the memory directory,
// for every process that writes it (memdir.PauseDirectory).
func runPause(e env, c *common, args []string, pause bool) (int, error) {
	if len(args) > 0 {
		return exitError, fmt.Errorf("unexpected argument %q", args[0])
	}
	r, err := existingMemory(e, c)
	if err != nil {
		return exitError, err
	}
	if pause {
		if err := memdir.PauseDirectory(e.fs, r.path.Dir); err != nil {
			return exitError, fmt.Errorf("pause %s: %w", r.path.Dir, err)
		}
		fmt.Fprintf(e.stdout, "paused: the agents' writes to %s are refused (memory tools, MCP, extraction, consolidation) until agentmem resume\n", r.path.Dir)
		return exitOK, nil
	}
	if err := memdir.ResumeDirectory(e.fs, r.path.Dir); err != nil {
		return exitError, fmt.Errorf("resume %s: %w", r.path.Dir, err)
	}
	fmt.Fprintf(e.stdout, "resumed: the agents may write to %s again\n", r.path.Dir)
	return exitOK, nil
}
