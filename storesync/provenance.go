package storesync

import (
	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// connFor returns the connection to push l with: the client's own, or
// one that sends the door, session and origin of the write that left l's
// content, as the memory directory recorded it (memdir.Dir.Provenance).
// A session or origin the record leaves empty is the client's; a record
// not valid on the wire is ignored.
func (c *Client) connFor(l *localFile) *conn {
	if c.mount == nil {
		return c.conn
	}
	p, ok := c.mount.Provenance(l.abs, []byte(l.content))
	if !ok {
		return c.conn
	}
	prov := c.conn.prov
	prov.Door = p.Door
	if p.Session != "" {
		prov.Session = p.Session
	}
	if p.Origin != "" {
		prov.Origin = p.Origin
	}
	if _, err := wire.ParseProvenance(prov.Door, prov.Session, prov.Origin); err != nil {
		return c.conn
	}
	cn := *c.conn
	cn.prov = prov
	return &cn
}
