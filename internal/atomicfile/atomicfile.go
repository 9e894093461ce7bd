// Package atomicfile replaces files so that a reader, or a process that
// restarts after a crash, sees either the old content or the new content and
// never a torn mix of both.
//
// The protocol is the classic one: create a temporary file in the target's
// directory (so the rename stays on one filesystem), write, Sync, Close, then
// Rename over the target. On any failure the temporary file is removed and
// the target is left untouched.
package atomicfile

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/afero"
)

// WriteFile atomically replaces path with data. The parent directory must
// exist. perm is applied to the new file (subject to the filesystem's
// support for Chmod).
func WriteFile(fsys afero.Fs, path string, data []byte, perm os.FileMode) error {
	return write(fsys, path, data, perm, true)
}

// WriteFileNoSync is WriteFile without the fsync: after a crash the file
// holds the old content or the new, never a torn mix, but a power loss may
// lose the new content. For copies of data that is still on disk, such as
// backups.
func WriteFileNoSync(fsys afero.Fs, path string, data []byte, perm os.FileMode) error {
	return write(fsys, path, data, perm, false)
}

func write(fsys afero.Fs, path string, data []byte, perm os.FileMode, sync bool) (err error) {
	dir, base := filepath.Split(path)
	dir = cmp.Or(dir, ".")
	tmp, err := afero.TempFile(fsys, dir, "."+tempBase(base)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	// Rebuild the name from dir: some filesystems (os.Root-backed ones)
	// report a file's host path rather than the name they were given.
	tmpName := filepath.Join(dir, filepath.Base(tmp.Name()))
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = fsys.Remove(tmpName)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return fmt.Errorf("sync temporary file: %w", err)
		}
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", err)
	}
	if err = fsys.Chmod(tmpName, perm); err != nil {
		return fmt.Errorf("set file mode: %w", err)
	}
	if err = fsys.Rename(tmpName, path); err != nil {
		return fmt.Errorf("rename into place: %w", err)
	}
	return nil
}

// IsTemp reports whether name (a bare file name) is one of WriteFile's
// temporary files: "." + the target's name + ".tmp-" + digits. One that
// outlives its write was left by a process killed in the middle.
func IsTemp(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false // the cheap test first: the walk asks it of every file
	}
	i := strings.LastIndex(name, ".tmp-")
	if i < 2 || i+len(".tmp-") == len(name) {
		return false
	}
	for _, r := range name[i+len(".tmp-"):] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// maxTempBase is the most bytes of the target's name a temporary file's
// name repeats: with the dot, ".tmp-" and up to ten digits it stays
// within the 255 bytes most filesystems allow a name, so a target whose
// own name is up to that long can still be written.
const maxTempBase = 200

// tempBase is base, cut to maxTempBase bytes on a character boundary.
func tempBase(base string) string {
	if len(base) <= maxTempBase {
		return base
	}
	cut := maxTempBase
	for cut > 0 && !utf8.RuneStart(base[cut]) {
		cut--
	}
	return base[:cut]
}
