package teammem

import "github.com/agentmem-sdk/agentmem/memdir"

// PathTraversalError reports a key or path refused inside the team
// directory; it is memdir.PathTraversalError, shared by every memory write
// path, so errors.As finds it under either name.
type PathTraversalError = memdir.PathTraversalError

func traversal(r memdir.TraversalReason, key string) *PathTraversalError {
	return &PathTraversalError{Reason: r, Key: key}
}
