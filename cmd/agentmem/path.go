package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/agentmem-sdk/agentmem/memdir"
)

func pathFlags(*flag.FlagSet) runner { return runPath }

func runPath(e env, c *common, args []string) (int, error) {
	if len(args) > 0 {
		return exitError, fmt.Errorf("unexpected argument %q", args[0])
	}
	r, err := resolve(e, c)
	if err != nil {
		return exitError, err
	}
	w := e.stdout
	row := func(k, v string) { fmt.Fprintf(w, "%-12s %s\n", k, v) }
	enabled := "yes"
	if !memoryEnabled(e, c, r.project) {
		enabled = "no (CLAUDE_CODE_DISABLE_AUTO_MEMORY, CLAUDE_CODE_SIMPLE, CLAUDE_CODE_REMOTE or autoMemoryEnabled: false)"
	}
	row("auto memory", r.path.Dir)
	row("enabled", enabled)
	row("team", memdir.TeamMemPath(r.path.Dir))
	switch {
	case r.explicit:
		row("chosen by", "--dir")
	case r.path.Origin == memdir.OriginOverride:
		row("chosen by", "override (CLAUDE_COWORK_MEMORY_PATH_OVERRIDE)")
	case r.path.Origin == memdir.OriginSetting:
		row("chosen by", "autoMemoryDirectory in "+r.path.Source.String()+" settings")
	default:
		row("chosen by", "default: <memory base>/projects/<sanitized project key>/memory/")
		row("memory base", memdir.MemoryBase(r.inputs.ConfigHome, r.inputs.RemoteMemoryDir))
	}
	row("project", r.project)
	if root, ok := memdir.FindGitRoot(e.fs, r.project); ok {
		row("git root", root)
		if canon, _ := memdir.FindCanonicalGitRoot(e.fs, r.project); canon != root {
			row("canonical", canon+" (this checkout is a linked worktree; all worktrees share one memory directory)")
		}
	} else {
		row("git root", "none (not in a git checkout; the project directory names the memory)")
	}
	if !r.explicit {
		row("project key", memdir.SanitizePath(memdir.ProjectKey(e.fs, r.project)))
	}
	for _, n := range r.ignored {
		row("note", n)
	}
	if strings.TrimSpace(r.path.Dir) == "" {
		return exitError, fmt.Errorf("no memory directory")
	}
	return exitOK, nil
}
