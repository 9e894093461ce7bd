package memdir

import (
	"regexp"
	"strings"
)

// stripIndexComments removes from index text the HTML comments that stand
// as blocks of their own, as Claude Code (2.1.328 and later) does before
// it limits and sends a MEMORY.md: a comment that opens a top-level
// Markdown block (no more than three spaces in, outside code, lists, block
// quotes and other HTML blocks) is removed with the rest of its last line
// and the line breaks after it; what else stood on those lines stays. A
// comment inside a line of text, in a list item or a code block, an
// unclosed one, and a link definition ("[ref]: url") stay as they are.
// Text with a removed comment has its line ends turned into LF; text with
// none is returned unchanged.
func stripIndexComments(s string) string {
	if !strings.Contains(s, "<!--") {
		return s
	}
	n := s
	if strings.Contains(n, "\r") {
		n = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(n)
	}
	var b strings.Builder
	done := 0 // n[:done] is written to b or dropped
	stripped := false
	inPara := false // the line before was paragraph text
	listIndent := 0 // the content column of the open list item; 0 outside a list
	blankBefore := false
	for i := 0; i < len(n); {
		eol := strings.IndexByte(n[i:], '\n')
		next := len(n)
		if eol >= 0 {
			eol += i
			next = eol + 1
		} else {
			eol = len(n)
		}
		line := n[i:eol]
		if strings.TrimSpace(line) == "" {
			blankBefore, inPara = true, false
			i = next
			continue
		}
		ind, rest := indentOf(line)
		if listIndent > 0 {
			switch {
			case ind >= listIndent:
				blankBefore = false
				i = next
				continue
			case ind <= 3 && listItemIndent(rest, ind) > 0:
				listIndent = listItemIndent(rest, ind)
				blankBefore = false
				i = next
				continue
			case !blankBefore && !startsBlock(rest, ind):
				i = next // a lazy continuation of the item's paragraph
				continue
			}
			listIndent = 0
		}
		blankBefore = false
		if ind >= 4 {
			i = next // indented code, or a paragraph's continuation
			continue
		}
		switch {
		case strings.HasPrefix(rest, "<!--"):
			end := commentBlockEnd(n, eol-len(rest))
			raw := n[i:end]
			if strings.Contains(raw, "-->") {
				residue := htmlComment.ReplaceAllString(raw, "")
				b.WriteString(n[done:i])
				if strings.TrimSpace(residue) != "" {
					b.WriteString(residue)
				}
				done, stripped = end, true
			}
			i, inPara = end, false
			continue
		case fenceOpen(rest) != "":
			i, inPara = fenceEnd(n, next, fenceOpen(rest)), false
			continue
		case htmlBlockStart(rest, inPara):
			i, inPara = htmlBlockEnd(n, i, rest), false
			continue
		case thematicBreak.MatchString(rest) || atxHeading.MatchString(rest):
			inPara = false
		case listItemIndent(rest, ind) > 0 && (!inPara || paraInterruptingItem.MatchString(rest)):
			listIndent, inPara = listItemIndent(rest, ind), false
		default:
			inPara = true // paragraph text, a block quote, a link definition
		}
		i = next
	}
	if !stripped {
		return s
	}
	b.WriteString(n[done:])
	return b.String()
}

var (
	htmlComment          = regexp.MustCompile(`<!--[\s\S]*?-->`)
	thematicBreak        = regexp.MustCompile(`^((?:-[\t ]*){3,}|(?:_[ \t]*){3,}|(?:\*[ \t]*){3,})$`)
	atxHeading           = regexp.MustCompile(`^#{1,6}(?:[ \t]|$)`)
	listMarker           = regexp.MustCompile(`^(?:[*+-]|\d{1,9}[.)])(?:[ \t]+|$)`)
	paraInterruptingItem = regexp.MustCompile(`^(?:[*+-]|1[.)])[ \t]+\S`)
	fence                = regexp.MustCompile("^(?:`{3,}|~{3,})")
	htmlRaw              = regexp.MustCompile(`(?i)^<(script|pre|style|textarea)(?:[\s>]|$)`)
	htmlBlockTag         = regexp.MustCompile(`(?i)^</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|meta|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul)(?: +|/?>|$)`)
	htmlWholeTag         = regexp.MustCompile(`(?i)^(?:<[a-z][\w-]*(?:\s+[a-z_:][\w.:-]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>` + "`" + `]+))?)*\s*/?>|</[a-z][\w-]*\s*>)[ \t]*$`)
	htmlBegin            = regexp.MustCompile(`(?i)^<(?:[a-z].*>|!--)`)
)

// indentOf returns the column a line's text starts at (a tab moves to the
// next multiple of four) and the text from there.
func indentOf(line string) (int, string) {
	col := 0
	for k, r := range line {
		switch r {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, line[k:]
		}
	}
	return col, ""
}

