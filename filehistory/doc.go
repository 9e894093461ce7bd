// Package filehistory records what a session's tools did to files so that
// every change can be reviewed and undone.
//
// A Tracker belongs to one session. The host calls MakeSnapshot(messageID)
// before it handles each user prompt and TrackEdit(path) before every write
// a tool makes; the first TrackEdit of a file in a turn backs the file up as
// it was before the turn touched it. Rewind(messageID) puts every tracked
// file back as it was at that snapshot: changed files get their content and
// mode back, files that did not exist then are deleted. DryRun reports the
// same diff statistics without touching anything.
//
// Backups live at <config home>/file-history/<session>/<first 16 hex digits
// of sha256(absolute path)>@v<N>, one file per version, with the original's
// mode. A file that did not exist is recorded as a version without a backup
// file. At most Options.MaxSnapshots (100) snapshots are kept; the oldest go first.
//
// # Surviving a restart
//
// Each snapshot, and each later update of it, is handed to Options.Journal
// as one JSON line of type "file-history-snapshot" in Claude Code's
// transcript format (updates carry "isSnapshotUpdate": true). A host that
// appends those lines to the session transcript rebuilds the tracker after a
// restart with Restore, passing the lines back in file order.
//
// A tracker without a transcript, such as one per background job, is
// opened with Open: its lines go to snapshots.jsonl beside its backups and
// are restored from there, which is what `agentmem history` and `agentmem
// rewind` read. Touched lists what the turn after a snapshot changed. A
// session Claude Code recorded, which has no journal, is opened from its
// transcript: snapshot lines and 2.1.328's file-history-delta lines, whose
// keys are relative to the project with each file's realParentDir.
//
// # Read before write
//
// ReadState remembers what one agent read and wrote (LRU, 100 files /
// 25 MiB). CheckWrite refuses a write to an existing file the agent has
// not read (ErrNotRead; replacing a file needs a whole read) or that no
// longer holds what it read or last wrote (ErrModifiedSinceRead); call it
// under the lock the write then holds, as memtools does. Changes lists
// the files the agent wrote that someone else changed since.
//
// # Concurrency
//
// A Tracker and a ReadState are safe for concurrent use; a tracker's
// calls are serialised. One process at a time may write a history's
// journal; any number may read it.
//
// # Security
//
// Paths must be absolute. The tracker copies what it is asked to track and
// writes only to tracked paths and to its own backup directory; confining
// which paths a tool may write is the job of the host's write gate (see
// memdir.WriteGate), which should run before TrackEdit.
package filehistory
