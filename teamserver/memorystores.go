package teamserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"golang.org/x/text/unicode/norm"
)

// Memory stores are the second protocol of the server: Anthropic's Memory
// Stores API (stores of path-keyed memories, sha256 preconditions, kept
// versions), so the official SDKs and Claude Code's store client work
// against a self-hosted server. They live in the same database as the team
// sync repos, in tables of their own (sqlStore), or in memory beside them
// (memoryStore, memorystores_mem.go).

// Limits of the Memory Stores API, as the hosted service sets them.
const (
	// maxMemoryContentBytes bounds one memory's content.
	maxMemoryContentBytes = 102_400
	// maxMemoryPathBytes and maxMemoryPathSegments bound a memory's path.
	maxMemoryPathBytes    = 1024
	maxMemoryPathSegments = 20
	// maxStoreNameChars and maxStoreDescriptionChars bound a store's name
	// and description.
	maxStoreNameChars        = 255
	maxStoreDescriptionChars = 1024
	// DefaultMaxStores bounds the stores of one organization.
	DefaultMaxStores = 100
	// DefaultMaxStoreMemories and DefaultMaxStoreBytes bound one store.
	DefaultMaxStoreMemories = 10_000
	DefaultMaxStoreBytes    = 100 << 20
)

// StoreIDPrefix starts every store ID, as on the hosted API; a token
// limited to stores names them by ID (NewToken).
const StoreIDPrefix = "memstore_"

// ID prefixes of memories and versions.
const (
	memoryIDPrefix  = "mem_"
	versionIDPrefix = "memver_"
)

// Version operations.
const (
	OpCreated  = "created"
	OpModified = "modified"
	OpDeleted  = "deleted"
)

// MemStore is one memory store: a named container of memories that
// belongs to one organization (the tenant of the tokens that reach it).
type MemStore struct {
	ID          string
	Tenant      string
	Name        string
	Description string
	Metadata    map[string]string
	Created     time.Time
	Updated     time.Time
	// Archived is when the store was archived (zero: it is not). Archiving
	// is for good: an archived store refuses new and changed memories and
	// changes to itself (400 "cannot modify archived resource"), and still
	// lets its memories be read and deleted, its versions redacted and
	// itself deleted, as the hosted API does.
	Archived time.Time
	// Generation moves on with every change to the store's memories, so a
	// listing read at one generation can be served again until the next.
	Generation int64
	// Memories and Bytes count the store's memories and their content.
	Memories int64
	Bytes    int64
	// Seq numbers the organization's stores in the order they were made.
	Seq int64
}

// Memory is one document of a store, keyed by its path.
type Memory struct {
	ID        string
	StoreID   string
	Path      string
	Content   string
	SHA256    string // hex, of Content
	Size      int64
	Created   time.Time
	Updated   time.Time
	VersionID string // the version that wrote it as it is
	// Metadata is the memory's own keys and values (at most 16; never
	// nil once read).
	Metadata map[string]string
}

// Actor is who made a change: the token's holder, and how the change
// reached the server (its door, session, origin and, for a reviewed
// change, the person who approved it; empty when not recorded).
type Actor struct {
	// Type is "user_actor" for a person's token, "session_actor" for an
	// agent's token that named its session, "api_actor" otherwise (and
	// for every version written before the kinds were recorded).
	Type string
	// ID is the token's name, or "token:" and the first 12 hex digits of
	// its hash.
	ID string
	teamwire.Provenance
}

// MemoryVersion is one change to a memory, kept after the memory is
// deleted. A redacted version keeps who and when, and loses its path and
// content.
type MemoryVersion struct {
	ID        string
	StoreID   string
	MemoryID  string
	Seq       int64 // order of the change within its store
	Operation string
	Path      string
	Content   string
	SHA256    string
	Size      int64
	Created   time.Time
	By        Actor
	// Redacted is when the version was redacted (zero: it was not).
	Redacted   time.Time
	RedactedBy Actor
}

// APIError is a refusal of the Memory Stores API: the HTTP status, the
// error type of the body ("invalid_request_error", "not_found_error",
// "memory_precondition_failed_error", "memory_path_conflict_error", ...)
// and its message. A path conflict names the memory that holds the path.
type APIError struct {
	Status          int
	Type            string
	Message         string
	ConflictingPath string
	ConflictingID   string
	// Code is the error's code (error_code), when it has one.
	Code string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("memory stores: %s (%d): %s", e.Type, e.Status, e.Message)
}

func invalid(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: fmt.Sprintf(format, args...)}
}

func notFound(what string) *APIError {
	return &APIError{Status: http.StatusNotFound, Type: "not_found_error", Message: what + " not found"}
}

