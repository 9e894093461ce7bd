package console

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/linediff"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
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

// html renders Markdown; text it cannot render is shown as text.
func (r *renderer) html(src string) template.HTML {
	var b bytes.Buffer
	if err := r.md.Convert([]byte(src), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	// The sanitizer's output is the only HTML the console passes through
	// unescaped.
	return template.HTML(r.policy.SanitizeBytes(b.Bytes())) //nolint:gosec // sanitized just above
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

// diff returns the unified diff from a to b as lines to show.
func diff(fromName, toName, a, b string) []diffLine {
	text := linediff.Unified(fromName, toName, []byte(a), []byte(b))
	if text == "" {
		return nil
	}
	var out []diffLine
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
		out = append(out, diffLine{Kind: kind, Text: line})
	}
	return out
}
