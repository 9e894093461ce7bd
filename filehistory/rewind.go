package filehistory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
)

// RewindOptions tunes one Rewind.
type RewindOptions struct {
	// DryRun computes the statistics and changes nothing.
	DryRun bool
}

// DiffStats says what a rewind changed, or would change.
type DiffStats struct {
	// FilesChanged lists the paths restored or deleted, in tracking order.
	FilesChanged []string
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
	var st DiffStats
	var errs []error
	for _, p := range t.order {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		target, ok := snap.TrackedFileBackups[p]
		if !ok {
			target = t.first[p]
		}
		ins, del, changed, err := t.restore(p, target, opts.DryRun)
		if err != nil {
			errs = append(errs, fmt.Errorf("filehistory: rewind %s: %w", filepath.Base(p), err))
			continue
		}
		if changed {
			st.FilesChanged = append(st.FilesChanged, p)
			st.Insertions += ins
			st.Deletions += del
		}
	}
	return st, errors.Join(errs...)
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
