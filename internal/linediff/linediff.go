// Package linediff writes unified diffs of two texts, line by line, in the
// format patch(1) and git apply read.
package linediff

import (
	"bytes"
	"fmt"
	"strings"
)

// context is the number of unchanged lines shown around each change.
const context = 3

// maxCells bounds the LCS table; past it the whole text is shown as
// replaced, which is still a correct diff, only a longer one.
const maxCells = 4 << 20

// op is one line of an edit script.
type op struct {
	kind byte // ' ', '-', '+'
	line []byte
}

// Unified returns the unified diff turning a into b, with the headers
// "--- from" and "+++ to" ("/dev/null" for a side that does not exist:
// pass nil for it). Equal texts give "".
func Unified(from, to string, a, b []byte) string {
	if bytes.Equal(a, b) && (a == nil) == (b == nil) {
		return ""
	}
	la, lb := split(a), split(b)
	ops := script(la, lb)
	var w strings.Builder
	if a == nil {
		from = "/dev/null"
	}
	if b == nil {
		to = "/dev/null"
	}
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", from, to)
	for start := 0; start < len(ops); {
		// Find the next change, then extend the hunk while changes are
		// within 2*context lines of each other.
		first := start
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		lo := max(first-context, start)
		hi := first
		for i := first; i < len(ops); i++ {
			if ops[i].kind != ' ' {
				hi = i + 1
				continue
			}
			if i-hi >= 2*context {
				break
			}
		}
		end := min(hi+context, len(ops))
		writeHunk(&w, ops, lo, end)
		start = end
	}
	return w.String()
}

func writeHunk(w *strings.Builder, ops []op, lo, end int) {
	// Line numbers: count the lines of each side before lo.
	aLine, bLine := 1, 1
	for _, o := range ops[:lo] {
		if o.kind != '+' {
			aLine++
		}
		if o.kind != '-' {
			bLine++
		}
	}
	aN, bN := 0, 0
	for _, o := range ops[lo:end] {
		if o.kind != '+' {
			aN++
		}
		if o.kind != '-' {
			bN++
		}
	}
	// An empty side is numbered by the line before it, as diff(1) does.
	if aN == 0 {
		aLine--
	}
	if bN == 0 {
		bLine--
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", span(aLine, aN), span(bLine, bN))
	for _, o := range ops[lo:end] {
		w.WriteByte(o.kind)
		w.Write(o.line)
		if !bytes.HasSuffix(o.line, []byte("\n")) {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func span(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// split cuts b into lines that keep their "\n".
func split(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

// script is a shortest edit script from a to b (a longest common
// subsequence), deletions before insertions within a change.
func script(a, b [][]byte) []op {
	var head, tail []op
	for len(a) > 0 && len(b) > 0 && bytes.Equal(a[0], b[0]) {
		head = append(head, op{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && bytes.Equal(a[len(a)-1], b[len(b)-1]) {
		tail = append(tail, op{' ', a[len(a)-1]})
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	out := head
	n, m := len(a), len(b)
	if n*m > maxCells {
		for _, l := range a {
			out = append(out, op{'-', l})
		}
		for _, l := range b {
			out = append(out, op{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS length of a[i:] and b[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if bytes.Equal(a[i], b[j]) {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && bytes.Equal(a[i], b[j]):
				out = append(out, op{' ', a[i]})
				i, j = i+1, j+1
			case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
				out = append(out, op{'-', a[i]})
				i++
			default:
				out = append(out, op{'+', b[j]})
				j++
			}
		}
	}
	for k := len(tail) - 1; k >= 0; k-- {
		out = append(out, tail[k])
	}
	return out
}
