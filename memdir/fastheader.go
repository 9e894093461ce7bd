package memdir

import (
	"bytes"
	"strings"
)

// parseSimpleHeader is the fast path of ParseFrontmatter for the headers
// that almost every memory file has: "---", then lines of the form
// "key: plain text", then "---". It accepts only input on which a YAML
// parser is certain to agree with a plain split at ": " and reports ok ==
// false for anything else (indentation, quotes, flow or block indicators,
// comments, duplicate keys, null-like or empty values, CR characters), so
// the caller falls back to the full parser. FuzzSimpleHeaderAgrees checks
// the agreement.
func parseSimpleHeader(content []byte) (fm Frontmatter, body []byte, ok bool) {
	if !bytes.HasPrefix(content, []byte("---\n")) || bytes.IndexByte(content, '\r') >= 0 {
		return Frontmatter{}, nil, false
	}
	rest := content[4:]
	var seen [2]bool
	seenType := false
	for {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return Frontmatter{}, nil, false // unterminated, or last line without newline
		}
		line := rest[:nl]
		rest = rest[nl+1:]
		if string(line) == "---" {
			return fm, rest, true
		}
		key, value, ok := splitSimpleLine(line)
		if !ok {
			return Frontmatter{}, nil, false
		}
		switch key {
		case "name", "description":
			slot := 0
			if key == "description" {
				slot = 1
			}
			if seen[slot] {
				return Frontmatter{}, nil, false
			}
			seen[slot] = true
			if slot == 0 {
				fm.Name = value
			} else {
				fm.Description = value
			}
		case "metadata":
			return Frontmatter{}, nil, false // a map: the full parser reads it
		default:
			// Every other key is metadata (2.1.328's read rule); a
			// repeated one takes the full parser.
			if key == "type" {
				if seenType {
					return Frontmatter{}, nil, false
				}
				seenType = true
				fm.Type, _ = ParseMemoryType(value)
				continue
			}
			if _, dup := fm.Metadata[key]; dup {
				return Frontmatter{}, nil, false
			}
			if fm.Metadata == nil {
				fm.Metadata = map[string]string{}
			}
			fm.Metadata[key] = value
		}
	}
}

// splitSimpleLine splits "key: value" where both parts are unambiguous
// YAML plain scalars.
func splitSimpleLine(line []byte) (key, value string, ok bool) {
	i := bytes.Index(line, []byte(": "))
	if i <= 0 {
		return "", "", false
	}
	for _, c := range line[:i] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return "", "", false
		}
	}
	v := strings.TrimRight(string(line[i+2:]), " ")
	if v == "" || v[0] == ' ' || !plainSafe(v) {
		return "", "", false
	}
	return string(line[:i]), v, true
}

// plainSafe reports whether v reads back as exactly itself when it is a
// YAML plain scalar decoded into a string.
func plainSafe(v string) bool {
	if strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`~", rune(v[0])) {
		return false
	}
	switch strings.ToLower(v) {
	case "null", "~":
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c == 0x7f {
			return false // tabs and control characters
		}
		if c >= 0x80 {
			return false // leave non-ASCII (including odd spaces and BOMs) to the full parser
		}
	}
	return !strings.Contains(v, ": ") && !strings.Contains(v, " #") && !strings.HasSuffix(v, ":")
}
