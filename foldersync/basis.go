package foldersync

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"time"

	"github.com/spf13/afero"
)

// basisVersion is the version of the basis file's shape.
const basisVersion = 1

// basis is what the folder and the remote last agreed on, saved after
// every applied batch so a round cut short loses nothing.
type basis struct {
	V int `json:"v"`
	// Store and Generation are the remote's identity and the generation
	// the last round saw (Listing.Store, Listing.Generation).
	Store      string `json:"store,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	// Entries maps a path to the entry both sides agreed on (its Sum and
	// the driver's Ref).
	Entries map[string]Entry `json:"entries"`
	// Deletes are local files missing from the folder, waiting for
	// corroboration before the remote deletes them.
	Deletes map[string]pendingDelete `json:"deletes,omitempty"`
	// Stat is the stat cache: a file whose size and modification time
	// are these, recorded at least racyWindow after it was last modified,
	// has this Sum without being read.
	Stat map[string]statEntry `json:"stat,omitempty"`
	// Listing is the last complete listing of the remote (for
	// Remote.List's prev: a driver answers Unchanged against its Tag).
	Listing *savedListing `json:"listing,omitempty"`
	// Resetting: Agreed.Resetting.
	Resetting bool `json:"resetting,omitempty"`
	// InFlight: Agreed.InFlight.
	InFlight map[string]InFlight `json:"in_flight,omitempty"`
	// Diverged: Agreed.Diverged.
	Diverged map[string]Divergence `json:"diverged,omitempty"`
	// fresh says no basis file was there, or none that could be read.
	fresh bool
	// damaged is why the basis file there could not be read (it is kept
	// aside before the round saves).
	damaged *BasisError
}

// pendingDelete is a local deletion not yet sent: when it was first
// missed (Unix ms) and on how many walks.
type pendingDelete struct {
	FirstMissedMS int64 `json:"first_missed_ms"`
	Walks         int   `json:"walks"`
}

// statEntry is one file as the last walk that read it saw it.
type statEntry struct {
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	SeenNS  int64  `json:"seen_ns"`
	Sum     string `json:"sum"`
}

// savedListing is a Listing as the basis keeps it.
type savedListing struct {
	Store      string           `json:"store,omitempty"`
	Generation int64            `json:"generation,omitempty"`
	Tag        string           `json:"tag,omitempty"`
	Entries    map[string]Entry `json:"entries"`
}

func newBasis() *basis {
	return &basis{V: basisVersion, Entries: map[string]Entry{}, Deletes: map[string]pendingDelete{}, Stat: map[string]statEntry{}}
}

// BasisError reports a basis file that exists but cannot be read as one.
// Written by a newer version, it stops the round, which changes nothing:
// move the file away to start from an empty basis (a first sync, which
// deletes nothing on either side). Damaged, it is kept aside and the
// round rebuilds the basis (Result.BasisDamaged).
type BasisError struct {
	Path string
	Err  error
	// KeptAt is where a damaged basis was kept aside ("" when the round
	// stopped instead).
	KeptAt string
	// FromPrevious says the round went on from the basis' copy
	// (prevSuffix); otherwise it rebuilt the basis from what both sides
	// hold.
	FromPrevious bool
	// newer: written by a newer version.
	newer bool
}

func (e *BasisError) Error() string {
	if e.KeptAt != "" {
		if e.FromPrevious {
			return fmt.Sprintf("foldersync: the basis %s could not be read (%v); it was kept at %s and the round went on from its copy", e.Path, e.Err, e.KeptAt)
		}
		return fmt.Sprintf("foldersync: the basis %s could not be read (%v); it was kept at %s and rebuilt from what both sides hold: nothing was deleted, and a file that differs kept its local version", e.Path, e.Err, e.KeptAt)
	}
	return fmt.Sprintf("foldersync: the basis %s cannot be read (%v); nothing was changed: move it away to sync again from scratch (nothing is deleted on a first sync)", e.Path, e.Err)
}

func (e *BasisError) Unwrap() error { return e.Err }

// prevSuffix names the copy of the basis kept beside it: the fallback of
// a basis damaged since it was saved.
const prevSuffix = ".prev"

// readBasis reads the basis; a missing one is an empty basis. A damaged
// one (a torn write, a hand edit) is read from its copy (prevSuffix),
// written after it by every save (a run killed between the two leaves
// it one save behind). Without a readable copy the basis is rebuilt from
// what both sides hold, as a first sync, which deletes nothing. A basis
// of a newer version stops the round.
func readBasis(fsys afero.Fs, path string) (*basis, error) {
	b, err := readBasisFile(fsys, path)
	if err == nil && b != nil {
		return b, nil
	}
	var be *BasisError
	if err != nil && (!errors.As(err, &be) || be.newer) {
		return nil, err
	}
	prev, perr := readBasisFile(fsys, path+prevSuffix)
	if perr != nil && errors.As(perr, &be) && be.newer {
		return nil, perr
	}
	if prev == nil || perr != nil {
		prev = newBasis()
		prev.fresh = true
	}
	if err != nil {
		prev.damaged = err.(*BasisError)
		prev.damaged.FromPrevious = !prev.fresh
	}
	return prev, nil
}

// readBasisFile reads one basis file: nil without an error when there is
// none.
func readBasisFile(fsys afero.Fs, path string) (*basis, error) {
	raw, err := afero.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &BasisError{Path: path, Err: err}
	}
	var shape struct {
		V int `json:"v"`
	}
	if json.Unmarshal(raw, &shape) == nil && shape.V > basisVersion {
		// A newer version's basis is not this one's to rebuild.
		return nil, &BasisError{Path: path, Err: fmt.Errorf("version %d, this one reads %d", shape.V, basisVersion), newer: true}
	}
	b := newBasis()
	if err := json.Unmarshal(raw, b); err != nil || b.V != basisVersion {
		if err == nil {
			err = fmt.Errorf("version %d, this one reads %d", b.V, basisVersion)
		}
		return nil, &BasisError{Path: path, Err: err}
	}
	if b.Entries == nil {
		b.Entries = map[string]Entry{}
	}
	if b.Deletes == nil {
		b.Deletes = map[string]pendingDelete{}
	}
	if b.Stat == nil {
		b.Stat = map[string]statEntry{}
	}
	return b, nil
}

func (b *basis) listing() Listing {
	if b.Listing == nil {
		return Listing{}
	}
	// Not a copy: Remote.List reads prev, and never changes it.
	return Listing{Store: b.Listing.Store, Generation: b.Listing.Generation, Tag: b.Listing.Tag, Entries: b.Listing.Entries}
}

func (b *basis) marshal() []byte {
	out, _ := json.Marshal(b)
	return out
}

// seed starts a basis from what a mirror kept.
func (b *basis) seed(a Agreed) {
	b.Store, b.Generation, b.Resetting = a.Store, a.Generation, a.Resetting
	b.InFlight, b.Diverged = maps.Clone(a.InFlight), maps.Clone(a.Diverged)
	maps.Copy(b.Entries, a.Entries)
	for p, d := range a.Pending {
		b.Deletes[p] = pendingDelete{FirstMissedMS: d.FirstMissed.UnixMilli(), Walks: d.Walks}
	}
}

// agreed is the part of the basis a mirror keeps.
func (b *basis) agreed() Agreed {
	a := Agreed{Store: b.Store, Generation: b.Generation, Entries: maps.Clone(b.Entries), Pending: map[string]PendingDelete{}, Resetting: b.Resetting,
		InFlight: maps.Clone(b.InFlight), Diverged: maps.Clone(b.Diverged)}
	for p, d := range b.Deletes {
		a.Pending[p] = PendingDelete{FirstMissed: time.UnixMilli(d.FirstMissedMS), Walks: d.Walks}
	}
	return a
}

// holds reports whether the basis agrees with what a mirror seeds: the
// same remote identity and generation, the same entries (sums and refs;
// a mirror may keep no authors) and the same pending deletions.
func (b *basis) holds(a Agreed) bool {
	if b.Store != a.Store || b.Generation != a.Generation || b.Resetting != a.Resetting ||
		len(b.Entries) != len(a.Entries) || len(b.Deletes) != len(a.Pending) ||
		!maps.Equal(b.InFlight, a.InFlight) || !maps.Equal(b.Diverged, a.Diverged) ||
		!maps.EqualFunc(b.Entries, a.Entries, func(o, e Entry) bool { return o.Sum == e.Sum && o.Ref == e.Ref }) {
		return false
	}
	for p := range a.Pending {
		if _, ok := b.Deletes[p]; !ok {
			return false
		}
	}
	return true
}
