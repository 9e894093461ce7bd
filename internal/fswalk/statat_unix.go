//go:build linux || darwin

package fswalk

import (
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// canStatAt: an open folder can be asked for its files (statAt).
const canStatAt = true

// statAt is fstatat(dir, name) without following a link; asked is false
// when the folder cannot be asked (its descriptor is gone).
func statAt(dir *os.File, name string) (info fs.FileInfo, asked bool, err error) {
	conn, err := dir.SyscallConn()
	if err != nil {
		return nil, false, nil
	}
	var st unix.Stat_t
	var serr error
	if cerr := conn.Control(func(fd uintptr) {
		for {
			serr = unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			if serr != unix.EINTR {
				return
			}
		}
	}); cerr != nil {
		return nil, false, nil
	}
	if serr != nil {
		return nil, true, serr
	}
	return statInfo{name: name, st: st}, true, nil
}

// statInfo is fs.FileInfo from a unix.Stat_t.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
