// Package secrets finds credentials in text: 53 rules written from the
// providers' documented token formats (AWS, GCP, GitHub, GitLab, Slack,
// Anthropic, OpenAI, Stripe, Supabase, private keys and more; RuleIDs
// lists them): the 52 rule ids Claude Code 2.1.328 blocks writes with
// (its high-confidence ones) and its private-key check. Its 13
// low-confidence rules, which only redact there, are not included.
//
// Scan and First find every candidate in one pass over the text (the
// rules' keywords indexed by their first two bytes), then run only the
// rules whose keyword occurs.
//
// Every write into team memory and every push runs it: memdir's write
// gate refuses content headed for a team directory that holds a match,
// and the sync client skips such files.
//
// A Match names the rule and a label for people ("github-pat",
// "GitHub PAT"), never the secret itself; Error is what a refused write
// returns (errors.Is ErrFound). Redact replaces each match with
// "[REDACTED]".
//
// # Concurrency
//
// A *Scanner is immutable after New and safe for concurrent use.
package secrets
