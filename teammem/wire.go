package teammem

import "github.com/agentmem/agentmem/teammem/wire"

// The sync protocol lives in package wire, shared with the server; these
// names keep the client's API whole.

type (
	Content        = wire.Content
	ErrorBody      = wire.ErrorBody
	ErrorDetails   = wire.ErrorDetails
	ErrorInfo      = wire.ErrorInfo
	HashesView     = wire.HashesView
	HistoryVersion = wire.HistoryVersion
	HistoryView    = wire.HistoryView
	LimitsView     = wire.LimitsView
	LogEntry       = wire.LogEntry
	PutBody        = wire.PutBody
	PutResult      = wire.PutResult
	RevisionView   = wire.RevisionView
	TeamMemoryData = wire.TeamMemoryData
)

const (
	DefaultSyncPath      = wire.DefaultSyncPath
	MaxEntryBytes        = wire.MaxEntryBytes
	MaxPutBodyBytes      = wire.MaxPutBodyBytes
	MaxLongPoll          = wire.MaxLongPoll
	MaxKeyLength         = wire.MaxKeyLength
	MaxKeySegmentLength  = wire.MaxKeySegmentLength
	CodeTooManyEntries   = wire.CodeTooManyEntries
	CodeBodyTooLarge     = wire.CodeBodyTooLarge
	CodeEntryTooLarge    = wire.CodeEntryTooLarge
	CodeInvalidKey       = wire.CodeInvalidKey
	CodeInvalidRepo      = wire.CodeInvalidRepo
	CodeMalformedJSON    = wire.CodeMalformedJSON
	CodeConflict         = wire.CodeConflict
	CodeUnauthorized     = wire.CodeUnauthorized
	CodeForbidden        = wire.CodeForbidden
	CodeMethodNotAllowed = wire.CodeMethodNotAllowed
	CodeKeyConflict      = wire.CodeKeyConflict
	CodeKeyNotNFC        = wire.CodeKeyNotNFC
	CodeInvalidView      = wire.CodeInvalidView
	CodeTooManyRepos     = wire.CodeTooManyRepos
	CodeNoRevision       = wire.CodeNoRevision
	CodeRateLimited      = wire.CodeRateLimited
	CodeOverloaded       = wire.CodeOverloaded
)

// EntryChecksum is wire.EntryChecksum.
func EntryChecksum(content string) string { return wire.EntryChecksum(content) }

// RepoChecksum is wire.RepoChecksum.
func RepoChecksum(entryChecksums map[string]string) string { return wire.RepoChecksum(entryChecksums) }
