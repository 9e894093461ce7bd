package teammem

import "github.com/agentmem-sdk/agentmem/internal/teamwire"

// The team protocol's views that a Client returns, named here so a host
// can spell them; their JSON shape is the wire format in SPEC.md.
type (
	// HistoryView is a memory's past versions (Client.History).
	HistoryView = teamwire.HistoryView
	// RevisionView is one past version with its content (Client.Revision).
	RevisionView = teamwire.RevisionView
	// LogEntry is one change in a repo's log (Client.Log).
	LogEntry = teamwire.LogEntry
	// Attribution is who last wrote a memory, by door and session (SyncState.Authors).
	Attribution = teamwire.Attribution
)
