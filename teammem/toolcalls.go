package teammem

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// The Claude Code tools the detectors look for, by role. A host whose
// tools are named otherwise gives each call the name of the Claude Code
// tool it stands for, as for memdir.Dir.CheckToolCall.
var (
	// writeTools replace a whole file ("file_path", "content").
	writeTools = []string{memdir.ToolWrite}
	// editTools change part of a file: "file_path" or "notebook_path",
	// and "old_string"/"new_string" (Edit), an "edits" array of those
	// (MultiEdit) or "new_source" (NotebookEdit).
	editTools = []string{memdir.ToolEdit, memdir.ToolMultiEdit, memdir.ToolNotebookEdit}
	// searchTools look through files below "path" (or an absolute
	// "pattern" when path is empty).
	searchTools = []string{memdir.ToolGrep, memdir.ToolGlob}
)

// ToolDetector recognises Claude Code tool calls that touch a team
// directory. It is a value; safe for concurrent use.
type ToolDetector struct {
	// TeamDir is the team directory (TeamMemPath).
	TeamDir string
	// AutoMemDir, when set, makes summaries name files relative to it
	// ("team/notes/a.md"); otherwise they are relative to TeamDir's parent.
	AutoMemDir string
}

// field returns a text field of a call's input ("" when absent, not text,
// or the input is not a JSON object: such a call targets nothing).
func field(c llm.ToolCall, name string) string {
	in, _ := c.Fields()
	s, _ := in[name].(string)
	return s
}

// targetPath returns the file a write or edit call targets.
func targetPath(c llm.ToolCall) string {
	if p := field(c, "file_path"); p != "" {
		return p
	}
	return field(c, "notebook_path")
}

// searchPath returns the directory or pattern a search call targets.
func searchPath(c llm.ToolCall) string {
	if p := field(c, "path"); p != "" {
		return p
	}
	if p := field(c, "pattern"); filepath.IsAbs(p) {
		return p
	}
	return ""
}

// IsTeamMemorySearch reports whether call is a search (Grep, Glob or a
// configured equivalent) whose target lies inside the team directory.
func (d ToolDetector) IsTeamMemorySearch(call llm.ToolCall) bool {
	if !slices.Contains(searchTools, call.Name) {
		return false
	}
	p := searchPath(call)
	return p != "" && (IsTeamMemPath(d.TeamDir, p) || filepath.Clean(p) == filepath.Clean(d.TeamDir))
}

// IsTeamMemoryWriteOrEdit reports whether call writes or edits a file
// inside the team directory. allowedTools scopes it: when non-nil, only
// calls of tools it names count (a tool the agent may not use is ignored).
func (d ToolDetector) IsTeamMemoryWriteOrEdit(call llm.ToolCall, allowedTools []string) bool {
	if allowedTools != nil && !slices.Contains(allowedTools, call.Name) {
		return false
	}
	if !slices.Contains(writeTools, call.Name) && !slices.Contains(editTools, call.Name) {
		return false
	}
	return IsTeamMemPath(d.TeamDir, targetPath(call))
}

// AppendTeamMemorySummaryParts appends one human-readable line about call
// to parts when it touched team memory ("Edited team/notes/foo.md",
// "Wrote team/ci.md", "Searched team/decisions/") and returns the slice; a
// call that did not touch team memory leaves parts as they were. Callers
// compose several calls into one summary this way.
func (d ToolDetector) AppendTeamMemorySummaryParts(parts []string, call llm.ToolCall, allowedTools []string) []string {
	switch {
	case d.IsTeamMemoryWriteOrEdit(call, allowedTools):
		verb := "Edited"
		if slices.Contains(writeTools, call.Name) {
			verb = "Wrote"
		}
		return append(parts, verb+" "+d.display(targetPath(call), false))
	case (allowedTools == nil || slices.Contains(allowedTools, call.Name)) && d.IsTeamMemorySearch(call):
		return append(parts, "Searched "+d.display(searchPath(call), field(call, "path") != ""))
	}
	return parts
}

// display names p relative to the auto-memory dir, with "/" separators; a
// searched directory ends in "/".
func (d ToolDetector) display(p string, isDir bool) string {
	base := d.AutoMemDir
	if base == "" {
		base = filepath.Dir(filepath.Clean(d.TeamDir))
	}
	rel, err := filepath.Rel(base, filepath.Clean(p))
	if err != nil {
		rel = filepath.Base(p)
	}
	rel = filepath.ToSlash(rel)
	if isDir && !strings.HasSuffix(rel, "/") {
		rel += "/"
	}
	return rel
}
