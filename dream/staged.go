package dream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// ChangeKind says what a staged consolidation does to one file.
type ChangeKind string

// Change kinds.
const (
	Added   ChangeKind = "added"
	Changed ChangeKind = "changed"
	Deleted ChangeKind = "deleted"
)

// StagedChange is one file a staged consolidation would change.
type StagedChange struct {
	// Rel is the path below the memory directory, "/"-separated.
	Rel  string
	Kind ChangeKind
	// Before is the file in the memory directory (nil when Added); After
	// is the file the consolidation left (nil when Deleted).
	Before, After []byte
}

// ErrStageStale: the memory directory changed since the stage was copied,
// so accepting it would overwrite that change. Nothing was applied;
// discard the stage and consolidate again.
var ErrStageStale = errors.New("dream: the memory directory changed since the stage was made; discard it and run again")

// StageOptions configures ForceStaged.
type StageOptions struct {
	// Dir is where the copy is made (absolute, must not exist). Default:
	// a hidden sibling of the memory directory,
	// ".<name>-staged-<time>".
	Dir string
}

// Stage is a consolidation made on a copy of the memory directory and
// waiting for review: Changes lists what it would do; Accept applies it,
// Discard drops it. Either removes the copy.
type Stage struct {
	Outcome Outcome
	// Dir is the copy the agent consolidated.
	Dir     string
	Changes []StagedChange
	// Checkpoint names the snapshot Accept took first (Options.History):
	// rewinding to it undoes the accepted consolidation.
	Checkpoint string
	d          *Dreamer
	// prevLock is the lock's time before the run stamped it (stamped):
	// Discard puts it back, so a rejected consolidation does not hold off
	// the next one.
	prevLock time.Time
	stamped  bool
}

// ForceStaged consolidates now, like Force, but into a copy of the memory
// directory (regular files outside hidden folders), and returns the
// result for review; the memory directory is not touched. A run that
// fails or stops returns a Stage without changes (its copy removed) and
// the Outcome saying why. The lock is stamped as for a run in place.
func (d *Dreamer) ForceStaged(ctx context.Context, opts StageOptions) (*Stage, error) {
	if stop := d.gateEnabled(); stop != "" {
		return &Stage{Outcome: d.finish(ctx, Outcome{Stopped: stop}), d: d}, nil
	}
	last, err := d.lock.LastConsolidation()
	if err != nil {
		return nil, err
	}
	sessions, err := d.sessionsSince(last)
	if err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(d.dir.Path()), "."+filehistory.CheckpointID(filepath.Base(d.dir.Path())+"-staged", d.cfg.Now()))
	}
	if !filepath.IsAbs(dir) {
		return nil, errors.New("dream: the stage directory must be absolute")
	}
	if ok, _ := afero.Exists(d.dir.FS(), dir); ok {
		return nil, fmt.Errorf("dream: the stage directory %s already exists", filepath.Base(dir))
	}
	before, err := snapshotTree(ctx, d.dir.FS(), d.dir.Path())
	if err != nil {
		return nil, fmt.Errorf("dream: read the memory directory: %w", err)
	}
	for rel, data := range before {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := d.dir.FS().MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("dream: make the stage: %w", err)
		}
		if err := afero.WriteFile(d.dir.FS(), p, data, 0o644); err != nil {
			return nil, fmt.Errorf("dream: make the stage: %w", err)
		}
	}
	st := &Stage{Dir: dir, d: d}
	out, prev := d.run(ctx, sessions, dir)
	st.Outcome = d.finish(ctx, out)
	if !st.Outcome.Ran || st.Outcome.Err != nil {
		return st, d.dir.FS().RemoveAll(dir)
	}
	st.prevLock, st.stamped = prev, true
	after, err := snapshotTree(ctx, d.dir.FS(), dir)
	if err != nil {
		return nil, fmt.Errorf("dream: read the stage: %w", err)
	}
	for _, rel := range sortedKeys(before, after) {
		b, inB := before[rel]
		a, inA := after[rel]
		switch {
		case inB && !inA:
			st.Changes = append(st.Changes, StagedChange{Rel: rel, Kind: Deleted, Before: b})
		case !inB && inA:
			st.Changes = append(st.Changes, StagedChange{Rel: rel, Kind: Added, After: a})
		case !bytes.Equal(a, b):
			st.Changes = append(st.Changes, StagedChange{Rel: rel, Kind: Changed, Before: b, After: a})
		}
	}
	return st, nil
}

