// Package transcript keeps session transcripts: save a conversation, list
// and search past sessions, resume one with its message chain rebuilt, and
// fork it. JSONLStore reads and writes Claude Code's own layout
// (<config home>/projects/<SanitizePath(project)>/<session id>.jsonl, one
// JSON object per line), so a host can resume, search and consolidate the
// sessions a user had in Claude Code, and Claude Code can read the ones a
// host recorded.
//
// What the package covers, by the name to look for:
//
//   - Where transcripts live: ProjectDir, FindProjectDir (long paths whose
//     hashed suffix differs between builds), JSONLStore.Path and
//     SubagentPath.
//   - Writing: Store.Append (batched, a uuid never written twice, the file
//     created 0600 with its first message, its directory 0700), Flush,
//     Close (re-appends the last prompt, title and tag so they stay in
//     the tail listing reads), SetTitle, SetTag; MessageEntry.Encode
//     builds lines in Claude Code's field order; Recorder
//     records a host's own llm.Messages in one call per turn, each turn
//     closed by a last-prompt line naming its tip.
//     Every line keeps the fields and entry types this package does not
//     model (Entry.Raw), so a copy through the store is byte for byte.
//   - Reading: ParseLine and ParseAll (torn and malformed lines skipped),
//     Store.Load, Store.List (only the first and last 64 KiB of each file:
//     title, prompt, branch, tag, cwd, created and modified times; newest
//     first), Search (listing fields by substring, then message text by the
//     lexical index recall uses, with snippets).
//   - Resuming: Resume (the leaf the newest last-prompt line names, as
//     Claude Code follows it, else the newest; chain, parallel tool results, filters,
//     interruption, the synthetic messages of resume; files over 5 MiB
//     read from the last compact boundary), ToLLM, ContinueRecorder, and
//     JSONLStore.Fork.
//
// # Errors
//
// ErrNoSession: no transcript with that id. ErrInvalidSessionID: session
// ids are UUIDs (anything else could name a path).
//
// # Concurrency
//
// JSONLStore and Recorder are safe for concurrent use. Appends are
// buffered in memory until a batch fills, Flush or Close; a crash loses
// the buffer, never a written line (lines are appended whole, and a torn
// last line is skipped on read).
package transcript
