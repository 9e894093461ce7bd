// Package wire holds the team memory sync protocol that client and server
// share (SPEC 2.4 and 2.5): the bodies, the error codes, the limits, the
// checksums and the syntax of a key. It knows nothing of files: package
// teammem is the client, package teamserver the reference server.
package teamwire

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"golang.org/x/text/unicode/norm"
)

// DefaultSyncPath is the team memory endpoint, below the server's base URL.
const DefaultSyncPath = "/api/claude_code/team_memory"

// StoreIDHeader is the response header that names the server's store:
// an identity made once with the store (a database) and never changed.
// Every reply to an authenticated repo request carries it. A client that
// sees another identity than the one it last agreed with, or a repo
// version older than the one it saw, is talking to a store that was
// replaced or restored from a backup, and must not delete on its word.
const StoreIDHeader = "Agentmem-Store-Id"

// Sync limits shared by the client and the reference server.
const (
	// MaxEntryBytes is the largest entry (UTF-8 bytes) that is synced.
	MaxEntryBytes = 250_000
	// MaxPutBodyBytes is the largest PUT body the client sends.
	MaxPutBodyBytes = 200_000
)

// TeamMemoryData is the body of a successful GET.
type TeamMemoryData struct {
	OrganizationID string  `json:"organizationId"`
	Repo           string  `json:"repo"`
	Version        int64   `json:"version"`
	LastModified   string  `json:"lastModified"`
	Checksum       string  `json:"checksum"`
	Content        Content `json:"content"`
}

// Content holds the entries of a repo's team memory.
type Content struct {
	Entries        map[string]string `json:"entries"`
	EntryChecksums map[string]string `json:"entryChecksums"`
	// DeletedEntries are tombstones: key → deletion time in Unix ms.
	DeletedEntries map[string]int64 `json:"deletedEntries,omitempty"`
	// EntryAuthors say who wrote each entry as it is (agentmem's server;
	// other servers leave it out): the newest recorded write of the key.
	EntryAuthors map[string]Attribution `json:"entryAuthors,omitempty"`
}

// Attribution is who wrote a team entry as it is, when, and how.
type Attribution struct {
	Author string `json:"author"`
	Time   string `json:"time"`
	Provenance
}

// HashesView is the body of GET ...&view=hashes.
type HashesView struct {
	Version        int64             `json:"version"`
	Checksum       string            `json:"checksum"`
	EntryChecksums map[string]string `json:"entryChecksums"`
	DeletedEntries map[string]int64  `json:"deletedEntries,omitempty"`
}

// PutBody is the body of a PUT: an upsert of entries, and (only with
// deletion propagation, first batch only) keys to tombstone.
type PutBody struct {
	Entries        map[string]string `json:"entries"`
	SoftDeleteKeys []string          `json:"soft_delete_keys,omitempty"`
}

