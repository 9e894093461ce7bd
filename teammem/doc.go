// Package teammem guards the team memory directory, <auto memory>/team/:
// the one directory that a model, a teammate's sync and the host's own
// tools all write into, and therefore the security boundary of agentmem.
//
// What the package covers, by the name to look for:
//
//   - Where it is and whether it is on: TeamMemPath, TeamMemoryEnabled,
//     TeamMemoryActive, IsTeamMemPath, IsTeamMemFile; the repo key from
//     a git remote: ParseRepoRemote, RepoFromGitConfig.
//   - Keys and paths: SanitizeKey (seven checks), ValidateTeamMemKey for
//     sync keys, ValidateTeamMemWritePath for absolute paths a model
//     chose; both return a *PathTraversalError when they refuse.
//   - Tool calls: ToolCall (fill it from any LLM API), ToolDetector with
//     IsTeamMemorySearch, IsTeamMemoryWriteOrEdit and
//     AppendTeamMemorySummaryParts.
//   - The check to put in front of a host's Write, Edit, MultiEdit and
//     NotebookEdit tools is memdir.Dir.CheckToolCall, on the team view
//     of the memory directory (Dir.Sub(memdir.TeamDirName)).
//   - A confined filesystem for the real disk: package
//     github.com/agentmem-sdk/agentmem/rootfs.
//   - Sync with a server (package teamserver is the reference one):
//     Client with Pull, Push, Sync and Hashes over a caller-owned
//     SyncState (three-way base; StatePath, Options.StateFile):
//     each is one round of the sync engine (package foldersync) through
//     the team driver, Remote, and returns the engine's foldersync.Result
//     (pulled, pushed, deleted on either side, conflicts, skips with the
//     engine's or the driver's reasons, holds); SyncState.Reset says why
//     a round took the server for a replaced store, Remote.Traffic counts
//     requests and bytes. SyncError with an ErrorClass; WaitForChange
//     and Remote.LongPoll (the long-poll); Client.StartWatcher, the
//     engine's watcher (foldersync.Watcher: Notify, Paused, Resume,
//     Close) running the client's Sync. The wire format is in package
//     wire (wire.EntryChecksum, wire.RepoChecksum, the JSON bodies,
//     wire.LimitsView).
//
// # Sync semantics
//
// Pull, Push, Sync and the watcher all decide each key three ways: the
// local file, the server's entry and the base (the checksum both sides
// last agreed on, kept in SyncState and, with Options.StateFile, on
// disk beside the team directory). See SyncState for the rules: a change
// on one side goes to the other, deletions of unchanged copies propagate
// (unless KeepDeleted), an edit beats a deletion, and when both sides
// edited a key, Sync puts the server's version in the file and keeps the
// local one under ConflictsDirName (Result.Conflicts), while Pull and Push
// leave the key as it is (foldersync.SkipConflict): Pull never overwrites a
// local edit, Push never a teammate's. Without a base nothing is deleted.
//
// # Data safety
//
// A local file is deleted only on evidence: the server's tombstone for
// the key, never its mere absence (a key the server lost without a record
// is pushed back). Every store has an identity (wire.StoreIDHeader) that the
// client keeps, with the repo version, in SyncState: another identity, a
// repo the server no longer has, or an older version (a replaced store, a
// restored backup) makes the round forget the base, delete nothing, keep
// every local memory (a differing key keeps the local version; the
// server's is kept aside, Conflict.LocalKept) and push what the server
// lacks, reported in Result.BasisReset and, with the reason, in
// SyncState.Reset. A round that would delete more
// than foldersync.MassDeleteThreshold of the tracked memories on one side deletes
// none of them there (Result.Held) unless Options.AllowMassDelete.
// With Options.History every pull that writes or deletes takes a
// checkpoint first (Result.Checkpoint). Restore refuses a version that is
// a deletion (*DeletionVersionError).
//
// Each key passes ValidateTeamMemKey before it is written; entries over
// wire.MaxEntryBytes, entries holding a secret and keys the local filesystem
// cannot hold (foldersync.SkipPathClash) are skipped and reported while
// the rest are written, through memdir's WriteGate. Push reads regular
// .md and .txt files not starting with "." (skipping those over
// wire.MaxEntryBytes and those holding a secret), packs the changes sorted by
// key into PUT bodies of at most wire.MaxPutBodyBytes, each conditional on the
// server state the decision was made from; a 412 starts the round again
// (at most ConflictRetries times); a 413 teaches the entry limit and
// later pushes leave out new keys beyond it. Network errors, timeouts,
// 429 and 5xx are retried up to three times with capped exponential
// backoff, jitter and Retry-After; 401 and 403 never. A reply that
// reaches MaxReplyBytes makes the client ask the server's limits view
// once and raise the cap to what the server can hold.
//
// The watcher (Client.StartWatcher) syncs at start, after local changes
// (debounced), at least every Interval, at once when the server's
// long-poll (Remote.LongPoll, its Wake) reports a change, and again with
// backoff after a failure until the change lands; a permanent failure
// (SyncError.Permanent) pauses it until Resume or a file's removal;
// Close flushes. Its file selection is the engine's.
//
// # Errors
//
//   - *SyncError: a sync request failed; Class (auth, forbidden, timeout,
//     network, parse, conflict, too_many_entries, unknown), Status, the
//     server's Code, and Permanent() for failures that retrying cannot fix.
//     ErrNoToken and ErrNoRepo: the client is not configured.
//   - *PathTraversalError: a key or path was refused; Reason says why
//     (memdir.ReasonEscapes, memdir.ReasonSymlinkEscape, memdir.ReasonDangling, memdir.ReasonLoop,
//     memdir.ReasonEncoded, memdir.ReasonUnicode, ...). memdir.ReasonUnverifiable means the
//     filesystem failed while checking and the path was refused to be safe
//     (fail closed). The message holds at most the offending key.
//   - *secrets.Error (errors.Is secrets.ErrFound): a write into the team directory
//     carries a credential; Label names its kind, never its value.
//
// # Security
//
// Threat model. Text in the team directory comes from people and models
// the host does not control: a teammate's agent, the sync server, a model
// that read a hostile web page. An attacker can choose keys, file paths in
// tool calls, and file contents, and may be able to place symbolic links
// in the team directory (through a shared checkout or a malicious sync
// peer). The goals: nothing is read or written outside the team directory
// through it, and no credential is written into it, since every
// contributor and the server can read it.
//
// The layers, in the order a write meets them:
//
//  1. SanitizeKey refuses NUL bytes, percent-encoded traversal (also
//     double-encoded and overlong UTF-8 forms), Unicode compatibility
//     forms that fold to "." "/" or "\" under NFKC (fullwidth "．．／",
//     "‥", "﹒"), backslashes and absolute keys, before a key is joined
//     to any path.
//  2. Lexical containment: the cleaned path must lie strictly below the
//     team directory plus a separator, so a sibling such as team-evil/ or
//     a key of ".." never passes (the bug of string-prefix checks such as
//     afero.BasePathFs).
//  3. Symlink-aware containment (agentmem's one resolver, shared with
//     memdir's WriteGate and the memory tools): the existing part of the
//     path is walked one component at a time with Lstat and Readlink; a
//     link that leads out (absolute or relative, directly or through a
//     chain or a linked middle directory), a dangling link (a write would
//     create its target wherever it points), a loop and a link that
//     cannot be read are refused. Any unexpected error refuses too.
//  4. The secret scan on every Write, Edit, MultiEdit and NotebookEdit
//     (memdir.Dir.CheckToolCall, on the content as it would be written) and, in the
//     sync client, before every push and on every pulled entry.
//  5. On a real disk, the pull writes through memdir's WriteGate, which
//     opens an os.Root on the team directory: every open is resolved
//     inside the root by the kernel, so a link swapped in after the check
//     cannot redirect the write.
//
// What a host must still do:
//
//   - Route every file-writing tool call its model makes through
//     memdir.Dir.CheckToolCall, which also refuses paths that name the team
//     directory and leave it.
//   - On a real disk, perform its own writes through memdir.WriteGate (or
//     package rootfs): a check and a later write are separate steps, and
//     only the confined write closes the gap between them.
//   - Treat team memory as untrusted input to the model: it is shared text,
//     not instructions from the user.
//   - Keep the scanner's limits in mind: it knows 53 documented token
//     formats; a password in prose or an unknown token format passes.
//
// # Concurrency
//
// All functions are safe for concurrent use; secrets.Scanner and
// ToolDetector hold only immutable data once built.
package teammem
