package memdir

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"syscall"
)

// TraversalReason says why a key or path was refused.
type TraversalReason string

// The reasons a *PathTraversalError gives.
const (
	ReasonNUL       TraversalReason = "null byte in path"
	ReasonEncoded   TraversalReason = "percent-encoded traversal in key"
	ReasonUnicode   TraversalReason = "Unicode-normalized traversal in key"
	ReasonBackslash TraversalReason = "backslash in key"
	ReasonAbsolute  TraversalReason = "absolute key"
	ReasonTooLong   TraversalReason = "key too long"
	// ReasonControl: a key that is not valid UTF-8 or holds a control or
	// format character (an escape sequence a terminal would run).
	ReasonControl       TraversalReason = "control character or invalid UTF-8 in key"
	ReasonNotAbsolute   TraversalReason = "write path is not absolute"
	ReasonEscapes       TraversalReason = "path escapes the team memory directory"
	ReasonSymlinkEscape TraversalReason = "path escapes the team memory directory through a symbolic link"
	ReasonDangling      TraversalReason = "dangling symbolic link in path"
	ReasonLoop          TraversalReason = "symbolic link loop in path"
	ReasonUnverifiable  TraversalReason = "cannot verify that the path stays in the memory directory"
	// ReasonOutsideRoot: a path that names a memory root (other than a
	// team directory) leaves it once cleaned or through links.
	ReasonOutsideRoot TraversalReason = "path escapes the memory directory"
	// ReasonNotMemoryPath: a write outside every memory root was asked of
	// a gate that writes only inside them.
	ReasonNotMemoryPath TraversalReason = "path is not inside a memory directory"
)

// maxKeyInError bounds how much of an offending key an error repeats.
const maxKeyInError = 200

// PathTraversalError reports a key or path that must not be used inside a
// memory directory (the auto-memory directory, an agent-memory directory
// or the team directory): the write gate, the team validators and the
// memory tools all return it (teammem.PathTraversalError is this type). errors.As finds it. Its message holds the reason and
// at most the offending key (quoted, cut to 200 bytes); it never holds a
// host path, so it is safe to return to a model or a remote client.
type PathTraversalError struct {
	Reason TraversalReason
	// Key is the offending sync key, when a key was checked.
	Key string
	// Detail is an error code (such as EACCES) when the check itself failed.
	Detail string
}

func (e *PathTraversalError) Error() string {
	msg := "agentmem: " + string(e.Reason)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Key != "" {
		k := e.Key
		if len(k) > maxKeyInError {
			k = k[:maxKeyInError] + "..."
		}
		msg += ": key " + strconv.Quote(k)
	}
	return msg
}

// errELOOP is the kernel's "too many levels of symbolic links".
var errELOOP = syscall.ELOOP

// errorCode names the cause of a failed check for PathTraversalError's
// Detail: an errno name or the error's type, never a path.
func errorCode(err error) string {
	var errno syscall.Errno
	var pe *fs.PathError
	switch {
	case errors.As(err, &errno):
		switch errno {
		case syscall.EACCES:
			return "EACCES"
		case syscall.EPERM:
			return "EPERM"
		case syscall.EIO:
			return "EIO"
		}
		return fmt.Sprintf("errno %d", int(errno))
	case errors.As(err, &pe):
		return fmt.Sprintf("%T", pe.Err)
	}
	return "unknown"
}
