package teammem

import (
	"strconv"
)

// TraversalReason says why a key or path was refused.
type TraversalReason string

// The reasons a *PathTraversalError gives.
const (
	ReasonNUL           TraversalReason = "null byte in path"
	ReasonEncoded       TraversalReason = "percent-encoded traversal in key"
	ReasonUnicode       TraversalReason = "Unicode-normalized traversal in key"
	ReasonBackslash     TraversalReason = "backslash in key"
	ReasonAbsolute      TraversalReason = "absolute key"
	ReasonTooLong       TraversalReason = "key too long"
	ReasonNotAbsolute   TraversalReason = "write path is not absolute"
	ReasonEscapes       TraversalReason = "path escapes the team memory directory"
	ReasonSymlinkEscape TraversalReason = "path escapes the team memory directory through a symbolic link"
	ReasonDangling      TraversalReason = "dangling symbolic link in path"
	ReasonLoop          TraversalReason = "symbolic link loop in path"
	ReasonUnverifiable  TraversalReason = "cannot verify that the path stays in the team memory directory"
)

// maxKeyInError bounds how much of an offending key an error repeats.
const maxKeyInError = 200

// PathTraversalError reports a key or path that must not be used inside
// the team directory. errors.As finds it. Its message holds the reason and
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
	msg := "teammem: " + string(e.Reason)
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

func traversal(r TraversalReason, key string) *PathTraversalError {
	return &PathTraversalError{Reason: r, Key: key}
}
