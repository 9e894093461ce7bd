// Package console is the web console of the memory server: pages a
// person reads in a browser to see what the team's agents remember, in
// the repos (team memory sync) and the memory stores their token
// reaches, sort and filter them, compare versions side by side, restore
// one and delete memories (one or several at once), and decide the
// changes agents' tokens proposed under a review policy (approve, or
// reject with a reason, one or several at once) and set that policy.
//
// A Console wraps the server's *teamserver.Handler and is served beside
// it, under a prefix (DefaultPrefix, "/console"); `agentmem team serve`
// mounts it unless started with --console=false. Pages are rendered on
// the server with html/template from embedded templates and a style
// sheet; every action is a plain link or form and works without
// JavaScript (one small embedded script only adds a keyboard shortcut).
//
// The console holds no data and no rules of its own: it reads and
// writes through the handler, in process, as the signed-in token, so
// the grants, the screens, the limits and the history of the protocols
// apply to a person's restore or delete exactly as to a client's write,
// and the log names the token (door "console"). Review decisions and
// policies go through the handler's review methods (Handler.Proposals,
// Proposal, Approve, Reject, SetPolicy), for proposals of the repos and
// stores the token reaches only.
//
// # Security
//
//   - Sign-in: a token of the server's token file, checked by
//     Handler.Authenticate (the same lookup and the same limit of failed
//     attempts per address as the protocols). Whether a token may sign in
//     at all is decided in one place (maySignIn): only a person's token
//     (TokenGrant kind "person"), since a signed-in token may approve,
//     reject and set review policies.
//   - Session: a random 256-bit ID in a cookie that is HttpOnly,
//     SameSite=Strict, Secure when the request came over TLS (or through
//     a proxy that sets X-Forwarded-Proto: https), limited to
//     the console's path and expiring (Options.SessionTTL); the session
//     table is held in memory on the server, with the token, which never
//     reaches the browser again. Signing out drops the session at once.
//   - Forms: every POST carries a CSRF token (the session's; before
//     sign-in, one bound to a cookie) and passes net/http's cross-origin
//     protection (Sec-Fetch-Site and Origin must be the console's own).
//     Changes happen only by POST: a restore, a delete and an approval
//     each after a confirmation page, a rejection with its required
//     reason.
//   - Output: every value is escaped by html/template; memory Markdown is
//     rendered with raw HTML dropped and then sanitized (no script, no
//     event handler, no link but http, https and mailto). Every page
//     carries a Content-Security-Policy without inline script or style,
//     frame-ancestors 'none', X-Frame-Options DENY and nosniff, and is
//     not cached. Pages are never compressed, since each carries the
//     session's CSRF token beside text a visitor chooses (the BREACH
//     attack); only the static files, which hold no secret, are gzipped.
//   - Reach: a page of a repo or store that the token's grant does not
//     name answers 404, the same whether or not it exists; lists show
//     only what the grant names (TokenGrant.Allows, AllowsStore).
//
// # Concurrency
//
// A Console is safe for concurrent use.
package console
