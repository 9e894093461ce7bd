package storesync

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// The two manifest files Claude Code keeps in a mount's folder.
const (
	manifestName = memdir.StoreManifestName
	basisName    = ".memory-sync-basis"
)

// manifest is ".memory-sync": which store the folder follows.
type manifest struct {
	V         int    `json:"v"`
	Partition string `json:"partition"`
}

// basis is ".memory-sync-basis": what the folder and the store last
// agreed on, and the local deletions waiting to be confirmed.
type basis struct {
	Partition string
	// Entries maps a store path ("/deploy.md") to the memory's ID and the
	// sha256 both sides had.
	Entries map[string]basisEntry
	// Deletes are local files missing from the folder, by store path:
	// when they were first missed (Unix ms) and on how many walks.
	Deletes map[string]pendingDelete
	// Held are local files the store did not know while the basis could
	// not be trusted: kept here, not pushed as deletions elsewhere.
	Held map[string]string
}

// basisEntry is one memory both sides agreed on.
type basisEntry struct {
	ID     string
	SHA256 string
}

// pendingDelete is a local deletion not yet sent.
type pendingDelete struct {
	FirstMissedMS int64
	Walks         int
}

// basisJSON is the file's own shape: tuples, as Claude Code writes them.
type basisJSON struct {
	V                 int               `json:"v"`
	Partition         string            `json:"partition"`
	Entries           [][3]string       `json:"entries"`
	Deletes           []json.RawMessage `json:"deletes"`
	Held              [][2]string       `json:"held,omitempty"`
	EntriesWereOnDisk bool              `json:"entriesWereOnDisk"`
}

// ForeignDirError reports a mount folder that holds files but no
// manifest, or another store's manifest: syncing it could mix two
// stores, so the mount is not synced until the folder is moved away.
type ForeignDirError struct {
	Dir       string
	Partition string // the other store, when the manifest names one
}

func (e *ForeignDirError) Error() string {
	if e.Partition != "" {
		return fmt.Sprintf("storesync: %s follows another store (%s); remove or rename the folder to sync this one", e.Dir, e.Partition)
	}
	return fmt.Sprintf("storesync: %s already holds files and no %s manifest; remove or rename the folder, then sync again", e.Dir, manifestName)
}

// checkMountDir refuses a folder that belongs to another store, or holds
// files without a manifest; an empty or missing folder is fine.
func checkMountDir(fsys afero.Fs, dir, partition string, user bool) error {
	raw, err := afero.ReadFile(fsys, filepath.Join(dir, manifestName))
	switch {
	case err == nil:
		var m manifest
		if json.Unmarshal(raw, &m) != nil || m.Partition != partition {
			return &ForeignDirError{Dir: dir, Partition: m.Partition}
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if user {
		return nil // the auto-memory folder of a user store is never empty
	}
	entries, err := afero.ReadDir(fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			return &ForeignDirError{Dir: dir}
		}
	}
	return nil
}

func marshalManifest(partition string) []byte {
	out, _ := json.Marshal(manifest{V: 1, Partition: partition})
	return out
}

// readBasis reads the basis; a missing or unreadable one is an empty
// basis (a first sync: nothing is deleted on either side).
func readBasis(fsys afero.Fs, dir, partition string) basis {
	b := basis{Partition: partition, Entries: map[string]basisEntry{}, Deletes: map[string]pendingDelete{}, Held: map[string]string{}}
	raw, err := afero.ReadFile(fsys, filepath.Join(dir, basisName))
	if err != nil {
		return b
	}
	var j basisJSON
	if json.Unmarshal(raw, &j) != nil || j.V != 1 || j.Partition != partition {
		return b
	}
	for _, e := range j.Entries {
		b.Entries[e[0]] = basisEntry{ID: e[1], SHA256: e[2]}
	}
	for _, d := range j.Deletes {
		var t []json.RawMessage
		var p string
		var pd pendingDelete
		if json.Unmarshal(d, &t) != nil || len(t) != 3 || json.Unmarshal(t[0], &p) != nil ||
			json.Unmarshal(t[1], &pd.FirstMissedMS) != nil || json.Unmarshal(t[2], &pd.Walks) != nil {
			continue
		}
		b.Deletes[p] = pd
	}
	for _, h := range j.Held {
		b.Held[h[0]] = h[1]
	}
	return b
}

func (b basis) marshal() []byte {
	j := basisJSON{V: 1, Partition: b.Partition, Entries: [][3]string{}, Deletes: []json.RawMessage{}, EntriesWereOnDisk: true}
	for _, p := range slices.Sorted(maps.Keys(b.Entries)) {
		e := b.Entries[p]
		j.Entries = append(j.Entries, [3]string{p, e.ID, e.SHA256})
	}
	for _, p := range slices.Sorted(maps.Keys(b.Deletes)) {
		d := b.Deletes[p]
		raw, _ := json.Marshal([]any{p, d.FirstMissedMS, d.Walks})
		j.Deletes = append(j.Deletes, raw)
	}
	for _, p := range slices.Sorted(maps.Keys(b.Held)) {
		j.Held = append(j.Held, [2]string{p, b.Held[p]})
	}
	out, _ := json.Marshal(j)
	return out
}
