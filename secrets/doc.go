// Package secrets finds credentials in text: 66 rules written from the
// providers' documented token formats and the shapes credentials take
// (RuleIDs lists them), the rule ids Claude Code 2.1.328 uses.
//
// 52 high-confidence rules match one provider's token format (AWS, GCP,
// GitHub, GitLab, Slack, Anthropic, OpenAI, Stripe, Supabase and more),
// and the private-key check matches a PEM private key: these block a
// write into shared or synced memory. 13 low-confidence rules match
// shapes (a URL with a password, a password assignment, a bearer header,
// a JWT, a masked value whose rest shows): ordinary prose hits them too,
// so they redact but never block. Scan, First and Check use the
// high-confidence rules; ScanAll and Redact use all of them.
//
// Scan and First find every candidate in one pass over the text (the
// rules' keywords indexed by their first two bytes), then run only the
// rules whose keyword occurs.
//
// Every write into team memory and every push runs it: memdir's write
// gate refuses content headed for a team directory (or, with
// memdir.DirOptions.Synced, for private memory synced to an account) that holds
// a match, and the sync client skips such files.
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
