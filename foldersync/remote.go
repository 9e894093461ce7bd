// Package foldersync keeps a folder of memory files in step with a
// remote copy of it: one engine under both sync protocols (team sync's
// repo protocol and Memory Stores), each reached through a driver that
// implements Remote.
//
// A round walks the folder, lists the remote, decides each path against
// the basis (what both sides last agreed on) with one set of three-way
// rules, holds mass deletions, takes a checkpoint before it overwrites
// or deletes a local file, carries out the decisions on both sides and
// records the new basis as it goes, so a round cut short loses nothing
// and the next one finishes the work.
package foldersync

import (
	"context"
	"time"

	"github.com/agentmem-sdk/agentmem/memdir"
)

// Remote is the other side of a folder: a team repo, a memory store. A
// driver translates these calls into its protocol; every driver passes
// the conformance kit (package foldersync/remotetest).
//
// Paths are slash-separated, relative to the folder ("deploy.md",
// "ops/ci.md"), NFC, never starting with "/". Sums are lowercase hex
// SHA-256 of the content's bytes.
type Remote interface {
	// List reports what the remote holds now. prev is the listing the
	// last completed round saw (zero on a first round); a driver may use
	// its Tag to answer Unchanged without sending the entries again. prev
	// is the engine's: List reads it and never changes it.
	List(ctx context.Context, prev Listing) (Listing, error)
	// Get returns the content of the given paths as the remote holds it
	// now. A path the remote no longer holds is absent from the map.
	Get(ctx context.Context, paths []string) (map[string][]byte, error)
	// Deleted reports, for paths the basis tracks and the listing lacks,
	// those the remote has evidence were deleted (a tombstone, a deleted
	// version), with when. A path without evidence is one the remote lost
	// without a record; the engine pushes it back rather than delete it.
	Deleted(ctx context.Context, paths []string) (map[string]time.Time, error)
	// Apply carries out changes on the remote, each only if the remote
	// still holds what Change.Expect says. It returns one Outcome per
	// change, in any order. An error means the remote could not be
	// reached or refused the whole request; changes it reports applied
	// before the error stand.
	Apply(ctx context.Context, changes []Change) ([]Outcome, error)
	// Check reports why the protocol cannot carry a file exactly ("" when
	// it can): a name or bytes the remote would alter or refuse. Such a
	// file is skipped, left as it is, and never overwritten by a pull.
	Check(path string, content []byte) (reason string)
}

// Listing is what the remote holds at one moment.
type Listing struct {
	// Store is the remote's identity ("" when the remote does not name
	// one) and Generation a counter it moves forward on every change (0
	// when it has none). A different Store, or a Generation older than
	// the basis recorded, is a replaced or restored remote; nothing else
	// is (a memory deleted and made again is a delete and a create).
	Store      string
	Generation int64
	// Tag identifies this exact content (an ETag); the driver may answer
	// Unchanged when it equals prev.Tag.
	Tag string
	// Unchanged says the remote holds exactly prev (Entries is then
	// prev's).
	Unchanged bool
	// Entries are the paths the remote holds.
	Entries map[string]Entry
	// Deleted are deletions the listing itself carries evidence of
	// (team tombstones), path to time; drivers whose listing carries none
	// answer Deleted calls instead.
	Deleted map[string]time.Time
	// DeletesByAbsence says the remote keeps no record of deletions but
	// vouches for this listing with its identity: it names its Store and a
	// Generation that did not go back, so a path the basis tracks and the
	// listing lacks was deleted there (a store loses nothing without a
	// record except by a restore, which the Generation shows).
	DeletesByAbsence bool
}

// Entry is one path on the remote.
type Entry struct {
	Sum string
	// Ref is the driver's handle for the entry as it is (a memory ID and
	// version); the engine keeps it in the basis and hands it back in
	// Change.Expect.
	Ref string
	// Author says who wrote the entry as it is, when the remote says.
	Author Author
	// Written is when the remote wrote the entry as it is (Unix ms), 0
	// when it does not say. An entry the remote now holds in another
	// version written well before the one agreed on tells of a remote
	// that went back in time (restored from a backup), however far its
	// Generation moved on since.
	Written int64
}

// Author is who wrote an entry, when and through which door.
type Author struct {
	Name, Door, Session, Origin string
	Time                        time.Time
}

// Change is one write or deletion on the remote.
type Change struct {
	Path string
	// Content is the new content; nil with Delete set.
	Content []byte
	Delete  bool
	// Wrote is how Content was written (door, session, origin), as the
	// memory directory recorded it (memdir.Dir.Provenance); zero when it
	// recorded nothing (a hand edit, a deletion): the driver then sends
	// the sync client's own.
	Wrote memdir.Provenance
	// Expect is what the remote must hold for the change to apply: the
	// entry the basis recorded (its Sum and Ref), or the zero Entry when
	// the path must not exist there.
	Expect Entry
}

// Outcome is what the remote did with one Change.
type Outcome struct {
	Path   string
	Status Status
	// Entry is the path's entry after an Applied write.
	Entry Entry
	// Reason is the remote's or the reviewer's words for Refused and
	// Rejected.
	Reason string
	// Generation is the remote's generation just after an Applied change
	// (0 when the driver does not know it). The engine records the
	// highest one, so a remote later found below it is taken as restored
	// from a backup.
	Generation int64
}

// Status is the result of one Change.
type Status int

const (
	// Applied: the change is on the remote.
	Applied Status = iota
	// Mismatch: the remote no longer held Expect; nothing changed there,
	// and the next round decides the path again.
	Mismatch
	// InReview: the remote kept the change for a person's review; it is
	// not on the remote yet. The local file stays as it is and no round
	// deletes it while it waits.
	InReview
	// Rejected: a person already rejected this very change; Reason says
	// why. The local file is left as it is.
	Rejected
	// Refused: the remote refused this path or content (Reason says
	// why); the rest of the round goes on.
	Refused
)
