package memdir

import (
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/realpath"
	"github.com/spf13/afero"
)

// ReadIndex reads the index at rel ("MEMORY.md", or "team/MEMORY.md")
// below the memory directory root, under the rule the writes follow: an
// index that is, or lies below, a symbolic link leading out of root (or a
// dangling or looping one) is refused with a *PathTraversalError and never
// read, so a planted link cannot pull /etc/hostname or a private file
// into a prompt. A missing index gives an error that is
// fs.ErrNotExist.
func ReadIndex(fsys afero.Fs, root, rel string) ([]byte, error) {
	if err := realpath.Within(fsys, root, rel); err != nil {
		return nil, containmentError(err, strings.HasPrefix(filepath.Clean(rel), TeamDirName+string(filepath.Separator)))
	}
	return afero.ReadFile(fsys, filepath.Join(root, rel))
}

// indexLocation names dir's index as a root and a path below it: below
// autoDir when dir lies inside it (the team directory), so that a team
// directory that is itself a link out is refused too.
func indexLocation(autoDir, dir string) (root, rel string) {
	autoDir, dir = filepath.Clean(autoDir), filepath.Clean(dir)
	if autoDir != "." && strings.HasPrefix(dir, autoDir+string(filepath.Separator)) {
		return autoDir, filepath.Join(dir[len(autoDir)+1:], EntrypointName)
	}
	return dir, EntrypointName
}
