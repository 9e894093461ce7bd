package linediff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnifiedKnownOutput(t *testing.T) {
	a := []byte("one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n")
	b := []byte("one\ntwo\nthree\nFOUR\nfive\nsix\nseven\neight\nnine\nten\neleven\n")
	want := "--- a/x.md\n+++ b/x.md\n" +
		"@@ -1,10 +1,11 @@\n one\n two\n three\n-four\n+FOUR\n five\n six\n seven\n eight\n nine\n ten\n+eleven\n"
	assert.Equal(t, want, Unified("a/x.md", "b/x.md", a, b))
	assert.Equal(t, "", Unified("a", "b", a, a))
	assert.Equal(t, "--- /dev/null\n+++ b/n.md\n@@ -0,0 +1,2 @@\n+hi\n+there", strings.TrimSuffix(Unified("a/n.md", "b/n.md", nil, []byte("hi\nthere\n")), "\n"))
	assert.Equal(t, "--- a/n.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-hi\n", Unified("a/n.md", "b/n.md", []byte("hi\n"), nil))
	assert.Equal(t, "--- a\n+++ b\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n", Unified("a", "b", []byte("x"), []byte("x\n")))
}

// apply is an independent reader of the format: it applies a unified diff
// to a and returns the result.
func apply(t *testing.T, a []byte, diff string) []byte {
	if diff == "" {
		return a
	}
	src := split(a)
	var out []byte
	pos := 0
	lines := strings.SplitAfter(diff, "\n")
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		switch l[0] {
		case '@':
			f := strings.Fields(l)
			start, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(f[1], "-"), ",")[0])
			if strings.HasSuffix(f[1], ",0") {
				start++
			}
			for pos < start-1 {
				out = append(out, src[pos]...)
				pos++
			}
		case ' ', '-':
			require.Less(t, pos, len(src), diff)
			require.Equal(t, string(src[pos]), strings.TrimSuffix(l[1:], "\n")+nlUnless(lines, i), diff)
			if l[0] == ' ' {
				out = append(out, src[pos]...)
			}
			pos++
		case '+':
			out = append(out, strings.TrimSuffix(l[1:], "\n")+nlUnless(lines, i)...)
		case '\\':
		}
	}
	for ; pos < len(src); pos++ {
		out = append(out, src[pos]...)
	}
	return out
}

func nlUnless(lines []string, i int) string {
	if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\\") {
		return ""
	}
	return "\n"
}

func randomText(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for range n {
		fmt.Fprintf(&b, "line %d\n", r.IntN(12))
	}
	if r.IntN(4) == 0 && b.Len() > 0 {
		b.Truncate(b.Len() - 1)
	}
	return b.Bytes()
}

func TestUnifiedAppliesBack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	patch, _ := exec.LookPath("patch")
	dir := t.TempDir()
	for i := range 400 {
		a, b := randomText(r, r.IntN(30)), randomText(r, r.IntN(30))
		d := Unified("a/f", "b/f", a, b)
		require.Equal(t, string(b), string(apply(t, a, d)), "case %d:\n%s", i, d)
		if patch != "" && i%20 == 0 && len(a) > 0 && len(b) > 0 && d != "" {
			// patch(1), where installed, reads the same diff the same way.
			f := filepath.Join(dir, "f")
			require.NoError(t, os.WriteFile(f, a, 0o644))
			cmd := exec.Command(patch, "-s", "-f", f)
			cmd.Stdin = strings.NewReader(d)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s\n%s", out, d)
			got, _ := os.ReadFile(f)
			require.Equal(t, string(b), string(got), d)
		}
	}
}

func TestUnifiedHugeInputsStayCorrect(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := randomText(r, 3000), randomText(r, 3000)
	assert.Equal(t, string(b), string(apply(t, a, Unified("a", "b", a, b))))
}
