package memdir

import (
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"
)

// ExpiresKey is the frontmatter key that dates a memory's end: a day
// (2026-12-31, the memory holds through that day, UTC) or a moment
// (RFC 3339). Recall and the prompt's index leave an expired memory
// out, lint lists it; the file itself stays as it is until someone
// deletes it.
const ExpiresKey = "expires"

// Expires returns when the memory stops holding, and whether its header
// says so readably.
func (fm Frontmatter) Expires() (time.Time, bool) {
	v := strings.TrimSpace(fm.Metadata[ExpiresKey])
	if v == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, true
	}
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		return d.AddDate(0, 0, 1), true // through the whole day
	}
	if t, err := time.Parse(time.DateTime, v); err == nil {
		return t, true // "2026-12-31 18:00:00", as YAML writes a time, UTC
	}
	return time.Time{}, false
}

// Expired reports whether the memory's expires date has passed at now.
func (fm Frontmatter) Expired(now time.Time) bool {
	t, ok := fm.Expires()
	return ok && !now.Before(t)
}

// withoutExpired drops the lines of an index (the MEMORY.md of dir) that
// point to a memory file of dir past its expires date at now, so the
// prompt does not offer what recall leaves out. A line whose file cannot
// be read stays.
func withoutExpired(fsys afero.Fs, dir, index string, now time.Time) string {
	if !strings.Contains(index, "](") {
		return index
	}
	lines := strings.Split(index, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if target := firstLinkTarget(l); target != "" && expiredFile(fsys, filepath.Join(dir, filepath.FromSlash(target)), now) {
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// firstLinkTarget returns the target of a line's first Markdown link
// when it is a memory file inside the index's folder ("" otherwise).
func firstLinkTarget(line string) string {
	i := strings.Index(line, "](")
	if i < 0 {
		return ""
	}
	rest := line[i+2:]
	j := strings.IndexByte(rest, ')')
	if j < 0 {
		return ""
	}
	t := strings.TrimPrefix(strings.TrimSpace(rest[:j]), "./")
	if !strings.HasSuffix(t, ".md") || strings.Contains(t, "://") || strings.HasPrefix(t, "/") || strings.Contains(t, "..") {
		return ""
	}
	return t
}

// expiredFile reports whether the memory file at p says it expired. Only
// a regular file is read: a pipe or a device under a memory's name must
// not stall the prompt.
func expiredFile(fsys afero.Fs, p string, now time.Time) bool {
	stat := fsys.Stat
	if l, ok := fsys.(afero.Lstater); ok {
		stat = func(p string) (fs.FileInfo, error) { info, _, err := l.LstatIfPossible(p); return info, err }
	}
	if info, err := stat(p); err != nil || !info.Mode().IsRegular() {
		return false
	}
	f, err := fsys.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, maxHeaderBytes))
	if err != nil {
		return false
	}
	fm, _, _ := ParseFrontmatter(head)
	return fm.Expired(now)
}
