//go:build !(linux || darwin)

package fswalk

import (
	"io/fs"
	"os"
)

// canStatAt: an open folder cannot be asked for its files here.
const canStatAt = false

// statAt cannot ask a folder here: the caller stats the path.
func statAt(*os.File, string) (fs.FileInfo, bool, error) { return nil, false, nil }
