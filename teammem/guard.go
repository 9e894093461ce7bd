package teammem

import (
	"slices"

	"github.com/spf13/afero"
)

// WriteGuard is the check a host puts in front of its Write and Edit tools.
// It is safe for concurrent use.
type WriteGuard struct {
	// Detector says which calls write into the team directory.
	Detector ToolDetector
	// Scanner finds secrets; nil means NewScanner().
	Scanner *Scanner
}

// NewWriteGuard returns a WriteGuard for teamDir with Claude Code's tool
// names and the built-in secret rules.
func NewWriteGuard(teamDir string) *WriteGuard {
	return &WriteGuard{Detector: ToolDetector{TeamDir: teamDir}, Scanner: NewScanner()}
}

// Check returns nil for a call that does not write into the team
// directory. For one that does, it validates the target with
// ValidateTeamMemWritePath (a *PathTraversalError) and scans the text the
// call would write, the whole "content" of a Write or the "new_string"
// ("new_source" for notebooks) of an Edit, returning a *SecretError for
// the first secret found. The error text is safe to return to the model.
func (g *WriteGuard) Check(fsys afero.Fs, call ToolCall) error {
	if !g.Detector.IsTeamMemoryWriteOrEdit(call, nil) {
		return nil
	}
	if _, err := ValidateTeamMemWritePath(fsys, g.Detector.TeamDir, targetPath(call)); err != nil {
		return err
	}
	return g.CheckContent(newText(call, g.Detector.Names.withDefaults()))
}

// CheckContent returns a *SecretError when text contains a secret.
func (g *WriteGuard) CheckContent(text string) error {
	return g.Scanner.Check(text)
}

func newText(call ToolCall, names ToolNames) string {
	if slices.Contains(names.Write, call.Name) {
		return call.String("content")
	}
	if t := call.String("new_string"); t != "" {
		return t
	}
	return call.String("new_source")
}
