// Package memdir implements the long-term memory directory: one directory
// of Markdown files per project that an agent reads at the start of every
// session and writes as it learns. It is byte-compatible with the tree
// Claude Code keeps under ~/.claude/projects/<project>/memory/.
//
// A memory directory holds typed topic files (YAML frontmatter with name,
// description and one of four types: user, feedback, project, reference)
// and an index, MEMORY.md, with one pointer line per topic file. The team
// directory team/ inside it is shared through the teammem package.
//
// What the package covers, by the name to look for:
//
//   - Enabling: IsAutoMemoryEnabled reads Claude Code's variables through
//     an injected getenv.
//   - Where memory lives: ResolveAutoMemPath (override, trusted settings,
//     default), ValidateMemoryPath, SanitizePath, FindCanonicalGitRoot
//     (worktrees share one directory), AgentMemoryDir, DailyLogPath,
//     TeamMemPath.
//   - The index: IndexLimits (Truncate: the index as a prompt holds it).
//   - Memory files: ParseFrontmatter, FormatMemoryFile, and Dir.Save, which
//     writes a topic file and its index pointer atomically; Dir.Delete
//     removes one with its pointers; Dir.EnsurePointer, RemovePointers and
//     MovePointers keep the index in step with files written, removed or
//     renamed by other means (CheckFile validates a name as Save does).
//   - Writing safely: Dir.Gate, the one check and write path for every
//     model- or remote-chosen path into memory (CheckPath, CheckContent,
//     WriteFile, UpdateFile); Dir.CheckToolCall before a host's own
//     file-writing tools; CheckTeamContainment for teammem's
//     validators.
//   - Finding memories: ScanMemoryFiles and FormatManifest.
//   - Freshness: MemoryAgeDays, MemoryAge,
//     MemoryFreshnessNote, MemoryHeaderLine.
//   - The system prompt: LoadMemoryPrompt picks the single-directory,
//     lean, combined (private + team) or daily-log prompt, or none
//     (PromptMode); BuildIndexContext is the index block for the first
//     user message; BuildAgentMemoryPrompt serves sub-agents.
//
// All file access goes through an afero.Fs that the caller passes in
// (afero.NewOsFs() for the real disk). The package reads no environment
// variables, home directory or other global state, and holds no
// package-level mutable state.
//
// # Errors
//
//   - *MemoryPathError (errors.Is ErrInvalidMemoryPath): a memory directory
//     failed validation; Reason says why. It never contains the path.
//   - *FrontmatterError (errors.Is ErrFrontmatter): a header is not YAML
//     even after quoting; the file is still usable without fields.
//   - ErrInvalidMemory: Dir.Save refused a Memory; the message names the
//     field. Save errors that say "saved but MEMORY.md could not be
//     updated" mean the topic file is written and only the pointer is
//     missing.
//   - ErrMemoryNotFound: Dir.Delete was given a file that does not exist.
//   - *VersionError (errors.Is ErrVersionMismatch): a save's
//     Memory.IfVersion did not hold: the file exists where it was to be
//     created ("new"), or holds another version; nothing was written.
//   - *PathTraversalError: the write gate refused a path; Reason says why
//     (ReasonOutsideRoot, ReasonSymlinkEscape, ReasonDangling, ReasonLoop,
//     ReasonNotMemoryPath, ...; ReasonUnverifiable means the check itself
//     failed and the path was refused to be safe). teammem names the same
//     type teammem.PathTraversalError. Its message never holds a host path.
//   - *secrets.Error (errors.Is secrets.ErrFound): content headed for a
//     team directory holds a credential; its Label names the kind.
//   - *screen.Error (errors.Is screen.ErrInvisible, ErrIndexLink or
//     ErrInjection): a write adds an invisible or direction-control
//     character, an index line with a second link or a link out of its
//     directory, or (team and synced writes) a high-confidence injection;
//     it names the rule, the line, the byte offset and the code point.
//   - ErrNoMemoryBase, ErrNoProjectRoot, ErrNoMemoryDir,
//     ErrInvalidAgentType: a required input is missing or unusable.
//
// # Concurrency
//
// Functions are safe for concurrent use, and so are *Dir and *WriteGate.
// Every MEMORY.md update holds the index lock (flock on a lock file
// beside it on the real disk), so concurrent Saves through one Dir,
// several Dir values or several processes never lose index pointers.
// ScanMemoryFiles reads with a few worker goroutines that always finish
// before it returns.
//
// # Security
//
// The memory directory is where a model writes, so where it points is a
// security decision. ResolveAutoMemPath ignores autoMemoryDirectory from
// project settings (a cloned repository could aim it at ~/.ssh) and
// validates every candidate: no relative paths, roots, UNC paths, NUL
// bytes, or "~" forms that land on the home directory itself.
// FindCanonicalGitRoot trusts a worktree's .git pointer only when the main
// repository points back at it. Dir.Save accepts only clean relative
// ".md" names below the directory. ScanMemoryFiles does not follow
// symbolic links and reads at most 16 KiB per file. Errors never carry
// file contents.
//
// Every write (Save, and through the same WriteGate the memory tools, the
// team sync client's pull and the background agents) is checked against
// its memory root with one symbolic-link resolver, and on the real disk
// performed through an os.Root opened on that root, so a link swapped in
// after the check cannot redirect it. Content for a team directory is
// scanned for credentials first.
package memdir
