package teammem

import (
	"path/filepath"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// wrote returns how a file's content was written (door, session,
// origin), as the memory directory recorded it (memdir.Dir.Provenance),
// or the zero Provenance when it recorded none: a file written by hand,
// by the host's own tools, or changed since.
func (c *Client) wrote(f localFile) memdir.Provenance {
	if c.team == nil {
		return memdir.Provenance{}
	}
	p, _ := c.team.Provenance(filepath.Join(c.teamDir, filepath.FromSlash(f.key)), []byte(f.content))
	return p
}

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
