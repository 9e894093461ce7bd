// Package server is the reference team memory sync server: an
// http.Handler that speaks the protocol of package teammem's client
// (GET with ETag and If-None-Match, the hashes view, conditional PUT
// upserts, tombstones, structured errors), over a TeamStore.
//
// Beyond the base protocol it serves the limits view, the long-poll
// (view=hashes&wait=N), each key's history and a write log
// (view=history, view=log; restore = a conditional PUT of old content,
// authored by the token's name), /healthz and /readyz, and measurements
// through Options.Metrics (module teamserver/prommetrics exports them
// to Prometheus).
//
// Every read is one snapshot (the version, checksum and entries of a
// reply belong together); a full GET streams entries from the store, so
// memory per request stays near one buffer; the hashes view is cached per
// repo and version. Bounds: entries and bytes per repo and request,
// repos per organization (MaxRepos), tombstones and history (Retention),
// requests per token (RatePerToken: 429 with Retry-After), connections
// (LimitListener), and the store's pool; a store that cannot take a
// request in time answers 503 with Retry-After, never 500.
//
// The same handler serves Anthropic's Memory Stores API (internal/storewire's StoresPath,
// and Claude Code's route CodeStorePrefix): stores, memories with sha256
// preconditions, versions and the NDJSON export, over a store's
// MemoryStores methods (memorystores*.go). A token reaches the stores its
// grant names (TokenGrant.Stores), by x-api-key or bearer.
//
// Every write it stores records its provenance beside the token's name:
// the door, session and origin the client sends (wire.DoorHeader,
// SessionHeader, OriginHeader; validated, an absent or unknown door is
// "http"), in the team history and log and on memory-store versions
// (created_by in the API's shapes, and a provenance object). A review
// policy per repo and per store (Reviews; PolicyOpen, PolicyReview,
// PolicyReadOnly) keeps an agent's token's writes as proposals that no
// other client is served until a person's token approves them (the
// endpoints under wire.ReviewPath; Handler.Policy, SetPolicy, Proposals,
// Proposal, Approve and Reject for a Go caller such as a console).
//
// Stores: NewMemoryStore for tests and throwaway servers, and
// NewSQLStore, one implementation for SQL databases over database/sql
// (with an SQLDialect); both return a Store, which has every protocol,
// and the SQL store also reports its pool (PoolStats). The drivers live in modules of their own, so this package
// compiles none: teamserver/sqlite opens it on one local file through
// a pure-Go SQLite (no cgo), the default of `agentmem team serve`, and
// teamserver/postgres on PostgreSQL for deployments that outgrow one
// machine, shared by several server processes (writes to one repo are
// serialised by a transaction-scoped advisory lock). All pass the suite
// in package storetest, which also checks that two conditional writes
// with the same If-Match never both succeed; another database implements
// TeamStore (and MemoryStores, Reviews, RepoLister for the other
// protocols and the console's repo list) and runs the same suites.
//
// # Security
//
//   - Authentication: bearer tokens, stored only as SHA-256 hashes in the
//     token file (TokenGrant, LoadTokens, NewToken). A missing or unknown
//     token gets 401. Failed authentications are limited per client
//     address (Options.AuthFailRate, AuthFailBurst): past them every
//     request from the address with a token that is not valid gets 429
//     (auth_rate_limited); a valid token is still served, so teammates
//     behind one NAT or proxy are not locked out by one wrong client.
//   - Authorisation: each token holds a tenant (its organizationId) and
//     repo patterns ("owner/name" or "owner/*"). A repo outside them gets
//     403, decided before the store is read, with the same body whether
//     or not the repo has data: nothing about other repos leaks. Tenants
//     never see each other's repos, even under the same name.
//   - Input: repo slugs must be owner/name; every key passes
//     wire.ValidateKeySyntax (no traversal, encoded or Unicode-folded
//     included), and one bad key refuses the whole request; entries over
//     MaxEntryBytes and bodies over MaxBodyBytes (enforced while reading)
//     get 413; malformed JSON gets 400. Content that the screens of
//     package screen refuse in shared memory (an invisible or
//     direction-control character, a high-confidence prompt injection, a
//     MEMORY.md line with a foreign link) gets 400 (invisible_character,
//     prompt_injection, index_link). Nothing of a refused request is
//     written. A token limited to some memory stores archives or deletes
//     them only with TokenGrant.Manage (403 store_not_managed).
//   - Output: error bodies carry a type, a message and a code, each at
//     most 256 characters, never content or server paths. Logs carry the
//     method, repo, tenant, status and duration, never contents or tokens;
//     the method and view of the log and the metrics come from a fixed
//     set, whatever a request sends. Every response carries
//     X-Content-Type-Options: nosniff.
//
// # Concurrency
//
// The handler and the stores are safe for concurrent use. On SQLite the
// SQL store writes through one connection in IMMEDIATE transactions with
// synchronous=FULL (an acknowledged write survives a crash; writers queue
// in the process rather than in the busy timeout; several processes may
// share the file) and reads on a pool beside it. On PostgreSQL it uses a
// bounded pool and REPEATABLE READ read transactions.
package teamserver
