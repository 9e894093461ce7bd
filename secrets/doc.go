// Package secrets finds credentials in text: 36 rules written from the
// providers' documented token formats (AWS, GCP, GitHub, GitLab, Slack,
// Anthropic, OpenAI, Stripe, private keys and more; RuleIDs lists them).
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
