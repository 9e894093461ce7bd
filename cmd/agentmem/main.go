// Command agentmem looks at a real memory tree from a terminal: where it
// lives, what the model will see, what is wrong with it, and what recall
// would pick; it also writes memories by hand (new, rm), through the same
// write gate as the model's tools.
//
//	agentmem path    [--project DIR]           where memory lives, and why
//	agentmem prompt  [--team] [--skip-index]   the memory section of the system prompt
//	agentmem ls      [--json]                  the memory files, newest first
//	agentmem new     --type T --name N --description D [--body TEXT]   save a memory (body on stdin by default)
//	agentmem show    FILE|NAME                 print one memory
//	agentmem rm      FILE|NAME                 remove a memory and its pointer (undoable)
//	agentmem lint    [--fix] [--json]          problems in the tree (exit 1 when any)
//	agentmem recall  [--explain] "QUERY"       what recall would surface for a message
//	agentmem recall check-embedder --embedder NAME ...   what an embedder brings to recall
//	agentmem team    serve|token|pull|push|sync|watch   team memory sync (see agentmem team --help)
//	agentmem history / rewind                   review and undo what a job changed
//	agentmem dream   [--staged [--yes]]         consolidate now (ANTHROPIC_API_KEY)
//	agentmem mcp     [--http ADDR]              serve memory to MCP clients
//	agentmem version                            the version (also --version)
//
// Every subcommand takes --config-dir (default $CLAUDE_CONFIG_DIR, else
// ~/.claude), --project (default the current directory) and --dir (a
// memory directory to use as it is, skipping resolution).
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// Exit codes.
const (
	exitOK       = 0
	exitProblems = 1 // lint found problems
	exitError    = 2 // bad usage or a failure
)

// env is everything a subcommand may take from the process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	home           string
	cwd            string
	fs             afero.Fs
}

func main() {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	os.Exit(run(os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, home: home, cwd: cwd, fs: afero.NewOsFs()}))
}

// runner runs a subcommand once its flags are parsed.
type runner func(e env, c *common, args []string) (int, error)

type command struct {
	name, args, summary string
	// setup registers the subcommand's own flags and returns its runner,
	// which reads them: no flag value outlives one invocation.
	setup func(fs *flag.FlagSet) runner
}

func commands() []command {
	return []command{
		{"path", "[--project DIR]", "print the memory directories and why they were chosen", pathFlags},
		{"prompt", "[--team] [--skip-index | --index-in-system-prompt]", "print the memory section of the system prompt, then the index block the first user message starts with", promptFlags},
		{"ls", "[--json]", "list memory files, newest first", lsFlags},
		{"new", "--type T --name N --description D [--body B]", "save a memory and its pointer in MEMORY.md, creating the directory; undo with the agentmem rewind command it prints", newFlags},
		{"show", "FILE|NAME", "print one memory file", showFlags},
		{"rm", "FILE|NAME", "remove a memory and its pointer in MEMORY.md; undo with the agentmem rewind command it prints (agentmem history lists them, one history per edit)", rmFlags},
		{"pause", "", "pause the agents' writes to the memory directory (memory tools, MCP, extraction, consolidation) until agentmem resume", pauseFlags},
		{"resume", "", "let the agents write to the memory directory again", resumeFlags},
		{"lint", "[--fix] [--json]", "report problems in the memory tree; exit 1 when there are any", lintFlags},
		{"recall", "[--explain] QUERY | check-embedder", "show what recall would surface for a message; check-embedder: measure what an embedder brings (agentmem recall check-embedder --help)", recallFlags},
		{"team", "serve|token|pull|push|sync|watch|log|restore", "run or use a team memory sync server (agentmem team --help)", teamFlags},
		{"store", "ls|sync|watch", "keep memory folders in step with memory stores, in Claude Code's layout (agentmem store --help)", storeFlags},
		{"sessions", "ls|show|search", "list, show and search session transcripts (agentmem sessions --help)", sessionsFlags},
		{"history", "[--session NAME] [--diff] [--json]", "list the file histories' checkpoints and the files changed after each", historyFlags},
		{"rewind", "CHECKPOINT [--session NAME] [--dry-run]", "put the files of a history back as they were at a checkpoint", rewindFlags},
		{"dream", "[--staged [--yes]] [--model M]", "consolidate the memory directory now with the Anthropic API (undoable)", dreamFlags},
		{"mcp", "[--http ADDR] [--team-server URL] [--agent A]", "serve the memory directory to MCP clients (stdio, or HTTP at /mcp)", mcpFlags},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: agentmem COMMAND [flags]")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.name, c.args, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run agentmem COMMAND --help for a command's flags; agentmem version (or --version) prints the version.")
}