// Accept applies the stage's changes to the memory directory through its
// write gate, all or none: it first checks that every file still holds
// what the stage started from (else ErrStageStale), and if a write fails
// it puts back the files already written. With Options.History a
// checkpoint is taken first and every file is tracked, so the accepted
// consolidation can be rewound later. The copy is removed.
func (s *Stage) Accept(ctx context.Context) error {
	if s.Dir == "" || len(s.Changes) == 0 {
		return s.removeCopy() // nothing to change: the run still counts
	}
	d := s.d
	gate := d.dir.Gate()
	abs := func(c StagedChange) string { return filepath.Join(d.dir.Path(), filepath.FromSlash(c.Rel)) }
	for _, c := range s.Changes {
		cur, err := afero.ReadFile(d.dir.FS(), abs(c))
		exists := err == nil
		if (c.Kind == Added) == exists || (exists && !bytes.Equal(cur, c.Before)) {
			return ErrStageStale
		}
	}
	if d.cfg.History != nil {
		checkpoint := filehistory.CheckpointID("dream-accept", d.cfg.Now())
		if err := d.cfg.History.MakeSnapshot(ctx, checkpoint); err != nil {
			return fmt.Errorf("dream: checkpoint before accepting: %w", err)
		}
		s.Checkpoint = checkpoint
		// Each write records the file it replaces, under its lock.
		gate = d.dir.WithHistory(d.cfg.History).Gate()
	}
	// A removal the gate refuses (another agent's in shared memory,
	// under main-agent-only) refuses the whole stage before anything is
	// applied: a deletion it holds, and the undo of a file it adds, which
	// could not take a half-applied stage back.
	for _, c := range s.Changes {
		if c.Kind == Deleted || c.Kind == Added {
			if err := gate.CheckRemove(ctx, abs(c)); err != nil {
				return fmt.Errorf("dream: accept %s (nothing applied): %w", c.Rel, err)
			}
		}
	}
	var applied []StagedChange
	var err error
	for _, c := range s.Changes {
		if c.Kind == Deleted {
			_, err = gate.Remove(ctx, abs(c))
		} else {
			_, err = gate.WriteFile(ctx, abs(c), c.After, modeOf(d.dir.FS(), abs(c)))
		}
		if err != nil {
			undo(d.dir.FS(), gate, abs, applied)
			return fmt.Errorf("dream: accept %s (nothing applied): %w", c.Rel, err)
		}
		applied = append(applied, c)
	}
	return s.removeCopy()
}

// undo puts back the files of applied changes. It runs to the end even
// when the accept's context was cancelled: a half-applied stage is worse.
func undo(fsys afero.Fs, gate *memdir.WriteGate, abs func(StagedChange) string, applied []StagedChange) {
	for i := len(applied) - 1; i >= 0; i-- {
		c := applied[i]
		if c.Kind == Added {
			_, _ = gate.Remove(context.Background(), abs(c))
		} else {
			_, _ = gate.WriteFile(context.Background(), abs(c), c.Before, modeOf(fsys, abs(c)))
		}
	}
}

// modeOf returns the mode of the file at p, or 0644 for a new one, so a
// changed memory keeps its mode as an in-place Edit would.
func modeOf(fsys afero.Fs, p string) fs.FileMode {
	if info, err := fsys.Stat(p); err == nil {
		return info.Mode().Perm()
	}
	return 0o644
}

// Discard drops the stage: the memory directory is left as it is, and the
// consolidation lock goes back to its time before the run, so a rejected
// consolidation does not count as one (the time gate stays open).
func (s *Stage) Discard() error {
	stamped := s.stamped
	err := s.removeCopy()
	if stamped {
		if rbErr := s.d.lock.Rollback(s.prevLock); rbErr != nil && err == nil {
			err = fmt.Errorf("dream: roll the lock back: %w", rbErr)
		}
	}
	return err
}

// removeCopy removes the stage's copy of the memory directory.
func (s *Stage) removeCopy() error {
	s.stamped = false
	if s.Dir == "" {
		return nil
	}
	err := s.d.dir.FS().RemoveAll(s.Dir)
	s.Dir = ""
	return err
}

// snapshotTree reads every regular file below root outside hidden
// folders and hidden files, by "/"-separated relative path.
func snapshotTree(ctx context.Context, fsys afero.Fs, root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fswalk.Walk(ctx, fsys, root, func(e fswalk.Entry) error {
		if !e.Type.IsRegular() || fswalk.Hidden(e.Rel) {
			return nil
		}
		data, err := afero.ReadFile(fsys, e.Abs)
		if err != nil {
			return err
		}
		out[e.Rel] = data
		return nil
	})
	return out, err
}

func sortedKeys(ms ...map[string][]byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}
