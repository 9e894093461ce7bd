package teammem

import (
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// provenanceHeaders returns the headers a batch of changes written
// through p is pushed with, where they differ from the client's own
// (nil: the client's own; so is a record not valid on the wire).
func provenanceHeaders(p memdir.Provenance, own ClientOptions) map[string]string {
	if p.Door == "" || p.Door == own.Door && p.Session == "" && p.Origin == "" {
		return nil
	}
	if _, err := wire.ParseProvenance(p.Door, p.Session, p.Origin); err != nil {
		return nil
	}
	h := map[string]string{wire.DoorHeader: p.Door}
	if p.Session != "" {
		h[wire.SessionHeader] = p.Session
	}
	if p.Origin != "" {
		h[wire.OriginHeader] = p.Origin
	}
	return h
}