// The exact messages Claude Code's store client classifies.
const (
	msgContentTooLarge = "content must be at most 102400 bytes"
	msgArchived        = "cannot modify archived resource"
	msgStoreFullCount  = "memory store has reached its memory limit"
	msgStoreFullBytes  = "memory store has reached its size limit"
	msgSecret          = "memory content appears to contain a credential or API key; remove it before writing. If the credential is real, rotate it."
)

var errArchived = &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: msgArchived}

func preconditionFailed(m Memory) *APIError {
	return &APIError{Status: http.StatusConflict, Type: storewire.PreconditionFailedType,
		Message: "the memory's content_sha256 does not match the precondition; read it again and retry"}
}

func pathConflict(m Memory) *APIError {
	return &APIError{Status: http.StatusConflict, Type: storewire.PathConflictType,
		Message: "another memory already has this path", ConflictingPath: m.Path, ConflictingID: m.ID}
}

// folderConflict refuses a path that is a folder of another memory's path,
// or has another memory's path as a folder: the two could not both be
// files on a disk, so no client could sync the store. It names the
// memory in the way.
func folderConflict(m Memory) *APIError {
	return &APIError{Status: http.StatusConflict, Type: storewire.FolderConflictType,
		Message:         "another memory's path is a folder of this path, or lies below it as a folder; both cannot be files on a disk",
		ConflictingPath: m.Path, ConflictingID: m.ID}
}

// validateMemoryPath checks a memory path by the API's rules: it starts
// with "/", is at most 1,024 bytes and 20 segments, has no empty, "." or
// ".." segment, no control or format character (nor U+2028 and U+2029),
// and is valid UTF-8 in NFC. The error is an *APIError with the message
// the hosted service gives.
func validateMemoryPath(p string) error {
	switch {
	case p == "" || !strings.HasPrefix(p, "/"):
		return invalid("path must be absolute (start with /)")
	case len(p) > maxMemoryPathBytes:
		return invalid("path must be at most 1024 bytes")
	case !utf8.ValidString(p):
		return invalid("path must be valid UTF-8")
	}
	if synctext.CheckName(p) != nil {
		return invalid("path must not contain control or format characters")
	}
	if strings.Contains(p, "\\") {
		return invalid("path must not contain a backslash (a folder's separator on Windows)")
	}
	if r, ok := teamwire.Lookalike(p); ok {
		return invalid("path must not contain %U, which looks like a slash, a backslash or a dot", r)
	}
	segs := strings.Split(p[1:], "/")
	if len(segs) > maxMemoryPathSegments {
		return invalid("path must be at most 20 segments deep")
	}
	for _, s := range segs {
		switch s {
		case ".", "..":
			return invalid("path must not contain . or .. segments")
		case "":
			return invalid("path must not contain empty segments")
		}
	}
	if !norm.NFC.IsNormalString(p) {
		return invalid("path must be NFC-normalized")
	}
	return nil
}

// validatePathPrefix checks a listing's path_prefix: empty (the whole
// store), or "/" and whole segments ending in "/".
func validatePathPrefix(p string) error {
	if p == "" || p == "/" {
		return nil
	}
	if !strings.HasSuffix(p, "/") {
		return invalid("path_prefix must end with /")
	}
	return validateMemoryPath(strings.TrimSuffix(p, "/"))
}

func validateContent(c string) error {
	if len(c) > maxMemoryContentBytes {
		return invalid(msgContentTooLarge)
	}
	if err := synctext.CheckContent([]byte(c)); err != nil {
		if err.(*synctext.Error).Reason == synctext.ReasonNUL {
			return invalid("content must not contain a NUL character")
		}
		return invalid("content must be valid UTF-8")
	}
	return nil
}

func validateStoreFields(name, description *string, metadata map[string]string) error {
	if name != nil && (*name == "" || utf8.RuneCountInString(*name) > maxStoreNameChars) {
		return invalid("name must be 1 to 255 characters")
	}
	if description != nil && utf8.RuneCountInString(*description) > maxStoreDescriptionChars {
		return invalid("description must be at most 1024 characters")
	}
	return validateMetadata(metadata)
}

// validateMetadata refuses metadata no store keeps: more than 16 keys, a
// key of 0 or over 64 bytes, a value over 512 bytes, a control character.
func validateMetadata(metadata map[string]string) error {
	if len(metadata) > 16 {
		return invalid("metadata may hold at most 16 keys")
	}
	for k, v := range metadata {
		if k == "" || len(k) > 64 || len(v) > 512 {
			return invalid("metadata keys must be 1 to 64 bytes and values at most 512 bytes")
		}
		if strings.ContainsFunc(k+v, unicode.IsControl) {
			return invalid("metadata keys and values may not hold control characters")
		}
	}
	return nil
}

func contentSHA256(c string) string {
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:])
}

var idEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// newID returns prefix and 26 random characters of [0-9a-v].
func newID(prefix string) string {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return prefix + idEncoding.EncodeToString(raw[:])
}