// PutResult is the body of a successful PUT.
type PutResult struct {
	Checksum     string `json:"checksum"`
	LastModified string `json:"lastModified"`
	Version      int64  `json:"version"`
	// InReview are the keys of the request the server kept as proposals
	// for a person to review (the repo's policy is "review" and the token
	// is an agent's): not written, not served to other clients. The
	// answer is then 202 Accepted, and the repo's checksum is unchanged.
	InReview []string `json:"in_review,omitempty"`
	// Rejected are the keys of the request whose very change a person
	// already rejected: nothing was kept (fix or remove them locally).
	// The answer is then 202 Accepted as well.
	Rejected []string `json:"rejected,omitempty"`
	// RejectedReasons give, by key of Rejected, the reason the person
	// wrote when they rejected it.
	RejectedReasons map[string]string `json:"rejected_reasons,omitempty"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo describes an error; no field repeats content or server paths.
type ErrorInfo struct {
	Type    string       `json:"type"`
	Message string       `json:"message"`
	Details ErrorDetails `json:"details"`
}

// ErrorDetails carries the machine-readable code and, for the entry
// limit, the numbers.
type ErrorDetails struct {
	ErrorCode       string `json:"error_code"`
	MaxEntries      int    `json:"max_entries,omitempty"`
	ReceivedEntries int    `json:"received_entries,omitempty"`
	// Keys are the keys that cannot coexist (team_memory_key_conflict).
	Keys []string `json:"keys,omitempty"`
}

// LimitsView is the body of GET ...&view=limits: the server's limits, so a
// client sizes its batches and its reply cap to them.
type LimitsView struct {
	MaxEntries    int   `json:"maxEntries"`
	MaxEntryBytes int   `json:"maxEntryBytes"`
	MaxBodyBytes  int64 `json:"maxBodyBytes"`
	MaxRepoBytes  int64 `json:"maxRepoBytes"`
}

// Error codes of the sync protocol.
const (
	CodeTooManyEntries   = "team_memory_too_many_entries"
	CodeBodyTooLarge     = "team_memory_body_too_large"
	CodeEntryTooLarge    = "team_memory_entry_too_large"
	CodeInvalidKey       = "team_memory_invalid_key"
	CodeInvalidRepo      = "team_memory_invalid_repo"
	CodeMalformedJSON    = "team_memory_malformed_json"
	CodeUnknownField     = "team_memory_unknown_field" // a body field the route does not take
	CodeConflict         = "team_memory_conflict"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeKeyConflict      = "team_memory_key_conflict"
	CodeKeyNotNFC        = "team_memory_key_not_nfc"
	// CodeInvalidText: a string of the body is not valid UTF-8, or holds
	// a NUL or a lone surrogate escape: JSON would not carry it exactly,
	// or a store could not hold it.
	CodeInvalidText  = "team_memory_invalid_text"
	CodeInvalidView  = "team_memory_invalid_view"
	CodeTooManyRepos = "team_memory_too_many_repos"
	CodeNoRevision   = "team_memory_no_revision"
	CodeRateLimited  = "rate_limited"
	// CodeAuthRateLimited answers a client address that failed
	// authentication too often (429 with Retry-After).
	CodeAuthRateLimited = "auth_rate_limited"
	CodeOverloaded      = "overloaded"
	// CodeInvisibleCharacter, CodeInjection and CodeIndexLink refuse an
	// entry (or a Memory Stores memory) that a screen of package screen
	// refuses: an invisible or direction-control character, a
	// high-confidence prompt injection, an index line with a foreign
	// link. The message names the rule, the line, the byte offset and the
	// code point; Details.Keys names the entry.
	CodeInvisibleCharacter = "invisible_character"
	CodeInjection          = "prompt_injection"
	CodeIndexLink          = "index_link"
	// CodeSecret refuses an entry that holds a credential (the sync
	// clients' high-confidence rules, package secrets): the message names
	// the kind of credential, never the credential; Details.Keys names
	// the entry (400).
	CodeSecret = "secret"
	// CodeInvalidProvenance refuses a request whose DoorHeader,
	// SessionHeader or OriginHeader is malformed (400).
	CodeInvalidProvenance = "invalid_provenance"
	// CodeReadOnly refuses a write to a repo or store whose review policy
	// is "read-only" (403).
	CodeReadOnly = "review_read_only"
	// CodeNotPerson refuses a review decision or a policy change by a
	// token that is not a person's (403).
	CodeNotPerson = "review_needs_person"
	// CodeTooManyProposals refuses a proposal past the pending limit of a
	// repo or store (429): reviewers must catch up first.
	CodeTooManyProposals = "review_too_many_proposals"
	// CodeProposalDecided refuses a decision on a proposal that is no
	// longer pending (409).
	CodeProposalDecided = "review_proposal_decided"
	// CodeNoProposal: no such proposal, or not one this token may see (404).
	CodeNoProposal = "review_no_proposal"
)

// Provenance headers: every client says which door a write came through
// and, when it knows them, the session and the origin of the content.
// The server records them with the token's name on every write it
// stores. A request without DoorHeader, or with a door the server does
// not know, is recorded as DoorHTTP; a malformed value is refused with
// CodeInvalidProvenance.
const (
	DoorHeader    = "X-Agentmem-Door"
	SessionHeader = "X-Agentmem-Session"
	OriginHeader  = "X-Agentmem-Origin"
)

// Doors a write can come through.
const (
	DoorCLI        = "cli"
	DoorMemoryTool = "memory-tool"
	// DoorFileTools is the model's file tools on memory (package
	// memtools: Write, Edit, MultiEdit).
	DoorFileTools      = "file-tools"
	DoorMCP            = "mcp"
	DoorExtraction     = "extraction"
	DoorConsolidation  = "consolidation"
	DoorSessionSummary = "session-summary"
	DoorSync           = "sync"
	DoorHTTP           = "http"
	DoorReview         = "review"
	DoorConsole        = "console"
	// DoorServer is the server's own writes (its redaction of credentials
	// stored before it refused them); no client can claim it.
	DoorServer = "server"
)

// Doors lists the doors a server records as sent.
var Doors = []string{DoorCLI, DoorMemoryTool, DoorFileTools, DoorMCP, DoorExtraction, DoorConsolidation, DoorSessionSummary, DoorSync, DoorHTTP, DoorReview, DoorConsole}

// Origins of a write's content: said by the user, inferred by the agent,
// derived from a tool's output, or from fetched content.
const (
	OriginUser       = "user"
	OriginAgent      = "agent"
	OriginToolOutput = "tool-output"
	OriginFetched    = "fetched"
	// OriginOtherAgent: written by another agent than the session's main
	// one (a sub-agent, a fork, a background query) on a host that holds
	// those for review (memdir.MainAgentOnlyPropose).
	OriginOtherAgent = "other-agent"
)

// UntrustedOrigin reports whether origin says the content came from
// input nobody vouched for (OriginToolOutput, OriginFetched) or from an
// agent its host holds for review (OriginOtherAgent): under the policy
// "review" such a write waits for a person whoever's token sends it.
func UntrustedOrigin(origin string) bool {
	return origin == OriginToolOutput || origin == OriginFetched || origin == OriginOtherAgent
}

// MaxSessionLength bounds SessionHeader.
const MaxSessionLength = 128

// ProvenanceError says which provenance header is malformed.
type ProvenanceError struct{ Header, Reason string }

func (e *ProvenanceError) Error() string { return "wire: header " + e.Header + " " + e.Reason }

// ParseProvenance validates the three provenance header values and
// returns them as the server records them: an empty or unknown door is
// DoorHTTP. A door must be 1 to 32 of [a-z0-9-]; a session 1 to
// MaxSessionLength of [A-Za-z0-9._:-]; an origin one of the Origin
// constants. Empty session and origin stay empty.
func ParseProvenance(door, session, origin string) (Provenance, error) {
	var p Provenance
	if door != "" && (len(door) > 32 || strings.Trim(door, "abcdefghijklmnopqrstuvwxyz0123456789-") != "") {
		return p, &ProvenanceError{Header: DoorHeader, Reason: "must be 1 to 32 characters of a-z, 0-9 and -"}
	}
	p.Door = DoorHTTP
	if slices.Contains(Doors, door) {
		p.Door = door
	}
	if session != "" {
		if len(session) > MaxSessionLength || strings.Trim(session, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") != "" {
			return p, &ProvenanceError{Header: SessionHeader, Reason: "must be 1 to 128 characters of A-Z, a-z, 0-9 and . _ : -"}
		}
		p.Session = session
	}
	switch origin {
	case "", OriginUser, OriginAgent, OriginToolOutput, OriginFetched, OriginOtherAgent:
		p.Origin = origin
	default:
		return p, &ProvenanceError{Header: OriginHeader, Reason: "must be user, agent, tool-output, fetched or other-agent"}
	}
	return p, nil
}

// Overlay returns p with the door, and the session and origin where
// given, of a write's own record: what a sync client sends for a file
// another writer left (p is the client's own). ok is false, and p is
// returned as it is, when the record names no door or is not valid on
// the wire.
func (p Provenance) Overlay(door, session, origin string) (out Provenance, ok bool) {
	if door == "" {
		return p, false
	}
	out = p
	out.Door = door
	if session != "" {
		out.Session = session
	}
	if origin != "" {
		out.Origin = origin
	}
	if _, err := ParseProvenance(out.Door, out.Session, out.Origin); err != nil {
		return p, false
	}
	return out, true
}

// EntryChecksum is "sha256:" + the hex SHA-256 of content's UTF-8 bytes.
func EntryChecksum(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// RepoChecksum is the checksum of a whole repo, used as its ETag: the
// SHA-256 of the entries sorted by key, each contributing its key, a NUL,
// its entry checksum and a newline; "sha256:" + hex. An empty repo has the
// checksum of the empty input.
func RepoChecksum(entryChecksums map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(entryChecksums)) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(entryChecksums[k]))
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// HistoryView is the body of GET ...&view=history&key=K: the key's
// recorded versions, newest first.
type HistoryView struct {
	Key      string           `json:"key"`
	Versions []HistoryVersion `json:"versions"`
}

// HistoryVersion is one recorded write of a key.
type HistoryVersion struct {
	Version  int64  `json:"version"`
	Checksum string `json:"checksum"`
	Author   string `json:"author"`
	Time     string `json:"time"`
	Deleted  bool   `json:"deleted"`
	Provenance
}

// Provenance says how a write reached the server, beside its author:
// the door it came through (DoorHeader), the session (SessionHeader),
// the origin of its content when known (OriginHeader), and the person
// who approved it when it was reviewed. Empty fields were not recorded
// (writes made before the server recorded them).
type Provenance struct {
	Door     string `json:"door,omitempty"`
	Session  string `json:"session,omitempty"`
	Origin   string `json:"origin,omitempty"`
	Reviewer string `json:"reviewer,omitempty"`
}

// SetHeaders sets a request's provenance headers: the door always,
// the session and origin when set.
func (p Provenance) SetHeaders(h http.Header) {
	h.Set(DoorHeader, p.Door)
	if p.Session != "" {
		h.Set(SessionHeader, p.Session)
	}
	if p.Origin != "" {
		h.Set(OriginHeader, p.Origin)
	}
}

// RevisionView is the body of GET ...&view=history&key=K&version=V.
type RevisionView struct {
	Key     string `json:"key"`
	Version int64  `json:"version"`
	Content string `json:"content"`
	// Deleted reports that this version is the key's deletion (Content is
	// then empty and is not the memory's text).
	Deleted bool `json:"deleted,omitempty"`
}

// LogEntry is one accepted write in GET ...&view=log (a JSON array,
// newest first).
type LogEntry struct {
	Version int64    `json:"version"`
	Time    string   `json:"time"`
	Author  string   `json:"author"`
	Keys    []string `json:"keys"`
	// Ops says, for each of Keys, whether the write created, changed or
	// deleted it ("created", "changed", "deleted"); absent for a write a
	// server recorded before it kept them.
	Ops []string `json:"ops,omitempty"`
	Provenance
}

// MaxLongPoll is the longest wait a server grants per long-poll request.
const MaxLongPoll = 60 * time.Second

// Key limits beyond the five sanitizer checks: a key is a relative path of
// at most MaxKeyLength bytes, none of whose segments exceeds
// MaxKeySegmentLength bytes (the common filesystem name limit).
const (
	MaxKeyLength        = 1024
	MaxKeySegmentLength = 255
)

// Reasons a key is refused (KeyError.Reason). They read as the reasons of
// memdir.PathTraversalError, which teammem returns for them.
const (
	ReasonNUL       = "null byte in path"
	ReasonEncoded   = "percent-encoded traversal in key"
	ReasonUnicode   = "Unicode-normalized traversal in key"
	ReasonBackslash = "backslash in key"
	ReasonAbsolute  = "absolute key"
	ReasonTooLong   = "key too long"
	ReasonControl   = "control character or invalid UTF-8 in key"
	ReasonEscapes   = "path escapes the team memory directory"
	ReasonLookalike = "a character in key looks like a slash, a backslash or a dot"
)

// lookalikes are characters a reader takes for '/', '\' or '.' (Unicode
// TS #39's confusables of them, and the fullwidth and small forms): in a
// name they fake a folder, a way up or an extension.
var lookalikes = map[rune]bool{
	// '/'
	0x2044: true, 0x2215: true, 0x2571: true, 0x29F8: true, 0xFF0F: true, 0x1735: true, 0x2F03: true,
	0x3033: true, 0x31D3: true, 0x0337: true, 0x0338: true, 0x2CC6: true,
	// '\'
	0x2216: true, 0x29F5: true, 0x29F9: true, 0xFE68: true, 0xFF3C: true, 0x31D4: true, 0x2F02: true,
	// '.'
	0x2024: true, 0x2025: true, 0x2026: true, 0xFF0E: true, 0xFE52: true, 0x0701: true, 0x0702: true,
	0xA60E: true, 0x10A50: true,
}

// Lookalike returns the first character of name that looks like a slash,
// a backslash or a dot, if it holds one.
func Lookalike(name string) (rune, bool) {
	for _, r := range name {
		if lookalikes[r] {
			return r, true
		}
	}
	return 0, false
}

// KeyError says why a key was refused. Its message never holds the key.
type KeyError struct {
	Reason string
	Key    string
}

func (e *KeyError) Error() string { return "wire: " + e.Reason }

func keyErr(reason, key string) *KeyError { return &KeyError{Reason: reason, Key: key} }

// SanitizeKey runs the seven checks every key passes before it is used: no
// NUL byte; no traversal once percent-decoded (up to three times, overlong
// UTF-8 forms included); no traversal once NFKC-folded (fullwidth dots and
// slashes); no backslash, nor a character that looks like a slash, a
// backslash or a dot (Lookalike); not absolute; valid UTF-8 with no control or
// format character (the rule of a memory store's path, synctext.CheckName).
func SanitizeKey(key string) error {
	if strings.IndexByte(key, 0) >= 0 {
		return keyErr(ReasonNUL, key)
	}
	decoded := key
	for range 3 {
		next, err := url.PathUnescape(decoded)
		if err != nil || next == decoded {
			break
		}
		decoded = next
		// Invalid UTF-8 after decoding is an overlong form ("%c0%ae" for '.').
		if strings.Contains(decoded, "..") || strings.ContainsAny(decoded, "/\\\x00") || !utf8.ValidString(decoded) {
			return keyErr(ReasonEncoded, key)
		}
	}
	if folded := norm.NFKC.String(key); folded != key {
		if strings.Contains(folded, "..") || strings.ContainsAny(folded, "/\\\x00") {
			return keyErr(ReasonUnicode, key)
		}
	}
	if strings.IndexByte(key, '\\') >= 0 {
		return keyErr(ReasonBackslash, key)
	}
	if _, ok := Lookalike(key); ok {
		return keyErr(ReasonLookalike, key)
	}
	if strings.HasPrefix(key, "/") {
		return keyErr(ReasonAbsolute, key)
	}
	if synctext.CheckName(key) != nil {
		return keyErr(ReasonControl, key)
	}
	return nil
}

// ValidateKeySyntax checks a sync key without a filesystem, as the sync
// server does for every key it receives: SanitizeKey, the length limits,
// and a clean relative "/"-separated path (no empty, "." or ".." segment,
// no trailing "/"). It returns a *KeyError.
func ValidateKeySyntax(key string) error {
	if err := SanitizeKey(key); err != nil {
		return err
	}
	if key == "" || len(key) > MaxKeyLength {
		return keyErr(ReasonTooLong, key)
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return keyErr(ReasonEscapes, key)
		case len(seg) > MaxKeySegmentLength:
			return keyErr(ReasonTooLong, key)
		}
	}
	return nil
}

// ReviewPath is the review endpoint of the server, beside the sync
// path: policies (ReviewPath+"/policy") and proposals
// (ReviewPath+"/proposals", ".../proposals/ID", ".../ID/approve",
// ".../ID/reject") of a repo (?repo=owner/name) or a memory store
// (?store=ID).
const ReviewPath = "/v1/review"

// PolicyView is the body of the policy endpoint (GET answers it, PUT
// sends {"policy": ...}).
type PolicyView struct {
	Kind   string `json:"kind"` // "repo" or "store"
	Target string `json:"target"`
	Policy string `json:"policy"`
}

// ProposalView is one proposal of the review endpoint.
type ProposalView struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"` // "repo" or "store"
	Target   string `json:"target"`
	Key      string `json:"key"`
	MemoryID string `json:"memory_id,omitempty"`
	// Op is "put" or "delete" (repos), "created", "modified" or
	// "deleted" (stores).
	Op      string `json:"op"`
	Author  string `json:"author"`
	Created string `json:"created"`
	Status  string `json:"status"`
	// Content is the proposed content (only when one proposal is shown).
	Content   *string `json:"content,omitempty"`
	DecidedBy string  `json:"decided_by,omitempty"`
	Decided   string  `json:"decided,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	// Screened is the screens' finding on the content (a high-confidence
	// injection) that would have refused it outside review.
	Screened string `json:"screened,omitempty"`
	Provenance
}

// ProposalDetail is the body of GET .../proposals/ID: the proposal with
// its content, and what the server holds now at its key, to diff
// against.
type ProposalDetail struct {
	Proposal ProposalView `json:"proposal"`
	Current  CurrentView  `json:"current"`
}

// CurrentView is what a repo key or a store path holds now.
type CurrentView struct {
	Exists  bool   `json:"exists"`
	Content string `json:"content"`
}

// ProposalList is the body of GET .../proposals.
type ProposalList struct {
	Proposals []ProposalView `json:"proposals"`
	// Total counts every proposal the list's filter matches; Offset is
	// where this page starts, NextOffset where the next one does (absent
	// on the last page): ?offset=N&limit=M.
	Total      int  `json:"total"`
	Offset     int  `json:"offset"`
	NextOffset *int `json:"next_offset,omitempty"`
}

// DefaultProposalPage and MaxProposalPage are a proposal list's page
// sizes: by default, and at most (?limit=).
const (
	DefaultProposalPage = 100
	MaxProposalPage     = 500
)

// RejectBody is the body of POST .../proposals/ID/reject.
type RejectBody struct {
	Reason string `json:"reason"`
}

// MaxReasonLength bounds a rejection's reason (bytes).
const MaxReasonLength = 2000
