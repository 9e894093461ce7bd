package memdir

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Backfill bounds: a backfilled index stops at 70 % of the load limits,
// and each line stays under the length the prompt asks for.
const (
	backfillMaxLines = MaxEntrypointLines * 7 / 10 // 140
	backfillMaxBytes = MaxEntrypointBytes * 7 / 10 // 17,500
	backfillLineMax  = 150
)

// BackfillIndex writes a MEMORY.md for a directory that has topic files
// but no index, as Claude Code 2.1.328 does when it loads memory: one
// pointer per file, newest first, "- [<name without .md>](<path>) —
// <description>" (no " — " part without a description; the description
// cut with "…" so a line stays within backfillLineMax characters),
// stopping at backfillMaxLines lines or backfillMaxBytes. Files of the
// team directory (which has its own index) and names holding "[", "]",
// "(", ")" or a newline are left out. It runs under the index lock and
// writes only when no index exists then, so an index created meanwhile is
// never replaced. It returns how many pointers it wrote (0 when an index
// exists or there is nothing to point to).
func (d *Dir) BackfillIndex(ctx context.Context) (int, error) {
	index := filepath.Join(d.path, EntrypointName)
	if _, err := d.fs.Stat(index); err == nil {
		return 0, nil // the common case: no scan
	}
	headers, err := ScanMemoryFiles(ctx, d.fs, d.path, ScanOptions{MaxFiles: 1 << 20})
	if err != nil {
		return 0, err
	}
	var lines []string
	size := 0
	for _, h := range headers {
		if strings.HasPrefix(h.Filename, TeamDirName+"/") || strings.ContainsAny(h.Filename, "[]()\n") {
			continue
		}
		line := backfillLine(h)
		n := utf16Len(line) + 1
		if len(lines) == backfillMaxLines || size+n > backfillMaxBytes {
			break
		}
		lines, size = append(lines, line), size+n
	}
	if len(lines) == 0 {
		return 0, nil
	}
	_, err = d.gate.UpdateFile(ctx, index, func(_ []byte, exists bool) ([]byte, error) {
		if exists {
			return nil, errNoIndexChange
		}
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	}, 0o644)
	if errors.Is(err, errNoIndexChange) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return len(lines), nil
}

// backfillLine is one backfilled pointer.
func backfillLine(h MemoryHeader) string {
	line := "- [" + strings.TrimSuffix(filepath.Base(h.Filename), ".md") + "](" + h.Filename + ")"
	desc := strings.Join(strings.Fields(h.Description), " ")
	if desc == "" {
		return line
	}
	line += " — "
	room := backfillLineMax - utf8.RuneCountInString(line)
	if r := []rune(desc); len(r) > room {
		if room <= 1 {
			return strings.TrimSuffix(line, " — ")
		}
		desc = string(r[:room-1]) + "…"
	}
	return line + desc
}
