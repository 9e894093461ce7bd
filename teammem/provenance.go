package teammem

import (
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// provenanceHeaders returns the headers a batch of changes written
// through p is pushed with: the record laid over the client's own
// (wire.Provenance.Overlay), or nil for the client's own (no record, or
// one not valid on the wire).
func provenanceHeaders(p memdir.Provenance, own ClientOptions) map[string]string {
	prov, ok := wire.Provenance{Door: own.Door, Session: own.Session, Origin: own.Origin}.Overlay(p.Door, p.Session, p.Origin)
	if !ok {
		return nil
	}
	h := map[string]string{wire.DoorHeader: prov.Door}
	if prov.Session != "" {
		h[wire.SessionHeader] = prov.Session
	}
	if prov.Origin != "" {
		h[wire.OriginHeader] = prov.Origin
	}
	return h
}
