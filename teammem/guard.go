package teammem

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/secrets"

	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"

	"github.com/agentmem-sdk/agentmem/memdir"
)

// WriteGuard is the check a host puts in front of its own file-writing
// tools (Claude Code's Write, Edit, MultiEdit and NotebookEdit by
// default; other names through Detector.Names). It is safe for concurrent
// use.
type WriteGuard struct {
	// Detector says which tools write and where the team directory is.
	Detector ToolDetector
	// Scanner finds secrets; nil means secrets.New().
	Scanner *secrets.Scanner
}

// NewWriteGuard returns a WriteGuard for teamDir with Claude Code's tool
// names and the built-in secret rules.
func NewWriteGuard(teamDir string) *WriteGuard {
	return &WriteGuard{Detector: ToolDetector{TeamDir: teamDir}, Scanner: secrets.New()}
}

// Check returns nil for a call that is not a write, or whose path does not
// name the team directory. For a write that does, it refuses:
//
//   - with a *PathTraversalError, a path that names the team directory
//     and leaves it ("<team>/../../etc/x", a lookalike sibling directory
//     such as "team-evil/"), or that reaches outside it through symbolic
//     links (ValidateTeamMemWritePath);
//   - with a *secrets.Error, a call whose result would hold a credential:
//     the whole content of a Write, and for Edit, MultiEdit and
//     NotebookEdit the file as it would be after the edits (read through
//     fsys; when the edits do not apply, every new string on its own).
//
// Paths that do not name the team directory are the host's business and
// pass. The error text is safe to return to the model. The check and the
// write are separate steps: on a real disk, perform the write through
// rootfs (or memtools, which does) so a link swapped in between cannot
// redirect it.
func (g *WriteGuard) Check(fsys afero.Fs, call llm.ToolCall) error {
	n := g.Detector.Names.withDefaults()
	isWrite := slices.Contains(n.Write, call.Name)
	if !isWrite && !slices.Contains(n.Edit, call.Name) {
		return nil
	}
	team := g.Detector.TeamDir
	p := targetPath(call)
	if !IsTeamMemPath(team, p) && !namesTeamDir(team, p) {
		return nil
	}
	abs, err := ValidateTeamMemWritePath(fsys, team, p)
	if err != nil {
		return err
	}
	if isWrite {
		return g.CheckContent(field(call, "content"))
	}
	for _, text := range memdir.WrittenTexts(fsys, abs, call) {
		if err := g.CheckContent(text); err != nil {
			return err
		}
	}
	return nil
}

// CheckContent returns a *secrets.Error when text contains a secret.
func (g *WriteGuard) CheckContent(text string) error {
	return g.Scanner.Check(text)
}

// namesTeamDir reports whether a raw path names the team directory: it
// starts with the team directory and a separator before any cleaning, or
// one of its directories at the team directory's place is a lookalike
// ("team-evil/", "team.bak/").
func namesTeamDir(teamDir, raw string) bool {
	if raw == "" {
		return false
	}
	team := strings.TrimSuffix(filepath.Clean(teamDir), string(filepath.Separator))
	raw = norm.NFC.String(raw)
	if raw == team || strings.HasPrefix(raw, team+string(filepath.Separator)) {
		return true
	}
	parent, base := filepath.Dir(team), filepath.Base(team)
	clean := filepath.Clean(raw)
	if !strings.HasPrefix(clean, withSep(parent)) {
		return false
	}
	rest := strings.TrimPrefix(clean, withSep(parent))
	first, below, ok := strings.Cut(rest, string(filepath.Separator))
	return ok && below != "" && strings.HasPrefix(first, base)
}
