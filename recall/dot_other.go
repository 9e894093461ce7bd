//go:build !amd64

package recall

// dot is the dot product of a and b, of one length of at most 130,000.
func dot(a, b vector) int32 { return dotGo(a, b) }
