package screen

import (
	"net/url"
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
	// bareLink is what a renderer or a model follows without Markdown: a
	// URL, a www. host, an HTML anchor or image.
	bareLink = regexp.MustCompile(`(?i)\b(?:[a-z][a-z0-9+.\-]{1,31}://|www\.)[^\s<>()]+|<(?:a|img|link|iframe)\b[^>]*>`)
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
		if !strings.ContainsAny(line, "[<:.") {
			continue
		}
		var links []indexLink
		for _, m := range inlineLink.FindAllStringSubmatchIndex(line, -1) {
			// Only the target is the link's own URL: a URL in its text or
			// title is one more way out.
			links = append(links, indexLink{at: m[0], from: m[2], to: m[3], out: !insideTarget(line[m[2]:m[3]])})
		}
		for _, m := range autolink.FindAllStringIndex(line, -1) {
			links = append(links, indexLink{at: m[0], from: m[0], to: m[1], out: true})
		}
		if m := refDef.FindStringSubmatchIndex(line); m != nil {
			links = append(links, indexLink{at: m[0], from: m[2], to: m[3], out: !insideTarget(line[m[2]:m[3]])})
		}
		for _, m := range bareLink.FindAllStringIndex(line, -1) {
			if !within(links, m[0]) {
				links = append(links, indexLink{at: m[0], from: m[0], to: m[1], out: true})
			}
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

// indexLink is a link found on an index line: where it starts, where
// its own target lies (from, to), and whether it leaves the index's
// directory.
type indexLink struct {
	at, from, to int
	out          bool
}

// within reports whether offset at lies in one of links' own targets (a
// URL that is an inline link's target, or an autolink, is that link; one
// in a link's text or title is not).
func within(links []indexLink, at int) bool {
	for _, l := range links {
		if at >= l.from && at < l.to {
			return true
		}
	}
	return false
}

// insideTarget reports whether a link target is a file inside the
// index's directory: relative, no scheme, not leaving through ".." (as
// written or percent-encoded).
func insideTarget(t string) bool {
	if u, err := url.PathUnescape(t); err == nil && u != t {
		t = u
	} else if err != nil {
		return false
	}
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
