package memtools

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// ExtractPermission is the rule for background extraction and
// consolidation: Read, Grep, Glob and List anywhere below dir and
// readRoots; Write, Edit and MultiEdit only inside dir, and only when the
// call passes dir's path check (memdir.Dir.CheckToolPath: containment
// and no lookalike of the team directory; the content is scanned once, by
// the directory's write gate on what the write leaves in the file);
// every other tool is denied. Each denial carries a reason the model can
// act on.
func ExtractPermission(dir *memdir.Dir, readRoots []string) llm.PermissionFunc {
	auto := filepath.Clean(dir.Path())
	roots := make([]string, 0, len(readRoots)+1)
	roots = append(roots, auto)
	for _, r := range readRoots {
		roots = append(roots, filepath.Clean(r))
	}
	return func(_ context.Context, call llm.ToolCall) llm.Decision {
		tc, err := call.Fields()
		if err != nil {
			return llm.Deny("the tool input is not a JSON object")
		}
		switch call.Name {
		case memdir.ToolRead:
			return inside(str(tc, "file_path"), roots, false, "read")
		case memdir.ToolGrep, memdir.ToolGlob, memdir.ToolList:
			p := str(tc, "path")
			if p == "" && call.Name == memdir.ToolGlob && filepath.IsAbs(str(tc, "pattern")) {
				p = str(tc, "pattern")
			}
			if p == "" {
				return llm.Allow() // the tools default to the memory directory
			}
			return inside(p, roots, true, "search")
		case memdir.ToolWrite, memdir.ToolEdit, memdir.ToolMultiEdit:
			p := str(tc, "file_path")
			if d := inside(p, []string{auto}, false, "write"); !d.Allow {
				return d
			}
			if err := dir.CheckToolPath(call); err != nil {
				return llm.Deny(err.Error())
			}
			return llm.Allow()
		}
		return llm.Deny("the " + call.Name + " tool is not available here; use Read, Grep, Glob and List to look, and Write, Edit or MultiEdit inside " + auto)
	}
}

// SessionPermission is the rule for the session summary: only Edit, and
// only on file.
func SessionPermission(file string) llm.PermissionFunc {
	want := filepath.Clean(file)
	return func(_ context.Context, call llm.ToolCall) llm.Decision {
		if call.Name != memdir.ToolEdit {
			return llm.Deny("only the Edit tool on " + want + " is available here")
		}
		tc, err := call.Fields()
		if err != nil {
			return llm.Deny("the tool input is not a JSON object")
		}
		if p := str(tc, "file_path"); p == "" || filepath.Clean(p) != want {
			return llm.Deny("only " + want + " may be edited")
		}
		return llm.Allow()
	}
}

// inside allows p when it is absolute and (strictly, or equal when
// allowRoot) below one of roots.
func inside(p string, roots []string, allowRoot bool, verb string) llm.Decision {
	if p == "" || !filepath.IsAbs(p) {
		return llm.Deny("give an absolute path inside " + strings.Join(roots, " or "))
	}
	clean := filepath.Clean(p)
	for _, r := range roots {
		if (allowRoot && clean == r) || strings.HasPrefix(clean, r+string(filepath.Separator)) {
			return llm.Allow()
		}
	}
	return llm.Deny("you may only " + verb + " inside " + strings.Join(roots, " or "))
}

// str returns a text field of a decoded tool input.
func str(in map[string]any, name string) string {
	s, _ := in[name].(string)
	return s
}
