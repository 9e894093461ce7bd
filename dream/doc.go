// Package dream consolidates a memory directory in the background: now and
// then a forked agent reads the memories, the daily logs and narrow
// searches of recent session transcripts, merges duplicates, makes
// relative dates absolute, removes what newer facts contradict, and keeps
// MEMORY.md short.
//
// A host calls Dreamer.MaybeRun from a background goroutine, for example
// at session start. It runs only when every gate passes, cheapest first,
// and Outcome.Stopped names the one that did not:
//
//  1. StopDisabled, StopDailyLog, StopRemote, StopAutoMemoryOff;
//  2. StopTooSoon: less than MinHours (24) since the last consolidation;
//  3. StopThrottled: a session scan ran less than ScanThrottle (10 min)
//     ago (the timestamp is set before scanning, so a refused scan
//     throttles too);
//  4. StopFewSessions: fewer than MinSessions (5) sessions touched since
//     the last consolidation, other than the current one, as listed by
//     Options.Transcripts (a transcript.Store; by default Claude Code's
//     JSONL transcripts in <config home>/projects/<SanitizePath(original
//     cwd)>/), so any host that records its sessions passes it;
//  5. StopLocked: another process holds the Lock.
//
// The Lock is the file .consolidate-lock in the memory dir: its mtime is
// the last consolidation time and its body the holder's PID. It is held
// while stamped within an hour by a live process (liveness is injectable);
// a failed or cancelled run rolls it back to the previous time (or removes
// it). Force runs now, skipping gates 2 to 4 but not 1 or the lock.
//
// The agent runs under memtools.ExtractPermission: it may read the memory
// dir and the transcripts, and write only inside the memory dir (team
// writes pass the path and secret checks). A run costs one agent task of
// up to MaxTurns (30) model calls, at most once a day by default.
//
// With Options.History (a filehistory.Tracker) a run takes a snapshot
// before the agent writes (Outcome.Checkpoint) and tracks every file its
// tools change, so rewinding the tracker to it undoes the run. The tools
// apply read-before-write: the agent must read a memory before it edits
// or replaces it.
//
// ForceStaged runs the consolidation on a copy of the memory directory
// and returns a Stage: its Changes (added, changed, deleted files, with
// content before and after) are for review; Accept applies them through
// the write gate, all or none (ErrStageStale when the directory changed
// meanwhile; a checkpoint first with Options.History), and Discard drops
// them. Accepting leaves the directory as the same run in place would.
//
// # Concurrency
//
// A Dreamer is safe for concurrent use; MaybeRun and Force run in the
// caller's goroutine and start none. Several processes coordinate through
// the Lock.
package dream
