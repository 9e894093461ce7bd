package filehistory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// RewindOptions tunes one Rewind.
type RewindOptions struct {
	// DryRun computes the statistics and changes nothing.
	DryRun bool
	// IfUnchangedSince names a later snapshot that recorded the files as
	// the change being undone left them. A file the rewind would change
	// that differs from its version there was changed since, by someone
	// else: the rewind then changes nothing and returns a
	// *ChangedSinceError naming every such file.
	IfUnchangedSince string
	// Dir, when set, is the memory directory the tracked files lie in:
	// every file the rewind restores or removes is written through its
	// write gate (its lock, its confinement, its provenance; never this
	// tracker's own recording), and with IfUnchangedSince each file is
	// compared with its version there under the same lock as its write,
	// so a change that lands between the check and the write is never
	// overwritten. A tracked file outside it is not touched (an error
	// for that file). Without Dir the files are written directly.
	Dir *memdir.Dir
}

// ChangedSinceError refuses a rewind that would overwrite or remove
// changes made after the snapshot RewindOptions.IfUnchangedSince names:
// nothing was changed. Look at the files; rewind without the option to
// undo anyway.
type ChangedSinceError struct {
	Since string
	Paths []string
}

func (e *ChangedSinceError) Error() string {
	return fmt.Sprintf("filehistory: %d file(s) changed after %s, and the rewind would overwrite or remove those changes (%s); nothing was changed",
		len(e.Paths), e.Since, strings.Join(e.Paths, ", "))
}

// DiffStats says what a rewind changed, or would change.
type DiffStats struct {
	// FilesChanged lists the paths restored or deleted, in tracking order.
	FilesChanged []string
	// Removed lists the paths of FilesChanged the rewind deletes (or
	// would delete): they did not exist at the snapshot.
	Removed []string
	// Insertions and Deletions count lines the rewind adds to and removes
	// from the files as they are now.
	Insertions, Deletions int
}

// Rewind puts every tracked file back as it was at the snapshot of
// messageID: its version there, or its first version when it was tracked
// later. A changed file gets its content and mode back (its directory is
// recreated if needed); a file that did not exist then is deleted. Files
// already in that state are left alone. A failure on one file does not
// stop the others; the errors are joined and the stats cover what was done.
func (t *Tracker) Rewind(ctx context.Context, messageID string, opts RewindOptions) (DiffStats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.find(messageID)
	if i < 0 {
		return DiffStats{}, ErrUnknownSnapshot
	}
	snap := t.snaps[i]
	target := func(p string) Backup {
		if b, ok := snap.TrackedFileBackups[p]; ok {
			return b
		}
		return t.first[p]
	}
	var since map[string]Backup // each file's version at IfUnchangedSince
	if opts.IfUnchangedSince != "" {
		if err := t.unchangedSince(opts.IfUnchangedSince, target); err != nil {
			return DiffStats{}, err
		}
		since = t.snaps[t.find(opts.IfUnchangedSince)].TrackedFileBackups
	}
	w := writer{t: t, ctx: ctx}
	if opts.Dir != nil {
		w.gate = opts.Dir.WithHistory(nil).Gate()
	}
	var st DiffStats
	var errs []error
	var raced []string
	for _, p := range t.order {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		b := target(p)
		w.guard = nil
		if left, ok := since[p]; ok && w.gate != nil {
			w.guard = t.guard(left)
		}
		ins, del, changed, err := t.restore(p, b, opts.DryRun, w)
		if errors.Is(err, errChangedSince) {
			raced = append(raced, p)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("filehistory: rewind %s: %w", filepath.Base(p), err))
			continue
		}
		if changed {
			st.FilesChanged = append(st.FilesChanged, p)
			if !b.Existed() {
				st.Removed = append(st.Removed, p)
			}
			st.Insertions += ins
			st.Deletions += del
		}
	}
	if len(raced) > 0 {
		errs = append(errs, &ChangedSinceError{Since: opts.IfUnchangedSince, Paths: raced})
	}
	return st, errors.Join(errs...)
}

// errChangedSince: a file changed after the check and before its write.
var errChangedSince = errors.New("filehistory: changed since")

// guard returns the check a write through the gate makes under its lock:
// the file must still be as version left has it.
func (t *Tracker) guard(left Backup) func(old []byte, exists bool) error {
	var want []byte
	if left.Existed() {
		var err error
		if want, err = afero.ReadFile(t.fs, filepath.Join(t.dir, left.BackupFileName)); err != nil {
			return func([]byte, bool) error { return fmt.Errorf("read backup: %w", err) }
		}
	}
	return func(old []byte, exists bool) error {
		if exists != left.Existed() || !bytes.Equal(old, want) {
			return errChangedSince
		}
		return nil
	}
}

