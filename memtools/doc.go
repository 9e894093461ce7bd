// Package memtools gives a model file tools that can only touch memory:
// Read (with line ranges), Write, Edit (exact, unique string replace),
// MultiEdit (several replacements, all or none), Grep (regular expression, bounded output), Glob ("**" patterns) and
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
// path with memdir's WriteGate: absolute, strictly below a root once
// cleaned (no sibling that shares the prefix), and no symbolic link
// leading out, dangling or unreadable. Writes and edits go through the
// same gate: content headed for a team directory (a root's team/, or a
// root named team) is scanned for credentials, so a Write with a token is
// refused even without a permission function; on the real disk
// (afero.OsFs) the write itself runs through an os.Root on the memory
// root, so a directory swapped for a link after the check cannot make it
// (or its temporary file) land outside, and Read and Grep open files the
// same way, so they cannot return a file outside either; MEMORY.md is
// rewritten under the index lock that Dir.Save also takes. Searches never
// follow links. Reads and searches skip binary files and files over
// Options.MaxFileBytes;
// output is bounded. Writes are atomic (temp file, fsync, rename). On
// other afero.Fs implementations the checked path is written as it is; a
// rootfs.Fs with roots of "/" works too.
//
// # Concurrency
//
// A Toolset is safe for concurrent use; tool calls on different files do
// not block each other.
package memtools
