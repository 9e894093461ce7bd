// Package wire holds the team memory sync protocol that client and server
// share (SPEC 2.4 and 2.5): the bodies, the error codes, the limits, the
// checksums and the syntax of a key. It knows nothing of files: package
// teammem is the client, package teamserver the reference server.
package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
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
)

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
	keys := make([]string, 0, len(entryChecksums))
	for k := range entryChecksums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
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
)

// KeyError says why a key was refused. Its message never holds the key.
type KeyError struct {
	Reason string
	Key    string
}

func (e *KeyError) Error() string { return "wire: " + e.Reason }

func keyErr(reason, key string) *KeyError { return &KeyError{Reason: reason, Key: key} }

// SanitizeKey runs the six checks every key passes before it is used: no
// NUL byte; no traversal once percent-decoded (up to three times, overlong
// UTF-8 forms included); no traversal once NFKC-folded (fullwidth dots and
// slashes); no backslash; not absolute; valid UTF-8 with no control or
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
