// Package wire defines the Memory Stores protocol as it travels: the
// JSON of stores, memories, versions, listings and error bodies, the
// lines of the NDJSON export, the request bodies, the headers and the
// error types agentmem's server adds. The store client (package
// storesync) and the server (package teamserver) both speak it from
// here, so the two cannot drift apart.
//
// Field names are those of the Memory Stores API of Anthropic's API and
// SDKs; what agentmem adds (an export, a store's generation, provenance,
// a folder-conflict error) is named as such.
package storewire

import teamwire "github.com/agentmem-sdk/agentmem/internal/teamwire"

// Routes of the Memory Stores API. The public ones are those of
// Anthropic's API and SDKs; Claude Code's store client addresses one
// store by a path under CodeStorePrefix instead
// ("/v1/code/memory/<store>/memories...", the store named by its ID or
// its name) and reads the NDJSON export.
const (
	StoresPath      = "/v1/memory_stores"
	CodeStorePrefix = "/v1/code/memory/"
)

// Headers of a request on the public routes, as Anthropic's SDKs send
// them: the API key, the API version and the beta that turns the API on.
const (
	APIKeyHeader     = "x-api-key"
	VersionHeader    = "anthropic-version"
	APIVersion       = "2023-06-01"
	BetaHeader       = "anthropic-beta"
	Beta             = "agent-memory-2026-07-22"
	RequestIDHeader  = "request-id"
	RetryAfterHeader = "Retry-After"
)

// Object types: the "type" field of each body.
const (
	TypeStore         = "memory_store"
	TypeStoreDeleted  = "memory_store_deleted"
	TypeMemory        = "memory"
	TypeMemoryDeleted = "memory_deleted"
	TypePrefix        = "memory_prefix"
	TypeVersion       = "memory_version"
	TypeError         = "error"
	// ProposalType is the type of the body of a 202 answer to a memory
	// write kept for review.
	ProposalType = "memory_proposal"
)

// Error types of an error body. FolderConflictType is agentmem's own:
// the path is a folder of another memory's path, or lies below one
// (409), so the two could not both be files on a disk.
const (
	InvalidRequestType     = "invalid_request_error"
	AuthenticationType     = "authentication_error"
	PermissionType         = "permission_error"
	NotFoundType           = "not_found_error"
	RequestTooLargeType    = "request_too_large"
	RateLimitType          = "rate_limit_error"
	APIErrorType           = "api_error"
	OverloadedType         = "overloaded_error"
	PreconditionFailedType = "memory_precondition_failed_error"
	PathConflictType       = "memory_path_conflict_error"
	FolderConflictType     = "memory_path_folder_conflict_error"
)

// Store is a memory store.
type Store struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	CreatedAt   string            `json:"created_at"`
	UpdatedAt   string            `json:"updated_at"`
	ArchivedAt  *string           `json:"archived_at"`
}

