package teammem

import (
	"path/filepath"
	"sort"

	"github.com/agentmem-sdk/agentmem/teammem/wire"
)

// fileProvenance returns the provenance headers a file is pushed with
// that differ from the client's own: the door, session and origin of the
// write that left its content, as the memory directory recorded it
// (memdir.Dir.Provenance), or nil when it recorded none (a file written
// by hand, by the host's own tools, or changed since) or what it recorded
// is not valid on the wire.
func (c *Client) fileProvenance(f localFile) map[string]string {
	if c.team == nil {
		return nil
	}
	p, ok := c.team.Provenance(filepath.Join(c.teamDir, filepath.FromSlash(f.key)), []byte(f.content))
	if !ok {
		return nil
	}
	if _, err := wire.ParseProvenance(p.Door, p.Session, p.Origin); err != nil || p.Door == c.cfg.Door && p.Session == "" && p.Origin == "" {
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

// provenanceBatches packs uploads into PUT batches (batches) of files
// that share their provenance headers, since a request carries one set:
// the files with none first, so the deletions that ride with the first
// batch go with the client's own door; with deletions and no such file,
// the first batch is empty. Each batch's headers come beside it (nil:
// the client's own).
func (c *Client) provenanceBatches(uploads []localFile, deletes bool, limit int) ([][]localFile, []map[string]string) {
	groups := map[string][]localFile{}
	heads := map[string]map[string]string{}
	for _, f := range uploads {
		h := c.fileProvenance(f)
		k := h[wire.DoorHeader] + "\x00" + h[wire.SessionHeader] + "\x00" + h[wire.OriginHeader]
		groups[k] = append(groups[k], f)
		heads[k] = h
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the files with no headers of their own ("\x00\x00") first
	var bs [][]localFile
	var hs []map[string]string
	if deletes && (len(keys) == 0 || heads[keys[0]] != nil) {
		bs, hs = append(bs, nil), append(hs, nil)
	}
	for _, k := range keys {
		for _, b := range batches(groups[k], limit) {
			bs, hs = append(bs, b), append(hs, heads[k])
		}
	}
	return bs, hs
}
