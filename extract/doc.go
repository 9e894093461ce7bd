// Package extract saves what a conversation taught the agent: after each
// main-agent turn that ends with a final answer, a background "forked
// agent" (llm.RunAgent) reads the new messages and the list of existing
// memories and writes or updates topic files and MEMORY.md, using the
// memtools tools under memtools.ExtractPermission (writes only inside the
// auto-memory directory; team writes pass the path and secret checks).
//
// The rules, by the name to look for:
//
//   - Skips (Event Reason): SkipSubAgent, SkipDisabled, SkipRemote,
//     SkipNotFinal (the turn ended in a tool call), SkipNoNewMessages,
//     SkipTooShort (no new user message of 3 words),
//     SkipMainAgentWrote (the main agent wrote memory itself; the cursor
//     moves past it), SkipThrottled (Options.EveryNTurns).
//   - Cursor: the ID of the last message a successful run covered; a
//     failed run leaves it, so those messages are offered again.
//   - Coalescing: a turn that ends during a run is stashed (the latest
//     wins); one trailing run then covers only the messages after the
//     advanced cursor, without the throttle.
//   - Drain waits for the run and its trailing run (60 s soft limit) so a
//     host can call it before exiting; Close cancels and waits.
//
// # Undo
//
// With Options.History (a filehistory.Tracker) every run takes a snapshot
// before its tools write and tracks each file they change; the finished
// or failed Event names it in Checkpoint, and History.Rewind to it puts
// the memory directory back as it was before the run. The tools also
// apply read-before-write: a run that edits a memory it has not read is
// told to read it first.
//
// # Observability
//
// Every decision is an Event (skipped with a reason, coalesced, started,
// finished with the files written and token usage, failed with the
// error), sent to Options.Observer and logged through Options.Logger with
// an "event" attribute. Observers run with the Extractor's lock held, in
// order: they must not block or call the Extractor.
//
// # Concurrency
//
// An Extractor is safe for concurrent use; at most one run is in flight.
// It starts one goroutine per run chain and none outlives Close.
package extract
