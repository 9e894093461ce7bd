package memdir

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/edits"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// edits returns the edits of an Edit or MultiEdit call (its old_string,
// new_string and replace_all, or its edits), and whether it has any.
func (in toolInput) edits() ([]edits.Edit, bool) {
	if raw, ok := in["edits"].([]any); ok {
		var list []edits.Edit
		for _, e := range raw {
			m, _ := e.(map[string]any)
			old, _ := m["old_string"].(string)
			repl, _ := m["new_string"].(string)
			all, _ := m["replace_all"].(bool)
			list = append(list, edits.Edit{Old: old, New: repl, All: all})
		}
		return list, len(list) > 0
	}
	if _, ok := in["old_string"]; !ok {
		return nil, false
	}
	all, _ := in["replace_all"].(bool)
	return []edits.Edit{{Old: in.str("old_string"), New: in.str("new_string"), All: all}}, true
}

// writtenTexts returns what a write tool call would put in the file at
// abs, for a content check before the call runs: a Write's content, a
// NotebookEdit's new_source, and for Edit and MultiEdit the file as the
// edits would leave it (read through fsys) or, when they do not apply,
// every new string on its own.
func (in toolInput) writtenTexts(fsys afero.Fs, abs string) []string {
	if c, ok := in["content"].(string); ok {
		return []string{c}
	}
	if src, ok := in["new_source"].(string); ok {
		return []string{src}
	}
	list, ok := in.edits()
	if !ok {
		return nil
	}
	news := make([]string, 0, len(list))
	for _, e := range list {
		news = append(news, e.New)
	}
	data, err := afero.ReadFile(fsys, abs)
	if err != nil {
		return news
	}
	text, err := edits.Apply(string(data), list)
	if err != nil {
		return news
	}
	return []string{text}
}

// writeTools are the tools that write a file, by Claude Code's names: the
// ones CheckToolCall checks.
var writeTools = []string{ToolWrite, ToolEdit, ToolMultiEdit, ToolNotebookEdit}

// CheckToolCall is the check a host puts in front of its own file-writing
// tools (Write, Edit, MultiEdit, NotebookEdit, by Claude Code's names: a
// host whose tools are named otherwise gives the call the name of the
// tool it stands for) for this directory or view. A call whose path
// names neither the directory nor its team directory is the host's
// business and passes. One that does is refused, with nothing written,
// when its path fails the gate's CheckPath (it leaves the directory
// through ".." or a symbolic link), names the team directory and leaves
// it ("team/../x.md") or goes through a lookalike of the team directory
// ("team-evil/"), all with a *PathTraversalError, or when what it would
// leave in the file (writtenTexts) fails the gate's content check
// (CheckContent: a credential in a team or synced write, a
// *secrets.Error; an invisible character, a foreign index link or, in a
// team or synced write, an injection that the call adds, a
// *screen.Error). A host that syncs only the team directory checks on
// the team view (d.Sub(TeamDirName)) or a Dir made with DirOptions.Team,
// which refuse the same lookalikes. The check and the host's write are
// separate steps: a host that can should let the directory write (the
// memory tools) instead.
func (d *Dir) CheckToolCall(call llm.ToolCall) error {
	in, t, err := d.checkToolPath(call)
	if err != nil || t == nil {
		return err
	}
	old, _ := afero.ReadFile(d.fs, t.Path)
	for _, text := range in.writtenTexts(d.fs, t.Path) {
		if err := d.gate.checkChange(*t, string(old), text); err != nil {
			return err
		}
	}
	return nil
}

// CheckToolCallFrom is CheckToolCall for a call made with ctx: it also
// refuses what the gate would refuse of the call's agent (a pause, and
// shared memory written by another agent than the main one under
// Dir.SharedWritesMainAgentOnly; see WithAgent). Use it on a handle
// with the tools' door (WithDoor), as a host's permission check. Under
// MainAgentOnlyPropose another agent's call is allowed and what it will
// leave in the file is recorded with the origin other-agent beforehand,
// so the file carries it to the sync whoever writes it: the host's own
// tool, or the memory tools (which record it again).
func (d *Dir) CheckToolCallFrom(ctx context.Context, call llm.ToolCall) error {
	if err := d.CheckToolCall(call); err != nil {
		return err
	}
	in, t, err := d.checkToolPath(call)
	if err != nil || t == nil {
		return err
	}
	if err := d.gate.mayWrite(ctx, *t); err != nil {
		return err
	}
	if d.gate.proposedOrigin(ctx, *t, "") == "" {
		return nil
	}
	for _, text := range in.writtenTexts(d.fs, t.Path) {
		if err := d.gate.recordProvenance(ctx, *t, []byte(text), true); err != nil {
			return err
		}
	}
	return nil
}

// CheckToolPath is CheckToolCall without the content check: the path
// checks only (containment and lookalikes of the team directory), for a
// caller whose write goes through the directory's gate, which scans what
// the write leaves in the file, so that content is scanned once.
func (d *Dir) CheckToolPath(call llm.ToolCall) error {
	_, _, err := d.checkToolPath(call)
	return err
}

// checkToolPath does CheckToolCall's path checks; a nil target with a nil
// error means the call is not a write to this directory.
func (d *Dir) checkToolPath(call llm.ToolCall) (toolInput, *Target, error) {
	if !slices.Contains(writeTools, call.Name) {
		return nil, nil, nil
	}
	in, err := decodeCall(call)
	if err != nil {
		return nil, nil, fmt.Errorf("memdir: %w", err)
	}
	p := cmp.Or(in.str("file_path"), in.str("notebook_path"))
	if p == "" || !filepath.IsAbs(p) {
		return nil, nil, nil
	}
	if d.gate.namesTeamLookalike(p) {
		return nil, nil, &PathTraversalError{Reason: ReasonEscapes}
	}
	if !d.names(p) {
		return nil, nil, nil
	}
	t, err := d.gate.CheckPath(p)
	if err != nil {
		return nil, nil, err
	}
	return in, &t, nil
}

// namesTeamLookalike reports whether a raw absolute path, meant by its
// look for a team directory of the gate, lands elsewhere: it starts with
// the team directory and a separator but leaves it once cleaned
// ("team/../x.md"), or it goes through a folder beside the team
// directory whose name starts like it ("team-evil/", "team.bak/"). Such
// a write is most likely meant for team memory, where it would not be
// synced or scanned, so it is refused. This is the one lookalike check:
// every check of a host's tool call goes through it.
func (g *WriteGate) namesTeamLookalike(raw string) bool {
	raw = norm.NFC.String(raw)
	clean := filepath.Clean(raw)
	for _, team := range g.teams {
		if strings.HasPrefix(raw, team+string(filepath.Separator)) && !inside(team, clean) {
			return true
		}
		parent, base := filepath.Dir(team), filepath.Base(team)
		if !inside(parent, clean) {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(clean, parent), string(filepath.Separator))
		first, below, ok := strings.Cut(rel, string(filepath.Separator))
		if ok && below != "" && first != base && strings.HasPrefix(first, base) {
			return true
		}
	}
	return false
}

// names reports whether a raw path names the directory: it starts with
// the directory and a separator, before or after cleaning.
func (d *Dir) names(raw string) bool {
	if raw == "" || !filepath.IsAbs(raw) {
		return false
	}
	prefix := d.path + string(filepath.Separator)
	return strings.HasPrefix(raw, prefix) || strings.HasPrefix(filepath.Clean(raw), prefix)
}
