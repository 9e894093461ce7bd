// Package llm is agentmem's one way to run a language model: a small
// provider-neutral Model interface, the messages it exchanges, and
// RunAgent, the bounded tool-using loop that the background jobs
// (extraction, consolidation, session notes) run as a "forked agent".
//
// A host plugs in any model by implementing Model (or wrapping a function
// with ModelFunc); package llm/anthropic adapts the Anthropic Messages
// API, and llm/llmtest provides a scripted model for tests. Request.Purpose
// tags each call with the job that makes it so a host can route jobs to
// different models.
//
// RunAgent knows tools only as a name, a JSON schema and a function, and
// asks a PermissionFunc before every call; it knows nothing about memory.
// Package memtools supplies memory tools and the permission rules that
// confine them.
//
// # Errors
//
//   - *APIError: the provider refused the request; StatusCode and
//     Retryable tell what to do.
//   - ErrMaxTurns: the agent still wanted tools at its turn limit; the
//     partial Result is returned with it.
//   - ErrNoModel: RunAgent was given no model.
//   - context.Canceled / DeadlineExceeded: the run was cancelled.
//
// # Concurrency
//
// RunAgent runs everything in the calling goroutine and starts none of
// its own; several RunAgent calls may run at once with one Model if the
// Model is safe for concurrent use (llmtest.Model and the Anthropic
// adapter are).
package llm