// Deleted is the answer to the deletion of a store or a memory.
type Deleted struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Memory is one memory; Content is null under the basic view.
type Memory struct {
	Type            string  `json:"type"`
	ID              string  `json:"id"`
	MemoryStoreID   string  `json:"memory_store_id"`
	MemoryVersionID string  `json:"memory_version_id"`
	Path            string  `json:"path"`
	ContentSHA256   string  `json:"content_sha256"`
	ContentSize     int64   `json:"content_size_bytes"`
	CreatedAt       string  `json:"created_at"`
	UpdatedAt       string  `json:"updated_at"`
	Content         *string `json:"content"`
	// Metadata is the memory's own keys and values, when it has any.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Prefix is a folder rolled up by a listing's depth.
type Prefix struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// Page is one page of a listing. Data holds Store, Memory, Prefix or
// Version values; NextPage is null on the last page. Prefixes is
// Claude Code's route's list of folders (its Data holds memories only;
// always present there, even empty, and absent on the public routes).
type Page struct {
	Data     any     `json:"data"`
	NextPage *string `json:"next_page"`
	Prefixes *[]any  `json:"prefixes,omitempty"`
}

// Precondition makes a write conditional: {"type": "not_exists"} on a
// create, {"type": "content_sha256", "content_sha256": ...} on an
// update.
type Precondition struct {
	Type          string `json:"type"`
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// Precondition types.
const (
	PreconditionNotExists = "not_exists"
	PreconditionSHA256    = "content_sha256"
)

// CreateStore is the body of a store's creation.
type CreateStore struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// UpdateStore is the body of a store's update: fields left null are
// kept.
type UpdateStore struct {
	Name        *string           `json:"name,omitempty"`
	Description *string           `json:"description,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// CreateMemory is the body of a memory's creation.
type CreateMemory struct {
	Path         string            `json:"path"`
	Content      *string           `json:"content"`
	Precondition *Precondition     `json:"precondition,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
}

// UpdateMemory is the body of a memory's update: a new path, a new
// content or both.
type UpdateMemory struct {
	Path         *string       `json:"path,omitempty"`
	Content      *string       `json:"content,omitempty"`
	Precondition *Precondition `json:"precondition,omitempty"`
	// Metadata replaces the memory's metadata ({} clears it); null or
	// absent keeps it (so not omitempty: an empty map is sent as {}).
	Metadata map[string]string `json:"metadata"`
}

// Actor is who wrote or redacted a version: {"type": "api_actor",
// "api_key_id": ...}, {"type": "user_actor", "user_id": ...} or
// {"type": "session_actor", "session_id": ...}.
type Actor struct {
	Type      string `json:"type"`
	APIKeyID  string `json:"api_key_id,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
}

// Provenance is agentmem's record of how a version was written, beside
// created_by: the token's name (author), and the door, session, origin
// and reviewer of the team protocol's provenance (the same headers on
// both protocols). Fields not recorded are left out.
type Provenance struct {
	Author string `json:"author"`
	teamwire.Provenance
}

// Version is one version of a memory. A redacted version has no path
// and no content; a deleted one has no content, hash or size.
type Version struct {
	Type          string      `json:"type"`
	ID            string      `json:"id"`
	MemoryStoreID string      `json:"memory_store_id"`
	MemoryID      string      `json:"memory_id"`
	Operation     string      `json:"operation"`
	Path          *string     `json:"path"`
	Content       *string     `json:"content"`
	ContentSHA256 *string     `json:"content_sha256"`
	ContentSize   *int64      `json:"content_size_bytes"`
	CreatedAt     string      `json:"created_at"`
	CreatedBy     *Actor      `json:"created_by"`
	RedactedAt    *string     `json:"redacted_at"`
	RedactedBy    *Actor      `json:"redacted_by"`
	Provenance    *Provenance `json:"provenance,omitempty"`
}

// Proposal is the body of a 202: the write was kept for review, or a
// person already rejected this very change (Status "rejected", with the
// Reason).
type Proposal struct {
	Type          string  `json:"type"`
	ID            string  `json:"id"`
	Status        string  `json:"status"`
	MemoryStoreID string  `json:"memory_store_id"`
	MemoryID      *string `json:"memory_id"`
	Path          string  `json:"path"`
	Operation     string  `json:"operation"`
	CreatedAt     string  `json:"created_at"`
	Message       string  `json:"message"`
	Reason        string  `json:"reason,omitempty"`
}

// ProposalRejected is the Status of a proposal a person rejected.
const ProposalRejected = "rejected"

// ErrorBody is the body of every refusal: {"type": "error", "error":
// {...}}.
type ErrorBody struct {
	Type  string    `json:"type"`
	Error ErrorInfo `json:"error"`
}

// ErrorInfo says what went wrong: the error type, a message, agentmem's
// error code when it has one, and for a path conflict the memory that
// holds the path.
type ErrorInfo struct {
	Type            string `json:"type"`
	Message         string `json:"message"`
	ErrorCode       string `json:"error_code,omitempty"`
	ConflictingID   string `json:"conflicting_memory_id,omitempty"`
	ConflictingPath string `json:"conflicting_path,omitempty"`
}

// The lines of an export (GET .../memories/export): a StoreLine, an
// ExportMemory per memory (content left out under view=basic) and a
// CompleteLine with the count. An export without its complete line was
// cut short. Line tells them apart by Type.
const (
	LineStore    = "store"
	LineMemory   = "memory"
	LineMetadata = "memory_metadata"
	LineError    = "memory_error"
	LineComplete = "complete"
)

// StoreLine is an export's first line. The ID and the generation (which
// only grows, and goes back only when the database is restored from a
// backup) let a sync client tell a replaced or restored store from
// deletions; other servers may leave them out. View is "basic" when the
// export carries no content.
type StoreLine struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	Name       string `json:"name"`
	Generation *int64 `json:"generation"`
	View       string `json:"view,omitempty"`
}

// ExportMemory is one memory of an export.
type ExportMemory struct {
	Type          string  `json:"type"`
	ID            string  `json:"id"`
	Path          string  `json:"path"`
	ContentSHA256 string  `json:"content_sha256"`
	ContentSize   int64   `json:"content_size_bytes"`
	UpdatedAt     string  `json:"updated_at"`
	Content       *string `json:"content,omitempty"`
}

// CompleteLine ends a whole export.
type CompleteLine struct {
	Type        string `json:"type"`
	MemoryCount int    `json:"memory_count"`
	ErrorCount  int    `json:"error_count"`
}

// Line is any line of an export, as a reader decodes it before it looks
// at Type.
type Line struct {
	Type        string  `json:"type"`
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Generation  *int64  `json:"generation"`
	View        string  `json:"view"`
	Path        string  `json:"path"`
	ContentSHA  string  `json:"content_sha256"`
	Content     *string `json:"content"`
	UpdatedAt   string  `json:"updated_at"`
	MemoryCount int     `json:"memory_count"`
	ErrorCount  int     `json:"error_count"`
}
