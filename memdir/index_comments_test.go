package memdir

import (
	"context"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expectations are what Claude Code 2.1.332 sent for each index.
func TestStripIndexComments(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"no comment":              {"- [A](a.md) — x\n", "- [A](a.md) — x\n"},
		"one line":                {"# Index\n<!-- note -->\n- [A](a.md)\n", "# Index\n- [A](a.md)\n"},
		"several lines":           {"a\n\n<!-- one\ntwo\nthree -->\nb\n", "a\n\nb\n"},
		"blank lines after":       {"<!-- x -->\n\n\n- [A](a.md)\n", "- [A](a.md)\n"},
		"text after it stays":     {"<!-- one --> text after\n", " text after\n"},
		"two on one line":         {"<!-- a --><!-- b -->\nz\n", "z\n"},
		"after a paragraph":       {"para\n<!-- c -->\nz\n", "para\nz\n"},
		"in a line":               {"before <!-- mid --> after\n", "before <!-- mid --> after\n"},
		"in a list item":          {"- [A](a.md)\n   <!-- c -->\n", "- [A](a.md)\n   <!-- c -->\n"},
		"ends a list item":        {"- [A](a.md)\n<!-- c -->\n- [B](b.md)\n", "- [A](a.md)\n- [B](b.md)\n"},
		"under an ordered item":   {"10. [D](d.md)\n  <!-- c -->\n", "10. [D](d.md)\n"},
		"after a list and blank":  {"- [E](e.md)\n\n<!-- c -->\nend\n", "- [E](e.md)\n\nend\n"},
		"in a quote":              {"> q\n> <!-- c -->\n", "> q\n> <!-- c -->\n"},
		"after a quote":           {"> q\n<!-- c -->\n", "> q\n"},
		"indented code":           {"\n    <!-- c -->\n", "\n    <!-- c -->\n"},
		"fenced":                  {"```\n<!-- c -->\n```\n", "```\n<!-- c -->\n```\n"},
		"tilde fence":             {"~~~md\n<!-- c -->\n~~~\n", "~~~md\n<!-- c -->\n~~~\n"},
		"in an html block":        {"<div>x</div>\n<!-- c -->\n\n<!-- d -->\nz\n", "<div>x</div>\n<!-- c -->\n\nz\n"},
		"unclosed":                {"a\n<!-- open\nb\n", "a\n<!-- open\nb\n"},
		"unclosed runs to closer": {"<!-- open\n- [C](c.md)\n```\n<!-- x -->\n```\n", "```\n"},
		"empty comment":           {"<!-->\nz\n", "<!-->\nz\n"},
		"link definitions stay":   {"[ref]: https://example.com/x\n<!-- c -->\n", "[ref]: https://example.com/x\n"},
		"crlf":                    {"a\r\n<!-- c -->\r\nb\r\n", "a\nb\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.want, stripIndexComments(c.in))
		})
	}
}

// The index block and the memory prompt leave comment blocks out.
func TestIndexBlockDropsComments(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/m/MEMORY.md", []byte("<!-- keep entries short -->\n- [A](a.md) — first\n"), 0o644))
	got, err := BuildIndexContext(context.Background(), fsys, LoadPromptRequest{AutoDir: "/m/"})
	require.NoError(t, err)
	assert.Contains(t, got, "- [A](a.md) — first")
	assert.NotContains(t, got, "keep entries short")
}

func FuzzStripIndexComments(f *testing.F) {
	f.Add("<!-- a -->\n- x\n")
	f.Add("- a\n  <!-- b -->\n<div>\n<!-- c -->\n")
	f.Fuzz(func(t *testing.T, s string) {
		out := stripIndexComments(s)
		if len(out) > len(s) {
			t.Fatalf("grew: %q -> %q", s, out)
		}
	})
}
