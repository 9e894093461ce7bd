package storesync

import "github.com/agentmem-sdk/agentmem/memdir"

// connFor returns the connection to send a change with: the client's
// own, or one that sends the door, session and origin of the write that
// left the change's content (foldersync.Change.Wrote, as the memory
// directory recorded it), laid over the client's own (wire.Provenance.Overlay).
func (r *Remote) connFor(wrote memdir.Provenance) *conn {
	prov, ok := r.conn.prov.Overlay(wrote.Door, wrote.Session, wrote.Origin)
	if !ok {
		return r.conn
	}
	cn := *r.conn
	cn.prov = prov
	return &cn
}
