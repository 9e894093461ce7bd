package teammem

import (
	"context"

	"github.com/agentmem-sdk/agentmem/foldersync"
)

// stateMirror keeps the Client's state file in step with the sync
// engine's basis (a foldersync.BasisMirror).
type stateMirror struct{ c *Client }

// StateMirror returns the foldersync.BasisMirror of the client's state
// file (Options.StateFile): an engine running the team driver on a
// team directory this client synced starts from the base the client
// agreed on (nothing is taken for a deletion, pushed again or kept aside
// as a conflict), and every basis the engine saves is written back to
// the state file, so the client and the engine can take turns. A state
// file of a store found replaced or restored (a reset not yet settled)
// seeds nothing. Nil without a StateFile.
func (c *Client) StateMirror() foldersync.BasisMirror {
	if c.cfg.StateFile == "" {
		return nil
	}
	return stateMirror{c}
}

func (m stateMirror) Seed() (foldersync.Agreed, bool) {
	var st SyncState
	m.c.loadState(&st)
	if st.FileError != nil || st.Resetting || len(st.Base) == 0 {
		return foldersync.Agreed{}, false
	}
	a := foldersync.Agreed{Store: st.StoreID, Generation: st.Version, Entries: make(map[string]foldersync.Entry, len(st.Base))}
	for k, sum := range st.Base {
		a.Entries[k] = foldersync.Entry{Sum: sumHex(sum)}
	}
	return a, true
}

// Save writes a as the state file's base, store and version; the
// server's checksums and tag it held are dropped (the client's next run
// reads the repo in full), the rest it kept (the learned entry limit,
// the authors, the keys in review) stays.
func (m stateMirror) Save(_ context.Context, a foldersync.Agreed) error {
	var st SyncState
	m.c.loadState(&st) // an unreadable file is replaced
	st.Base = make(map[string]string, len(a.Entries))
	for k, e := range a.Entries {
		st.Base[k] = sumWire(e.Sum)
	}
	st.StoreID, st.Version, st.Resetting = a.Store, a.Generation, false
	st.ETag, st.ServerChecksums, st.Tombstones = "", nil, nil
	st.ServerHasContent = len(a.Entries) > 0
	return m.c.saveState(&st)
}
