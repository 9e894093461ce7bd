// Package sessionmem keeps a running summary of the current session in a
// Markdown file, updated in the background by a model when the
// conversation has grown enough, so a host can compact its context with
// it and a resumed session knows where it was.
//
// The host creates a Summarizer per session and calls Observe after each
// main-thread model response with the context size and the messages. The
// rules, by the name to look for:
//
//   - Where: SummaryPath, <config home>/projects/<SanitizePath(cwd)>/<session
//     ID>/session-memory/summary.md; the directory is created with mode 0700
//     and the file exclusively with mode 0600 from the default template (ten
//     sections) or Options.Template.
//   - When (ShouldUpdate): the first update once the context reaches
//     10,000 tokens; then when it grew by 5,000 since the last update and
//     either 3 tool calls were made since or the last assistant turn made
//     none. The cursor moves to the last message when an update starts.
//     Sub-agents never update; updates are serialised (EventBusy).
//   - How: a forked agent (llm.RunAgent) whose only permitted call is Edit
//     on the summary (memtools.SessionPermission), prompted with
//     the default update prompt or Options.UpdatePrompt ({{currentNotes}} and
//     {{notesPath}} substituted in one pass), plus a reminder to condense
//     when a section is over 2,000 tokens or the file over 12,000
//     (EstimateTokens: chars/4).
//   - Waiting: WaitForUpdate polls for up to 15 s and does not wait for an
//     update that started more than 60 s ago.
//   - IsEmpty: only the template so far. SectionsForCompaction: the
//     sections cut at line boundaries to 8,000 characters each.
//   - Undo: with Options.History (a filehistory.Tracker) each update takes
//     a snapshot first (Event.Checkpoint) and tracks the summary in it.
//     The prompt holds the whole file, which counts as the agent's read
//     for read-before-write.
//
// A session costs one model run (a few calls, at most Options.MaxTurns) at
// 10,000 tokens and one per 5,000 tokens of growth after that.
//
// # Concurrency
//
// A Summarizer is safe for concurrent use. Each update runs in its own
// goroutine; Close cancels it and waits. Observers run under the
// Summarizer's lock and must not block or call it.
package sessionmem
