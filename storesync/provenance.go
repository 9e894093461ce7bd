package storesync

import (
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// connFor returns the connection to send a change with: the client's
// own, or one that sends the door, session and origin of the write that
// left the change's content (foldersync.Change.Wrote, as the memory
// directory recorded it). A session or origin the record leaves empty is
// the client's; a record not valid on the wire is ignored.
func (r *Remote) connFor(wrote memdir.Provenance) *conn {
	if wrote.Door == "" {
		return r.conn
	}
	prov := r.conn.prov
	prov.Door = wrote.Door
	if wrote.Session != "" {
		prov.Session = wrote.Session
	}
	if wrote.Origin != "" {
		prov.Origin = wrote.Origin
	}
	if _, err := wire.ParseProvenance(prov.Door, prov.Session, prov.Origin); err != nil {
		return r.conn
	}
	cn := *r.conn
	cn.prov = prov
	return &cn
}
