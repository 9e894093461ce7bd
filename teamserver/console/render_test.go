package console

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

func TestSplitFrontmatter(t *testing.T) {
	for _, tc := range []struct {
		name, in, body string
		fields         []field
	}{
		{"none", "# Title\n", "# Title\n", nil},
		{"fields", "---\nname: a\ntype: \"user\"\n---\nbody\n", "body\n", []field{{"name", "a"}, {"type", "user"}}},
		{"crlf", "---\r\ntype: project\r\n---\r\nbody\r\n", "body\r\n", []field{{"type", "project"}}},
		{"unclosed", "---\ntype: user\nbody\n", "---\ntype: user\nbody\n", nil},
		{"a line without a name", "---\nnot a field\n---\n", "", []field{{"", "not a field"}}},
		{"closing line last", "---\ntype: user\n---", "", []field{{"type", "user"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, body := splitFrontmatter(tc.in)
			assert.Equal(t, tc.fields, fields)
			assert.Equal(t, tc.body, body)
		})
	}
}

// FuzzRender: whatever a memory holds, splitting it never panics, the
// body is the end of the memory, and the rendered HTML holds no script,
// event handler or javascript: link.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"", "---\ntype: x\n---\n# t\n", "<script>alert(1)</script>", "[a](javascript:alert(1))",
		"<img src=x onerror=alert(1)>", "[a](JaVaScRiPt:alert(1))", "<a href=\"&#106;avascript:alert(1)\">x</a>",
		"```\n<script>\n```", "<svg onload=alert(1)>", "[x](data:text/html,<script>alert(1)</script>)"} {
		f.Add(s)
	}
	r := newRenderer()
	f.Fuzz(func(t *testing.T, in string) {
		_, body := splitFrontmatter(in)
		if !strings.HasSuffix(in, body) {
			t.Fatalf("body %q is not the end of %q", body, in)
		}
		out := string(r.html(in))
		z := html.NewTokenizer(strings.NewReader(out))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			tok := z.Token()
			switch tok.Data {
			case "script", "style", "iframe", "svg", "object", "embed", "form", "input", "base", "meta", "link":
				t.Fatalf("rendered %q holds a <%s>: %s", in, tok.Data, out)
			}
			for _, a := range tok.Attr {
				name, val := strings.ToLower(a.Key), strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(name, "on") || name == "style" || name == "srcdoc" {
					t.Fatalf("rendered %q holds the attribute %s: %s", in, name, out)
				}
				if (name == "href" || name == "src") && !strings.HasPrefix(val, "http:") && !strings.HasPrefix(val, "https:") && !strings.HasPrefix(val, "mailto:") && strings.Contains(strings.SplitN(val, "/", 2)[0], ":") {
					t.Fatalf("rendered %q links to %q: %s", in, a.Val, out)
				}
			}
		}
	})
}

func TestSessionsExpireAndStayBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessions(2)
	s.add(&session{id: "a", expires: now.Add(time.Hour)}, now)
	s.add(&session{id: "b", expires: now.Add(2 * time.Hour)}, now)
	s.add(&session{id: "c", expires: now.Add(3 * time.Hour)}, now)
	_, ok := s.get("a", now)
	assert.False(t, ok, "past the bound, the session that ends first is dropped")
	_, ok = s.get("c", now)
	assert.True(t, ok)
	_, ok = s.get("b", now.Add(2*time.Hour))
	assert.False(t, ok, "a session ends at its expiry")
	s.drop("c")
	_, ok = s.get("c", now)
	assert.False(t, ok)
	assert.Empty(t, s.m)
}

func TestSafeNextStaysInTheConsole(t *testing.T) {
	for in, want := range map[string]string{
		"/console/repos/acme/shop?type=user": "/console/repos/acme/shop?type=user",
		"https://evil.example/":              "/console/",
		"//evil.example/console/":            "/console/",
		"/console/\\evil":                    "/console/",
		"/consolex/":                         "/console/",
		"":                                   "/console/",
	} {
		assert.Equal(t, want, safeNext("/console", in), in)
	}
}

// The console loads nothing a memory points at (an image is a link to
// it) and shows no credential, even one stored before the server
// refused them.
func TestRenderShowsNoImageAndNoCredential(t *testing.T) {
	r := newRenderer()
	token := "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
	out := string(r.html("See ![the chart](https://evil.example/pixel.png \"chart\").\n\nThe token is " + token + ".\n"))
	assert.NotContains(t, out, "<img")
	assert.Contains(t, out, `<a href="https://evil.example/pixel.png"`)
	assert.Contains(t, out, "the chart</a>")
	assert.NotContains(t, out, token)
	assert.Contains(t, out, "[REDACTED]")
	lines := diff("a", "b", "old "+token+"\n", "new\n")
	for _, l := range lines.Lines {
		assert.NotContains(t, l.Text, token)
	}
}

func TestAgoSaysItAsAPersonWould(t *testing.T) {
	now := time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Hour, "just now"}, {0, "just now"}, {59 * time.Second, "just now"}, {time.Minute, "1 min ago"},
		{59 * time.Minute, "59 min ago"}, {time.Hour, "1 hour ago"}, {23 * time.Hour, "23 hours ago"},
		{30 * time.Hour, "yesterday"}, {50 * time.Hour, "2 days ago"}, {29 * 24 * time.Hour, "29 days ago"},
		{60 * 24 * time.Hour, "7 Oct"}, {400 * 24 * time.Hour, "1 Nov 2025"},
	} {
		assert.Equal(t, c.want, ago(now, now.Add(-c.d)), c.d)
	}
	assert.Equal(t, "2026-12-06 15:00:00 UTC", exact(now))
}

func TestSplitPairsRemovedAndAddedLines(t *testing.T) {
	d := diff("a", "b", "one\ntwo\nthree\nfour\n", "one\nTWO\nthree\nfour\nfive\n")
	require.NotNil(t, d.Split)
	var rows []string
	for _, r := range d.Split.Rows {
		if r.Hunk != "" {
			rows = append(rows, "hunk")
			continue
		}
		rows = append(rows, fmt.Sprintf("%d:%s:%s|%d:%s:%s", r.LeftNo, r.LeftKind, r.Left, r.RightNo, r.RightKind, r.Right))
	}
	assert.Equal(t, []string{"hunk", "1::one|1::one", "2:del:two|2:add:TWO", "3::three|3::three", "4::four|4::four", "0::|5:add:five"}, rows)
	assert.Nil(t, diff("a", "b", "same\n", "same\n").Split, "equal texts have no diff")

	// Without a final newline, the unified diff's "\ No newline" note is
	// no line of either text: the two lines still stand side by side.
	rows = nil
	for _, r := range diff("a", "b", "x", "y").Split.Rows {
		if r.Hunk == "" {
			rows = append(rows, fmt.Sprintf("%d:%s:%s|%d:%s:%s", r.LeftNo, r.LeftKind, r.Left, r.RightNo, r.RightKind, r.Right))
		}
	}
	assert.Equal(t, []string{"1:del:x|1:add:y"}, rows)
}
