package console

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/linediff"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// renderer turns memory Markdown into HTML that is safe to show: goldmark
// drops raw HTML and dangerous link targets, and a sanitizer keeps only
// the elements and attributes of ordinary text after it (no script, no
// event handler, no style, no URL scheme other than http, https and
// mailto).
type renderer struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newRenderer() *renderer {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	return &renderer{md: goldmark.New(goldmark.WithExtensions(extension.GFM)), policy: p}
}

// html renders Markdown, credentials redacted; text it cannot render is
// shown as text. An image is rendered as a link to it: the console loads
// nothing a memory points at.
func (r *renderer) html(src string) template.HTML {
	src = redacted(src)
	var b bytes.Buffer
	doc := r.md.Parser().Parse(text.NewReader([]byte(src)))
	imagesAsLinks(doc)
	if err := r.md.Renderer().Render(&b, []byte(src), doc); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	// The sanitizer's output is the only HTML the console passes through
	// unescaped.
	return template.HTML(r.policy.SanitizeBytes(b.Bytes())) //nolint:gosec // sanitized just above
}

// imagesAsLinks replaces every image of doc by a link to its source,
// with the image's text.
func imagesAsLinks(doc ast.Node) {
	var images []*ast.Image
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if img, ok := n.(*ast.Image); ok && entering {
			images = append(images, img)
		}
		return ast.WalkContinue, nil
	})
	for _, img := range images {
		link := ast.NewLink()
		link.Destination, link.Title = img.Destination, img.Title
		for c := img.FirstChild(); c != nil; {
			next := c.NextSibling()
			link.AppendChild(link, c)
			c = next
		}
		img.Parent().ReplaceChild(img.Parent(), img, link)
	}
}

// field is one line of a memory's frontmatter.
type field struct{ Name, Value string }

// splitFrontmatter separates a memory's frontmatter (between "---" lines
// at the top) from its body. Lines of the form "name: value" become
// fields; anything else in the block is kept as a field without a name.
func splitFrontmatter(content string) (fields []field, body string) {
	s := strings.TrimPrefix(content, "\ufeff")
	if !strings.HasPrefix(s, "---\n") && !strings.HasPrefix(s, "---\r\n") {
		return nil, content
	}
	rest := s[strings.Index(s, "\n")+1:]
	end := -1
	for off := 0; off <= len(rest); {
		nl := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if nl >= 0 {
			line = rest[off : off+nl]
		}
		if strings.TrimRight(line, "\r") == "---" {
			end = off
			body = ""
			if nl >= 0 {
				body = rest[off+nl+1:]
			}
			break
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	if end < 0 {
		return nil, content
	}
	for line := range strings.SplitSeq(rest[:end], "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.ContainsAny(name, " \t") {
			fields = append(fields, field{Value: line})
			continue
		}
		fields = append(fields, field{Name: name, Value: strings.Trim(strings.TrimSpace(value), `"'`)})
	}
	return fields, body
}

// fieldValue returns the value of the named frontmatter field.
func fieldValue(fields []field, name string) string {
	for _, f := range fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// diffLine is one line of a unified diff, with its kind for styling.
type diffLine struct {
	Kind string // "add", "del", "hunk", "head", "ctx"
	Text string
}

// redactor finds credentials in what the console shows.
var redactor = sync.OnceValue(secrets.New)

// redacted is content as the console shows it: every credential, even
// one a server stored before it refused them, replaced by [REDACTED].
func redacted(content string) string { return redactor().Redact(content) }

// diffView is a change as the pages show it: side by side on a wide
// screen, unified on a narrow one (the style sheet picks).
type diffView struct {
	Lines []diffLine // the unified diff; none when the texts are equal
	Split *splitDiff
}

// splitDiff is the side-by-side form of a unified diff.
type splitDiff struct {
	From, To string
	Rows     []splitRow
}

// splitRow is one row of a side-by-side diff: a hunk header, or a line
// of the earlier text beside a line of the later one (either may be
// empty, with line number 0).
type splitRow struct {
	Hunk                string
	Left, Right         string
	LeftKind, RightKind string // "del", "add" or "" for context
	LeftNo, RightNo     int
}

// diff returns the change from a to b as the pages show it, with
// credentials redacted.
func diff(fromName, toName, a, b string) diffView {
	text := linediff.Unified(fromName, toName, []byte(redacted(a)), []byte(redacted(b)))
	if text == "" {
		return diffView{}
	}
	var lines []diffLine
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		kind := "ctx"
		switch {
		case i < 2:
			kind = "head"
		case strings.HasPrefix(line, "@@"):
			kind = "hunk"
		case strings.HasPrefix(line, "+"):
			kind = "add"
		case strings.HasPrefix(line, "-"):
			kind = "del"
		}
		lines = append(lines, diffLine{Kind: kind, Text: line})
	}
	return diffView{Lines: lines, Split: split(fromName, toName, lines)}
}

// split lays a unified diff out side by side: context on both sides, and
// each run of removed lines beside the run of added lines that follows.
func split(fromName, toName string, lines []diffLine) *splitDiff {
	out := &splitDiff{From: fromName, To: toName}
	var left, right int // the next line number on each side
	var dels, adds []string
	flush := func() {
		for i := range max(len(dels), len(adds)) {
			var row splitRow
			if i < len(dels) {
				row.Left, row.LeftKind, row.LeftNo = dels[i], "del", left
				left++
			}
			if i < len(adds) {
				row.Right, row.RightKind, row.RightNo = adds[i], "add", right
				right++
			}
			out.Rows = append(out.Rows, row)
		}
		dels, adds = dels[:0], adds[:0]
	}
	for _, l := range lines {
		switch l.Kind {
		case "head":
		case "hunk":
			flush()
			var a, b int
			if _, err := fmt.Sscanf(l.Text, "@@ -%d", &a); err == nil {
				left = max(a, 1)
			}
			if i := strings.Index(l.Text, " +"); i >= 0 {
				if _, err := fmt.Sscanf(l.Text[i:], " +%d", &b); err == nil {
					right = max(b, 1)
				}
			}
			out.Rows = append(out.Rows, splitRow{Hunk: l.Text})
		case "del":
			if len(adds) > 0 {
				flush()
			}
			dels = append(dels, l.Text[1:])
		case "add":
			adds = append(adds, l.Text[1:])
		case "ctx":
			if strings.HasPrefix(l.Text, "\\") {
				continue // "\ No newline at end of file": a note, not a line
			}
			fallthrough
		default:
			flush()
			text := strings.TrimPrefix(l.Text, " ")
			out.Rows = append(out.Rows, splitRow{Left: text, Right: text, LeftNo: left, RightNo: right})
			left++
			right++
		}
	}
	flush()
	return out
}

// ago says how long before now t was, as a person says it ("3 min ago",
// "yesterday"); older than a month, the date.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "min") + " ago"
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	case d < 48*time.Hour:
		return "yesterday"
	case d < 30*24*time.Hour:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	case now.Year() == t.Year():
		return t.UTC().Format("2 Jan")
	}
	return t.UTC().Format("2 Jan 2006")
}

func plural(n int, unit string) string {
	if n == 1 || unit == "min" {
		return strconv.Itoa(n) + " " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// exact is the time as the hover shows it.
func exact(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
