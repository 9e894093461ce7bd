package memdir

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MemoryProblem names a rule that a memory file or an index line breaks,
// one that makes the file or the line unusable: `agentmem lint` reports
// each one it finds in a directory, and Save refuses to write one. (Lint's
// advice, such as a missing description or a near-duplicate, is not a
// rule: Save writes such a memory.)
type MemoryProblem string

// The rules CheckMemoryFile and CheckIndexLine apply.
const (
	// ProblemFileName: the file's name is not valid UTF-8 or holds
	// control characters (an index pointer could not name it).
	ProblemFileName MemoryProblem = "bad-file-name"
	// ProblemNotText: the content is not valid UTF-8 or holds a NUL byte.
	ProblemNotText MemoryProblem = "not-text"
	// ProblemFrontmatter: the header is not valid YAML (or not UTF-8).
	ProblemFrontmatter MemoryProblem = "bad-frontmatter"
	// ProblemLongEntry: an index line is longer than MaxIndexLineRunes.
	ProblemLongEntry MemoryProblem = "long-entry"
)

// MemoryError reports a memory file or index line that breaks a rule.
// errors.Is(err, ErrInvalidMemory) is true. The message names the rule,
// never the content.
type MemoryError struct {
	Problem MemoryProblem
	// Line is the line at fault (1-based) when known, else 0.
	Line int
	// Detail says what is wrong and what to do.
	Detail string
}

func (e *MemoryError) Error() string {
	msg := "memdir: " + ErrInvalidMemory.Error() + ": " + string(e.Problem)
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
		out = append(out, &MemoryError{Problem: ProblemFileName, Detail: "the file name is not valid UTF-8 or holds control characters; rename it"})
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
		return append(out, &MemoryError{Problem: ProblemFrontmatter, Line: line, Detail: why})
	}
	if !utf8.Valid(content) || strings.ContainsRune(string(content), 0) {
		return append(out, &MemoryError{Problem: ProblemNotText, Detail: "the file is not UTF-8 text (binary, or another encoding)"})
	}
	return out
}

// CheckIndexLine returns a *MemoryError when line, one line of a
// MEMORY.md, is longer than MaxIndexLineRunes; nil otherwise.
func CheckIndexLine(line string) *MemoryError {
	if n := utf8.RuneCountInString(line); n > MaxIndexLineRunes {
		return &MemoryError{Problem: ProblemLongEntry, Detail: strconv.Itoa(n) + " characters; keep index entries under ~" +
			strconv.Itoa(MaxIndexLineRunes) + " and move detail into the topic file"}
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
