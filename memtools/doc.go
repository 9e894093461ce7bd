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
// # Read before write
//
// Each Toolset keeps what its agent read and wrote (a
// filehistory.ReadState: LRU, 100 files / 25 MiB; share one through
// Options.ReadState). Write and Edit of a file that exists refuse when the
// agent has not read it ("has not been read yet"; Write needs a whole
// read, not an offset or a cut one) or when the file no longer holds what
// it read or last wrote ("has been modified since you read it"). The check
// runs inside the gate's locked read-modify-write cycle, just before the
// atomic rename, so of two agents that read the same file and write it at
// once exactly one lands and the other is refused; nothing is lost.
// Creating a file needs no read. ChangedFiles lists the files the agent
// wrote that someone else has changed since, for the host's next turn.
// Options.BlindWrites turns the rule off. Tools made on a Dir made
// WithHistory record every file's version under the write's lock before it
// changes, so a turn's tool writes can be rewound.
//
// # Errors
//
// Tool failures come back as *memdir.ToolError, whose text is meant for the
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
// rewritten, like every file, under the memory root's lock that Dir.Save
// also takes. Searches never
// follow links. Reads and searches skip binary files and files over
// Options.MaxFileBytes;
// output is bounded. Writes are atomic (temp file, fsync, rename). On
// other afero.Fs implementations the checked path is written as it is; a
// rootfs.Fs with roots of "/" works too.
//
// # Concurrency
//
// A Toolset is safe for concurrent use. Reads never block; writes to one
// memory root take turns for the milliseconds of their read-modify-write.
package memtools
