// Package agentmem is the front door: one constructor that gives an agent
// runtime every memory layer wired with the defaults of the spec, and the
// few calls a host makes from its loop.
//
//	mem, err := agentmem.New(afero.NewOsFs(), model, agentmem.Options{
//		ProjectRoot: cwd, ConfigHome: filepath.Join(home, ".claude"), HomeDir: home, Getenv: os.Getenv})
//	defer mem.Close()
//	section, err := mem.SystemPrompt(ctx)    // the memory section
//	tools = append(tools, mem.Tools()...)     // Read, Write, Edit, ... on memory
//	permission = mem.Guard(permission)        // memory keeps no link out, team/ no secret
//	msg := mem.UserMessage(ctx, prompt)      // the prompt, the index (first message) and relevant memories
//	mem.TurnEnded(ctx, agentmem.Turn{Messages: conversation})
//
// New resolves the memory directory as Claude Code does (override,
// trusted settings, default under ConfigHome/projects), honours the enable
// chain (with memory off every call is a no-op and nothing is created),
// and builds: the memory tools and the write guard (memtools, teammem),
// recall (recall.Finder and Session, lexical: no model call per message),
// session transcripts (transcript, Claude Code's JSONL), the session
// summary (sessionmem), extraction after each turn (extract), the
// periodic consolidation (dream) and, with Options.Team, team sync
// (teammem watcher). Each layer stays usable on its own; the accessors
// return the ones built here.
//
// # Context
//
// Background work started from TurnEnded keeps the values of the turn's
// context (trace IDs, loggers) but not its cancellation: it ends with
// Close.
//
// # Security
//
// Every write the model makes through Tools, and every background job's
// write, goes through the memory directory's write gate (memdir.WriteGate):
// no path leaves the directory, through ".." or a symbolic link, and no
// credential lands in the team directory. Guard applies the same rules to
// the host's own file tools. See the Security sections of memdir,
// memtools and teammem.
//
// # Concurrency
//
// A *Memory is safe for concurrent use. Close drains the background jobs,
// flushes team sync and is safe to call twice.
package agentmem
