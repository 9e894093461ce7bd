// Package memtools gives a model file tools that can only touch memory:
// Read (with line ranges), Write, Edit (exact, unique string replace),
// Grep (regular expression, bounded output), Glob ("**" patterns) and
// List, over an afero.Fs, plus the permission rules that the background
// jobs run them under. It is public so a host can give its own main agent
// the same safe tools.
//
// Build a Toolset with New(fsys, roots, Options) and pass Tools() to
// llm.RunAgent together with a permission function: ExtractPermission for
// extraction and consolidation, SessionPermission for the session
// summary. Written() reports the files the tools changed.
//
// # Errors
//
// Tool failures come back as *ToolError, whose text is meant for the
// model: it names only paths inside the memory directories (a path outside
// is never echoed), never file contents of other files, and says what to
// do next (read on with an offset, add context to make an edit unique,
// use List for a directory).
//
// # Security
//
// Two layers confine every call. The permission function refuses calls
// outside the rule (writes outside the auto-memory dir, unknown tools,
// team writes with a secret, anything but one Edit for the session rule)
// with a reason the model sees. Independently, every tool checks its own
// path: absolute, strictly below a root once cleaned (no sibling that
// shares the prefix), and no symbolic link leading out or dangling (the
// teammem containment check). Searches never follow links. Reads and
// searches skip binary files and files over Options.MaxFileBytes; output
// is bounded. Writes are atomic (temp file, fsync, rename).
//
// A host on a real disk that fears a link being swapped in between check
// and write can pass a rootfs.Fs (package github.com/agentmem/agentmem/rootfs) rooted at the
// memory directory, and roots of "/".
//
// # Concurrency
//
// A Toolset is safe for concurrent use; tool calls on different files do
// not block each other.
package memtools