// writer writes a rewind's files: through a memory directory's write
// gate when it has one (guard, when set, checked under the gate's lock),
// directly otherwise.
type writer struct {
	t     *Tracker
	ctx   context.Context
	gate  *memdir.WriteGate
	guard func(old []byte, exists bool) error
}

func (w writer) write(path string, data []byte, perm fs.FileMode) error {
	if w.gate == nil {
		if err := w.t.fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return atomicfile.WriteFile(w.t.fs, path, data, perm)
	}
	_, err := w.gate.UpdateFile(w.ctx, path, func(old []byte, exists bool) ([]byte, error) {
		if w.guard != nil {
			if err := w.guard(old, exists); err != nil {
				return nil, err
			}
		}
		return data, nil
	}, perm)
	return err
}

func (w writer) remove(path string) error {
	if w.gate == nil {
		return w.t.fs.Remove(path)
	}
	_, err := w.gate.RemoveIf(w.ctx, path, w.guard)
	return err
}

// unchangedSince returns a *ChangedSinceError for the files a rewind to
// target would change that differ from their version at snapshot since.
func (t *Tracker) unchangedSince(since string, target func(string) Backup) error {
	j := t.find(since)
	if j < 0 {
		return ErrUnknownSnapshot
	}
	var changed []string
	for _, p := range t.order {
		if same, err := t.matches(p, target(p)); err != nil || same {
			if err != nil {
				return err
			}
			continue // the rewind leaves it as it is
		}
		left, ok := t.snaps[j].TrackedFileBackups[p]
		if !ok {
			changed = append(changed, p) // tracked after since: not the undone change's
			continue
		}
		same, err := t.matches(p, left)
		if err != nil {
			return err
		}
		if !same {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		return &ChangedSinceError{Since: since, Paths: changed}
	}
	return nil
}

// restore brings path to backup b and reports the line counts. It reads
// the file and the backup once each.
func (t *Tracker) restore(path string, b Backup, dryRun bool, w writer) (ins, del int, changed bool, err error) {
	cur, err := afero.ReadFile(t.fs, path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, false, err
	}
	if !b.Existed() {
		if !exists {
			return 0, 0, false, nil
		}
		if !dryRun {
			if err := w.remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return 0, 0, false, err
			}
		}
		return 0, countLines(cur), true, nil
	}
	backup := filepath.Join(t.dir, b.BackupFileName)
	old, err := afero.ReadFile(t.fs, backup)
	if err != nil {
		return 0, 0, false, fmt.Errorf("read backup: %w", err)
	}
	info, err := t.fs.Stat(backup)
	if err != nil {
		return 0, 0, false, fmt.Errorf("stat backup: %w", err)
	}
	if exists && bytes.Equal(cur, old) {
		if ci, err := t.fs.Stat(path); err == nil && ci.Mode().Perm() == info.Mode().Perm() {
			return 0, 0, false, nil
		}
	}
	ins, del = lineDiff(cur, old)
	if dryRun {
		return ins, del, true, nil
	}
	if err := w.write(path, old, info.Mode().Perm()); err != nil {
		return 0, 0, false, err
	}
	return ins, del, true, nil
}

func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	ls := bytes.SplitAfter(b, []byte("\n"))
	if len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func countLines(b []byte) int { return len(splitLines(b)) }

// lineDiff returns how many lines turning from into to inserts and
// deletes, from the length of their longest common subsequence (Myers'
// O(ND) edit distance). Past maxEdit differing lines it falls back to
// counting lines present in one and not the other.
func lineDiff(from, to []byte) (ins, del int) {
	a, b := splitLines(from), splitLines(to)
	// Drop the common prefix and suffix; most edits are local.
	for len(a) > 0 && len(b) > 0 && bytes.Equal(a[0], b[0]) {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && bytes.Equal(a[len(a)-1], b[len(b)-1]) {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return m, n
	}
	const maxEdit = 4096
	maxD := min(n+m, maxEdit)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && bytes.Equal(a[x], b[y]) {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				lcs := (n + m - d) / 2
				return m - lcs, n - lcs
			}
		}
	}
	return multisetDiff(a, b)
}

func multisetDiff(a, b [][]byte) (ins, del int) {
	count := map[string]int{}
	for _, l := range a {
		count[string(l)]++
	}
	for _, l := range b {
		if count[string(l)] > 0 {
			count[string(l)]--
		} else {
			ins++
		}
	}
	for _, c := range count {
		del += c
	}
	return ins, del
}
