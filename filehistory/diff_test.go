package filehistory

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// lcsLen is the textbook dynamic programme the fast diff must agree with.
func lcsLen(a, b [][]byte) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if string(a[i-1]) == string(b[j-1]) {
				dp[i][j] = dp[i-1][j-1] + 1
			} else {
				dp[i][j] = max(dp[i-1][j], dp[i][j-1])
			}
		}
	}
	return dp[len(a)][len(b)]
}

func TestLineDiffAgreesWithLCS(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() []byte {
		var sb strings.Builder
		for range r.IntN(30) {
			sb.WriteString(string(rune('a' + r.IntN(4))))
			sb.WriteByte('\n')
		}
		if r.IntN(3) == 0 {
			sb.WriteString("tail without newline")
		}
		return []byte(sb.String())
	}
	for range 2000 {
		from, to := gen(), gen()
		a, b := splitLines(from), splitLines(to)
		l := lcsLen(a, b)
		ins, del := lineDiff(from, to)
		assert.Equal(t, len(b)-l, ins, "%q -> %q", from, to)
		assert.Equal(t, len(a)-l, del, "%q -> %q", from, to)
	}
}

func TestLineDiffEdges(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ins, del int
	}{
		{"", "", 0, 0},
		{"", "a\nb\n", 2, 0},
		{"a\nb\n", "", 0, 2},
		{"a\nb\n", "a\nb\n", 0, 0},
		{"a\nb", "a\nb\n", 1, 1}, // a final newline changes the last line
	} {
		ins, del := lineDiff([]byte(c.from), []byte(c.to))
		assert.Equal(t, c.ins, ins, "%q -> %q", c.from, c.to)
		assert.Equal(t, c.del, del, "%q -> %q", c.from, c.to)
	}
}
