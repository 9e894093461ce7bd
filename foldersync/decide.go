package foldersync

import "time"

// action is what a round does for one path.
type action int

const (
	actNone        action = iota // both sides agree: record it
	actForget                    // neither side has it: drop it from the basis
	actPull                      // write the remote's content here
	actPush                      // send the local content
	actDeleteHere                // remove the local file (deleted on the remote, on evidence)
	actDeleteThere               // delete the path on the remote
	actConflict                  // keep the local side aside, take the remote's
	actStale                     // a local copy older than the remote's deletion: move it aside
	actKeepLocal                 // the remote went back: keep its copy aside, push the local one
	actRestore                   // deletions do not propagate (KeepDeleted): bring the remote's copy back
	actDiverged                  // nothing agreed on, the local file not known newer: keep it, the remote's aside
)

// pathState is what a round knows of one path: l, r and b are the local,
// remote and basis sums ("" for absent); deleted is when the remote
// deleted the path (zero without evidence) and mtime the local file's
// modification time; written is when the remote wrote its copy (zero
// when it does not say).
type pathState struct {
	l, r, b                 string
	deleted, mtime, written time.Time
}

// decide applies the three-way rules to one path. Where both sides
// changed it, the remote's version takes the file and the local one goes
// aside, but only against a basis: without one, the local file stays. keepDeleted stops
// deletions from propagating either way; reset says the remote is not
// the one the basis was made with (replaced, or restored from a backup),
// so nothing is deleted or moved aside on its word and a path whose sides
// differ keeps the local side (the remote's copy is kept aside).
func decide(s pathState, keepDeleted, reset bool) action {
	l, r, b := s.l, s.r, s.b
	if reset {
		b = ""
	}
	// A local copy no newer than the remote's deletion of the path is
	// not an edit made after it (a store that went back has no say).
	stale := b == "" && !reset && !s.deleted.IsZero() && !s.mtime.After(s.deleted)
	switch {
	case l == r:
		if l == "" {
			return actForget
		}
		return actNone
	case l == b: // only the remote changed
		if r != "" {
			return actPull
		}
		// Deletion only on evidence: a path the remote lost without a
		// record goes back to it.
		switch {
		case s.deleted.IsZero():
			return actPush
		case keepDeleted:
			return actNone
		}
		return actDeleteHere
	case r == b: // only the local side changed
		if l == "" {
			if keepDeleted {
				return actRestore
			}
			return actDeleteThere
		}
		if stale {
			return actStale
		}
		return actPush
	case l == "": // deleted here, edited there: the edit wins
		return actPull
	case r == "": // deleted there, edited here: the edit wins
		if stale {
			return actStale
		}
		return actPush
	case reset:
		return actKeepLocal
	case b == "":
		// Nothing says what both sides agreed on (a first sync, a lost
		// or damaged basis): the local file is never replaced on such
		// weak evidence, and sent over the remote's copy only when it
		// was written well after that copy.
		if !s.written.IsZero() && s.mtime.After(s.written.Add(clockSlack)) {
			return actKeepLocal
		}
		return actDiverged
	}
	return actConflict
}

// writtenAt is when the remote wrote the entry as it is (zero when it
// does not say).
func (en Entry) writtenAt() time.Time {
	if en.Written > 0 {
		return time.UnixMilli(en.Written)
	}
	return en.Author.Time
}
