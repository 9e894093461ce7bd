package teammem

import "github.com/agentmem/agentmem/memdir"

// PathTraversalError reports a key or path refused inside the team
// directory; it is memdir.PathTraversalError, shared by every memory write
// path, so errors.As finds it under either name.
type PathTraversalError = memdir.PathTraversalError

// TraversalReason says why a key or path was refused.
type TraversalReason = memdir.TraversalReason

// The reasons a *PathTraversalError gives.
const (
	ReasonNUL           = memdir.ReasonNUL
	ReasonEncoded       = memdir.ReasonEncoded
	ReasonUnicode       = memdir.ReasonUnicode
	ReasonBackslash     = memdir.ReasonBackslash
	ReasonAbsolute      = memdir.ReasonAbsolute
	ReasonTooLong       = memdir.ReasonTooLong
	ReasonNotAbsolute   = memdir.ReasonNotAbsolute
	ReasonEscapes       = memdir.ReasonEscapes
	ReasonSymlinkEscape = memdir.ReasonSymlinkEscape
	ReasonDangling      = memdir.ReasonDangling
	ReasonLoop          = memdir.ReasonLoop
	ReasonUnverifiable  = memdir.ReasonUnverifiable
)

func traversal(r TraversalReason, key string) *PathTraversalError {
	return &PathTraversalError{Reason: r, Key: key}
}
