package memdir

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules a memory file or an index line can break, one that makes the
// file or the line unusable (MemoryError.Problem): `agentmem lint` reports
// each one it finds in a directory, and Save refuses to write one. (Lint's
// advice, such as a missing description or a near-duplicate, is not a
// rule: Save writes such a memory.)
const (
	// problemFileName: the file's name is not valid UTF-8 or holds
	// control characters (an index pointer could not name it).
	problemFileName = "bad-file-name"
	// problemNotText: the content is not valid UTF-8 or holds a NUL byte.
	problemNotText = "not-text"
	// problemFrontmatter: the header is not valid YAML (or not UTF-8).
	problemFrontmatter = "bad-frontmatter"
	// problemLongEntry: an index line is longer than maxIndexLineRunes.
	problemLongEntry = "long-entry"
)

// MemoryError reports a memory file or index line that breaks a rule.
// errors.Is(err, ErrInvalidMemory) is true. The message names the rule,
// never the content.
type MemoryError struct {
	// Problem names the rule: "bad-file-name" (the file's name is not
	// valid UTF-8 or holds control characters), "not-text" (the content
	// is not valid UTF-8 or holds a NUL byte), "bad-frontmatter" (the
	// header is not valid YAML or not UTF-8) or "long-entry" (an index
	// line longer than maxIndexLineRunes).
	Problem string
	// Line is the line at fault (1-based) when known, else 0.
	Line int
	// Detail says what is wrong and what to do.
	Detail string
}

func (e *MemoryError) Error() string {
	msg := "memdir: " + ErrInvalidMemory.Error() + ": " + e.Problem
	if e.Line > 0 {
		msg += " (line " + strconv.Itoa(e.Line) + ")"
	}
	return msg + ": " + e.Detail
}

// Is makes errors.Is(err, ErrInvalidMemory) true.
func (e *MemoryError) Is(target error) bool { return target == ErrInvalidMemory }

// CheckMemoryFile returns every rule the memory file rel (relative to the
// memory directory, "/"-separated) with this content breaks, in the order
// above; none for a file that breaks none.
func CheckMemoryFile(rel string, content []byte) []*MemoryError {
	var out []*MemoryError
	if !validName(rel) {
		out = append(out, &MemoryError{Problem: problemFileName, Detail: "the file name is not valid UTF-8 or holds control characters; rename it"})
	}
	_, _, err := ParseFrontmatter(content)
	if err != nil {
		fe, _ := err.(*FrontmatterError)
		line, why := 0, "the frontmatter is not valid YAML, even with values quoted"
		if fe != nil {
			if fe.Line > 0 {
				line = fe.Line + 1 // the file's line: after the opening ---
			}
			if fe.Reason == ReasonNotUTF8 {
				why = "the frontmatter is not valid UTF-8"
			}
		}
		return append(out, &MemoryError{Problem: problemFrontmatter, Line: line, Detail: why})
	}
	if !utf8.Valid(content) || strings.ContainsRune(string(content), 0) {
		return append(out, &MemoryError{Problem: problemNotText, Detail: "the file is not UTF-8 text (binary, or another encoding)"})
	}
	return out
}

// CheckIndexLine returns a *MemoryError when line, one line of a
// MEMORY.md, is longer than maxIndexLineRunes; nil otherwise.
func CheckIndexLine(line string) *MemoryError {
	if n := utf8.RuneCountInString(line); n > maxIndexLineRunes {
		return &MemoryError{Problem: problemLongEntry, Detail: strconv.Itoa(n) + " characters; keep index entries under ~" +
			strconv.Itoa(maxIndexLineRunes) + " and move detail into the topic file"}
	}
	return nil
}

// validName reports whether a memory file's name may go into an index:
// valid UTF-8 without control characters.
func validName(rel string) bool {
	if !utf8.ValidString(rel) {
		return false
	}
	for _, r := range rel {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