// listItemIndent returns the content column of a list item that opens
// with rest at column ind, or 0 when rest opens none.
func listItemIndent(rest string, ind int) int {
	if ind > 3 || thematicBreak.MatchString(rest) {
		return 0
	}
	m := listMarker.FindString(rest)
	if m == "" {
		return 0
	}
	marker := strings.TrimRight(m, " \t")
	spaces := len(m) - len(marker)
	if spaces == 0 || spaces > 4 || len(m) == len(rest) {
		spaces = 1
	}
	return ind + len(marker) + spaces
}

// startsBlock reports whether rest, less indented than the open list
// item, ends the item without a blank line before it.
func startsBlock(rest string, ind int) bool {
	return ind <= 3 && (fenceOpen(rest) != "" || atxHeading.MatchString(rest) || thematicBreak.MatchString(rest) || htmlBegin.MatchString(rest))
}

// fenceOpen returns the fence a code block opens with, or "".
func fenceOpen(rest string) string {
	f := fence.FindString(rest)
	if f != "" && f[0] == '`' && strings.Contains(rest[len(f):], "`") {
		return "" // a backtick fence's info string holds no backtick
	}
	return f
}

// fenceEnd returns the offset after the line that closes a fenced code
// block whose content starts at from, or the end of the text.
func fenceEnd(n string, from int, open string) int {
	for i := from; i < len(n); {
		eol := strings.IndexByte(n[i:], '\n')
		next := len(n)
		if eol >= 0 {
			next = i + eol + 1
		}
		ind, rest := indentOf(strings.TrimRight(n[i:next], "\n"))
		body := strings.TrimRight(rest, " \t")
		if ind <= 3 && len(body) >= len(open) && strings.Trim(body, open[:1]) == "" {
			return next
		}
		i = next
	}
	return len(n)
}

// commentBlockEnd returns the end of the HTML block of a comment that
// opens at at: the comment ("<!-->" and "<!--->" close at once; an
// unclosed one runs to the end of the text), the rest of its last line,
// and the line breaks that follow.
func commentBlockEnd(n string, at int) int {
	body := at + len("<!--")
	end := len(n)
	switch {
	case strings.HasPrefix(n[body:], ">"):
		end = body + 1
	case strings.HasPrefix(n[body:], "->"):
		end = body + 2
	default:
		if k := strings.Index(n[body:], "-->"); k >= 0 {
			end = body + k + len("-->")
		}
	}
	return pastLineBreaks(n, end)
}

// pastLineBreaks returns the end of the rest of the line at end and of the
// line breaks that follow it (len(n) when that line is the last).
func pastLineBreaks(n string, end int) int {
	k := strings.IndexByte(n[end:], '\n')
	if k < 0 {
		return len(n)
	}
	end += k
	for end < len(n) && n[end] == '\n' {
		end++
	}
	return end
}

// htmlBlockStart reports whether rest opens an HTML block other than a
// comment; a lone tag of no block element does not interrupt a paragraph.
func htmlBlockStart(rest string, inPara bool) bool {
	if !strings.HasPrefix(rest, "<") {
		return false
	}
	if htmlRaw.MatchString(rest) || strings.HasPrefix(rest, "<?") || strings.HasPrefix(rest, "<![CDATA[") || htmlBlockTag.MatchString(rest) {
		return true
	}
	if len(rest) > 2 && rest[1] == '!' && rest[2] >= 'A' && rest[2] <= 'Z' {
		return true
	}
	return !inPara && htmlWholeTag.MatchString(rest)
}

// htmlBlockEnd returns the end of the HTML block (not a comment) that
// opens at line start i with rest.
func htmlBlockEnd(n string, i int, rest string) int {
	closer := ""
	switch {
	case htmlRaw.MatchString(rest):
		closer = "</" + strings.ToLower(htmlRaw.FindStringSubmatch(rest)[1]) + ">"
	case strings.HasPrefix(rest, "<?"):
		closer = "?>"
	case strings.HasPrefix(rest, "<![CDATA["):
		closer = "]]>"
	case rest[1] == '!':
		closer = ">"
	}
	if closer != "" {
		from := i + strings.Index(n[i:], rest[:1]) + 1
		k := strings.Index(strings.ToLower(n[from:]), closer)
		if k < 0 {
			return len(n)
		}
		return pastLineBreaks(n, from+k+len(closer))
	}
	// Up to a blank line.
	for j := i; j < len(n); {
		eol := strings.IndexByte(n[j:], '\n')
		if eol < 0 {
			return len(n)
		}
		j += eol + 1
		k := j
		for k < len(n) && (n[k] == ' ' || n[k] == '\t') {
			k++
		}
		if k >= len(n) || n[k] == '\n' {
			return j
		}
	}
	return len(n)
}
