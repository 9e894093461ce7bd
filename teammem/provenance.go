package teammem

import (
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// provenanceHeaders returns the headers a batch of changes written
// through p is pushed with: the record laid over the client's own
// (teamwire.Provenance.Overlay), or nil for the client's own (no record, or
// one not valid on the wire).
func provenanceHeaders(p memdir.Provenance, own Options) map[string]string {
	prov, ok := teamwire.Provenance{Door: own.Door, Session: own.Session, Origin: own.Origin}.Overlay(p.Door, p.Session, p.Origin)
	if !ok {
		return nil
	}
	h := map[string]string{teamwire.DoorHeader: prov.Door}
	if prov.Session != "" {
		h[teamwire.SessionHeader] = prov.Session
	}
	if prov.Origin != "" {
		h[teamwire.OriginHeader] = prov.Origin
	}
	return h
}
