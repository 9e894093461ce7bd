package screen

import (
	"path"
	"regexp"
	"strings"
)

// The index rules.
const (
	RuleIndexExtraLink = "index-extra-link"
	RuleIndexLinkOut   = "index-link-out"
)

var (
	// inlineLink is a Markdown inline link or image: [text](target).
	inlineLink = regexp.MustCompile(`!?\[[^\]\n]*\]\(\s*<?([^)\s>]*)>?[^)\n]*\)`)
	// autolink is <scheme:...> or <user@host>.
	autolink = regexp.MustCompile(`<(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*|[^\s<>@]+@[^\s<>@]+)>`)
	// refDef is a reference definition: [label]: target.
	refDef = regexp.MustCompile(`^[ ]{0,3}\[[^\]\n]+\]:\s*<?(\S*?)>?(?:\s|$)`)
)

// findIndexLinks returns the findings of an index (MEMORY.md) text: per
// line, a link that leaves the index's directory (index-link-out) and
// every link after the first (index-extra-link).
func findIndexLinks(text string) []Finding {
	var out []Finding
	var ln lines
	off := 0
	for _, line := range strings.SplitAfter(text, "\n") {
		start := off
		off += len(line)
		if !strings.ContainsAny(line, "[<") {
			continue
		}
		type link struct {
			at     int
			target string
			out    bool
		}
		var links []link
		for _, m := range inlineLink.FindAllStringSubmatchIndex(line, -1) {
			t := line[m[2]:m[3]]
			links = append(links, link{at: m[0], target: t, out: !insideTarget(t)})
		}
		for _, m := range autolink.FindAllStringIndex(line, -1) {
			links = append(links, link{at: m[0], out: true})
		}
		if m := refDef.FindStringSubmatchIndex(line); m != nil {
			links = append(links, link{at: m[0], out: !insideTarget(line[m[2]:m[3]])})
		}
		if len(links) == 0 {
			continue
		}
		first := 0
		for i, l := range links {
			if l.at < links[first].at {
				first = i
			}
		}
		for i, l := range links {
			id := ""
			switch {
			case l.out:
				id = RuleIndexLinkOut
			case i != first:
				id = RuleIndexExtraLink
			default:
				continue
			}
			if ln == nil {
				ln = newLines(text)
			}
			at := start + l.at
			out = append(out, Finding{Screen: ScreenIndexLink, RuleID: id, Label: "index pointer link", Offset: at, Line: ln.at(at)})
		}
	}
	sortFindings(out)
	return out
}

// insideTarget reports whether a link target is a file inside the
// index's directory: relative, no scheme, not leaving through "..".
func insideTarget(t string) bool {
	if t == "" || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "\\") || strings.HasPrefix(t, "~") ||
		strings.Contains(t, "\\") || strings.HasPrefix(t, "#") {
		return false
	}
	if i := strings.IndexByte(t, ':'); i >= 0 {
		if j := strings.IndexByte(t, '/'); j < 0 || i < j {
			return false // a scheme (https:, file:, mailto:, javascript:)
		}
	}
	if i := strings.IndexAny(t, "?#"); i >= 0 {
		t = t[:i]
	}
	c := path.Clean(t)
	return c != "." && c != ".." && !strings.HasPrefix(c, "../")
}
