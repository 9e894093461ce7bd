package recall

import "golang.org/x/sys/cpu"

// useAVX2: the vector side's dot products run 16 values a step.
var useAVX2 = cpu.X86.HasAVX2

// dotAVX2 is dotGo with AVX2 (dot_amd64.s).
//
//go:noescape
func dotAVX2(a, b []int8) int32

// dot is the dot product of a and b, of one length of at most 130,000.
func dot(a, b vector) int32 {
	b = b[:len(a)] // the assembly reads len(a) values of b
	if useAVX2 {
		return dotAVX2(a, b)
	}
	return dotGo(a, b)
}