func run(args []string, e env) int {
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		return printVersion(e)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		if len(args) == 0 {
			return exitError
		}
		return exitOK
	}
	if args[0] == "recall" && len(args) > 1 && args[1] == checkEmbedderCommand {
		return runCheckEmbedder(e, args[2:])
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		fs := flag.NewFlagSet("agentmem "+c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard) // errors are reported in one line below
		var com common
		com.register(fs)
		runSub := c.setup(fs)
		positional := args[1:]
		// The team, sessions and store commands parse their own flags.
		if c.name != "team" && c.name != "sessions" && c.name != "store" {
			var err error
			if positional, err = parseAnywhere(fs, args[1:]); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					fmt.Fprintf(e.stdout, "usage: agentmem %s %s\n\n%s.\n\nFlags:\n", c.name, c.args, c.summary)
					fs.SetOutput(e.stdout)
					fs.PrintDefaults()
					return exitOK
				}
				fmt.Fprintf(e.stderr, "agentmem %s: %v (see agentmem %s --help)\n", c.name, err, c.name)
				return exitError
			}
		}
		code, err := runSub(e, &com, positional)
		if err != nil {
			fmt.Fprintf(e.stderr, "agentmem %s: %s\n", c.name, inUserWords(err))
			return exitError
		}
		return code
	}
	fmt.Fprintf(e.stderr, "agentmem: unknown command %q (want path, prompt, ls, new, show, rm, lint, recall, team, store, sessions, history, rewind, dream, mcp or version)\n", args[0])
	return exitError
}

// common holds the flags every subcommand takes.
type common struct {
	configDir string
	project   string
	dir       string
	now       string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.configDir, "config-dir", "", "config home (default $CLAUDE_CONFIG_DIR, else ~/.claude)")
	fs.StringVar(&c.project, "project", "", "project directory (default the current directory)")
	fs.StringVar(&c.dir, "dir", "", "use this memory directory as it is, without resolving one")
	fs.StringVar(&c.now, "now", "", "the current time, RFC 3339 (for reproducible ages)")
}

// clock returns --now, or the real time.
func (c *common) clock() (time.Time, error) {
	if c.now == "" {
		return time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339, c.now)
	if err != nil {
		return time.Time{}, fmt.Errorf("--now: want an RFC 3339 time such as 2026-03-20T12:00:00Z")
	}
	return t, nil
}

// configHome is --config-dir, else $CLAUDE_CONFIG_DIR, else ~/.claude.
func configHome(e env, c *common) (string, error) {
	home := cmp.Or(c.configDir, e.getenv("CLAUDE_CONFIG_DIR"))
	if home == "" {
		if e.home == "" {
			return "", errors.New("no config home: pass --config-dir or set CLAUDE_CONFIG_DIR or HOME")
		}
		home = filepath.Join(e.home, ".claude")
	}
	return filepath.Abs(home)
}

// resolved is the memory directory a subcommand works on.
type resolved struct {
	path     memdir.AutoMemPath
	project  string
	inputs   memdir.AutoMemPathRequest
	ignored  []string // settings seen but not trusted, for path's explanation
	explicit bool
}

// resolve finds the auto-memory directory from the flags and environment.
func resolve(e env, c *common) (resolved, error) {
	project, err := filepath.Abs(cmp.Or(c.project, e.cwd))
	if err != nil {
		return resolved{}, err
	}
	if c.project != "" && c.dir == "" {
		// A mistyped --project is an error, not a new memory directory
		// (with --dir, the directory is named outright).
		if ok, _ := afero.DirExists(e.fs, project); !ok {
			return resolved{}, fmt.Errorf("the project %s does not exist: check --project (nothing was created)", project)
		}
	}
	if c.dir != "" {
		d, err := filepath.Abs(c.dir)
		if err != nil {
			return resolved{}, err
		}
		return resolved{path: memdir.AutoMemPath{Dir: d + string(filepath.Separator), Origin: memdir.OriginOverride}, project: project, explicit: true}, nil
	}
	in := memdir.AutoMemPathRequestFromEnv(e.getenv, e.home)
	if c.configDir != "" {
		in.ConfigHome = c.configDir
	}
	if in.ConfigHome == "" {
		return resolved{}, errors.New("no config home: pass --config-dir or set CLAUDE_CONFIG_DIR or HOME")
	}
	if in.ConfigHome, err = filepath.Abs(in.ConfigHome); err != nil {
		return resolved{}, err
	}
	in.ProjectRoot = project
	settings, ignored := readSettings(e.fs, in.ConfigHome, project)
	in.AutoMemoryDirectory = settings
	p, err := memdir.ResolveAutoMemPath(e.fs, in)
	if err != nil {
		return resolved{}, err
	}
	return resolved{path: p, project: project, inputs: in, ignored: ignored}, nil
}

// packagePrefixes are the "package: " prefixes library errors start with,
// which say nothing to a person at the command line.
var packagePrefixes = []string{"memdir: invalid memory: ", "memdir: ", "foldersync: ", "teammem: ", "storesync: ", "recall: ", "memtools: ", "filehistory: ", "transcript: "}

// inUserWords is an error's message without the package names it starts
// with.
func inUserWords(err error) string {
	msg := err.Error()
	for again := true; again; {
		again = false
		for _, p := range packagePrefixes {
			if rest, ok := strings.CutPrefix(msg, p); ok && rest != "" {
				msg, again = rest, true
			}
		}
	}
	return msg
}
