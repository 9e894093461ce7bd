package teamserver

import "github.com/agentmem-sdk/agentmem/internal/teamwire"

// Provenance is where a write came from: its door, session and origin.
// Change, Revision, Proposal, PutRequest and Actor embed it, so a store
// written outside this module can fill it in.
type Provenance = teamwire.Provenance
