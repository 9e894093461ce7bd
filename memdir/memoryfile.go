package memdir

import (
	"bytes"
	"cmp"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/adrg/frontmatter"
	"gopkg.in/yaml.v2"
)

// MemoryType is the kind of a memory file, from its frontmatter.
type MemoryType string

// The four memory types. A file with any other or no type has the zero
// MemoryType and stays usable.
const (
	// TypeUser: who the user is, their role, knowledge and preferences.
	TypeUser MemoryType = "user"
	// TypeFeedback: guidance the user gave about how to work.
	TypeFeedback MemoryType = "feedback"
	// TypeProject: facts about the work that the code and history do not show.
	TypeProject MemoryType = "project"
	// TypeReference: where to find things in outside systems.
	TypeReference MemoryType = "reference"
)

// ParseMemoryType returns the type named exactly by s; ok is false for
// anything else (including different case or surrounding spaces).
func ParseMemoryType(s string) (t MemoryType, ok bool) {
	switch MemoryType(s) {
	case TypeUser, TypeFeedback, TypeProject, TypeReference:
		return MemoryType(s), true
	}
	return "", false
}

// Frontmatter is the header of a memory file, read as Claude Code 2.1.328
// reads it: name, description and a metadata map, every other top-level
// key merged into metadata (metadata winning a clash). Type comes from
// metadata.type, else from a top-level type (the 2.1.88 layout).
type Frontmatter struct {
	Name        string
	Description string
	// Type is empty when the header names no known type.
	Type MemoryType
	// Metadata holds the header's metadata map and its other top-level
	// keys except type (which is Type), scalar values as text (nested
	// values are left out); nil when there are none. Claude Code keeps
	// node_type, originSessionId and modified here.
	Metadata map[string]string
}

// ErrFrontmatter is matched (errors.Is) by every *FrontmatterError.
var ErrFrontmatter = errors.New("memory file frontmatter cannot be read")

// Reasons a header cannot be read (FrontmatterError.Reason).
const (
	ReasonNotYAML  = "not valid YAML"
	ReasonNotUTF8  = "not valid UTF-8"
	defaultFMError = ReasonNotYAML
)

// FrontmatterError reports a header that cannot be read: not valid UTF-8,
// or not valid YAML even after the quoting retry. The file is still
// usable: ParseFrontmatter returns its whole content as the body. Line is
// the header line at fault when known (1 is the line after the opening
// "---"), else 0; the message never contains file content.
type FrontmatterError struct {
	Line int
	// Reason is ReasonNotYAML or ReasonNotUTF8 ("" reads as ReasonNotYAML).
	Reason string
}

func (e *FrontmatterError) Error() string {
	reason := cmp.Or(e.Reason, defaultFMError)
	msg := "memdir: memory file frontmatter is " + reason
	if e.Line > 0 {
		msg += " (near line " + strconv.Itoa(e.Line) + " of the header)"
	}
	return msg
}

// Is makes errors.Is(err, ErrFrontmatter) true.
func (e *FrontmatterError) Is(target error) bool { return target == ErrFrontmatter }

// yamlFormat is the only header format memory files use; adrg/frontmatter
// would otherwise also accept TOML and JSON headers.
func yamlFormat(unmarshal frontmatter.UnmarshalFunc) *frontmatter.Format {
	return frontmatter.NewFormat("---", "---", unmarshal)
}

// ParseFrontmatter splits a memory file into its header fields and body.
// The header is the YAML between a leading "---" line and the next "---"
// line. When the YAML does not parse, it is retried once with every value
// that YAML would misread (such as "description: a: b") put in quotes. A
// header that still fails yields empty fields, the whole content as body
// and a *FrontmatterError; a file without a header yields empty fields, the
// whole content and no error.
func ParseFrontmatter(content []byte) (Frontmatter, []byte, error) {
	content = bytes.TrimPrefix(content, []byte("\ufeff"))
	if line := invalidUTF8HeaderLine(content); line > 0 {
		return Frontmatter{}, content, &FrontmatterError{Line: line, Reason: ReasonNotUTF8}
	}
	if fm, body, ok := parseSimpleHeader(content); ok {
		return fm, body, nil
	}
	var fields headerFields
	body, err := frontmatter.Parse(bytes.NewReader(content), &fields, yamlFormat(unmarshalWithRetry))
	if err != nil {
		return Frontmatter{}, content, toFrontmatterError(err)
	}
	return fields.frontmatter(), body, nil
}

