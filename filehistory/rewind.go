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
	if opts.IfUnchangedSince != "" {
		if err := t.unchangedSince(opts.IfUnchangedSince, target); err != nil {
			return DiffStats{}, err
		}
	}
	var st DiffStats
	var errs []error
	for _, p := range t.order {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		b := target(p)
		ins, del, changed, err := t.restore(p, b, opts.DryRun)
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
	return st, errors.Join(errs...)
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
func (t *Tracker) restore(path string, b Backup, dryRun bool) (ins, del int, changed bool, err error) {
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
			if err := t.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
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
	if err := t.fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, 0, false, err
	}
	if err := atomicfile.WriteFile(t.fs, path, old, info.Mode().Perm()); err != nil {
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
