// Package recall picks, for each user message, the few saved memories
// worth putting in front of the model, and applies the per-conversation
// rules for surfacing them.
//
// A Finder scans the memory directory (memdir.ScanMemoryFiles), drops
// memories already surfaced, and asks a Selector for up to five: a
// ModelSelector (a model with structured JSON output) or the
// LexicalSelector (BM25 over name, description and body with a tokenizer
// that splits code identifiers and handles Chinese, Japanese and Korean;
// no model needed, and the default; LexicalOptions sets its thresholds,
// tuned on testdata/recall/shop.json). With Prefilter set, a directory of
// more than 200 memories is narrowed to the lexically best 200 before the
// selector sees it, instead of only the newest. Names a selector invents
// are dropped. Find never fails: an error yields no memories and an Event
// that carries it, and every selection emits an Event with its candidate
// and selected counts.
//
// A Session wraps a Finder with the rules of one conversation: skip
// one-word messages, never surface a file twice or one the conversation
// already read (MarkRead), stop after 60 KiB, cut each file at 200 lines
// or 4,096 bytes with a note, and head each with a freshness line
// (memdir.MemoryHeaderLine). Reset it when the conversation is compacted.
// RecentTools computes the tools in active use from the messages.
//
// # Concurrency
//
// Finder, Session, LexicalSelector and Index are safe for concurrent use.
package recall