// frontmatter applies the read rules to the decoded header.
func (f headerFields) frontmatter() Frontmatter {
	meta := f.metadata()
	fm := Frontmatter{Name: f.Name, Description: f.Description}
	fm.Type, _ = ParseMemoryType(meta["type"])
	delete(meta, "type") // it is Type
	if len(meta) > 0 {
		fm.Metadata = meta
	}
	return fm
}

// headerFields decodes into strings, so YAML 1.1 booleans and numbers keep
// their text: a memory named "no" stays "no", as in YAML 1.2 readers.
type headerFields struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Type        string            `yaml:"type"`
	Meta        map[string]string `yaml:"metadata"`
	Rest        map[string]string `yaml:",inline"`
}

// metadata merges the top-level keys other than name and description
// into the metadata map, the metadata map winning a clash.
func (f headerFields) metadata() map[string]string {
	// Scalars keep their text (decoded into strings); a nested value
	// fails to decode as a string and is left out (empty).
	out := map[string]string{}
	for _, m := range []map[string]string{f.Rest, {"type": f.Type}, f.Meta} {
		for k, v := range m {
			if v != "" {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func unmarshalWithRetry(data []byte, v any) error {
	err := unmarshalTolerant(data, v)
	if err == nil {
		return nil
	}
	quoted := quoteProblematicValues(data)
	if bytes.Equal(quoted, data) {
		return err
	}
	if retryErr := unmarshalTolerant(quoted, v); retryErr != nil {
		return err
	}
	return nil
}

// unmarshalTolerant accepts a header where some field has the wrong shape
// (a list where text belongs): the fields that did decode are kept.
func unmarshalTolerant(data []byte, v any) error {
	err := yaml.Unmarshal(data, v)
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) {
		return nil
	}
	return err
}

var yamlLineNumber = regexp.MustCompile(`line (\d+)`)

func toFrontmatterError(err error) error {
	fe := &FrontmatterError{}
	if m := yamlLineNumber.FindStringSubmatch(err.Error()); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
	}
	return fe
}

var (
	// headerLine is "key: value" at the start of a line.
	headerLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*):[ \t]+(.*?)[ \t\r]*$`)
	// yamlTrouble matches values that plain YAML scalars cannot hold.
	yamlTrouble = regexp.MustCompile("[{}\\[\\]*&#!|>%@`]|: |:$|^[-?,'\"]")
)

// quoteProblematicValues double-quotes each top-level "key: value" whose
// value YAML would misread, leaving already-quoted values alone.
func quoteProblematicValues(data []byte) []byte {
	ls := strings.Split(string(data), "\n")
	for i, l := range ls {
		m := headerLine.FindStringSubmatch(l)
		if m == nil || m[2] == "" || isQuoted(m[2]) || !yamlTrouble.MatchString(m[2]) {
			continue
		}
		escaped := strings.ReplaceAll(strings.ReplaceAll(m[2], `\`, `\\`), `"`, `\"`)
		ls[i] = m[1] + `: "` + escaped + `"`
	}
	return []byte(strings.Join(ls, "\n"))
}

func isQuoted(v string) bool {
	if len(v) < 2 {
		return false
	}
	return (v[0] == '"' && v[len(v)-1] == '"') || (v[0] == '\'' && v[len(v)-1] == '\'')
}

// invalidUTF8HeaderLine returns the first header line (1 = the line after
// the opening "---") that is not valid UTF-8, or 0.
func invalidUTF8HeaderLine(content []byte) int {
	if utf8.Valid(content) || !bytes.HasPrefix(content, []byte("---")) {
		return 0
	}
	lines := bytes.Split(content, []byte("\n"))
	for i, l := range lines[1:] {
		if bytes.Equal(bytes.TrimRight(l, "\r \t"), []byte("---")) {
			return 0
		}
		if !utf8.Valid(l) {
			return i + 1
		}
	}
	return 0
}
