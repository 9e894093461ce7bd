package memtools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// globTool returns the Glob tool: files whose path below a directory
// matches a pattern ("*" within a name, "**" across directories), newest
// first.
func (t *Toolset) globTool() llm.Tool {
	return tool(memdir.ToolGlob,
		"Find memory files by name pattern, such as **/*.md or team/*.md. Newest first.",
		`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string","description":"absolute directory to search; defaults to the memory directory"}},"required":["pattern"],"additionalProperties":false}`,
		func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				Pattern string `json:"pattern"`
				Path    string `json:"path"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			return t.glob(ctx, in.Pattern, in.Path)
		})
}

func (t *Toolset) glob(ctx context.Context, pattern, dir string) (string, error) {
	if pattern == "" {
		return "", toolErr("pattern is required")
	}
	if filepath.IsAbs(pattern) {
		// An absolute pattern names its own directory: split at the first
		// segment with a wildcard.
		segs := strings.Split(filepath.ToSlash(pattern), "/")
		i := 0
		for i < len(segs) && !strings.ContainsAny(segs[i], "*?[") {
			i++
		}
		dir, pattern = "/"+filepath.Join(segs[:i]...), strings.Join(segs[i:], "/")
		if pattern == "" {
			return "", toolErr("the pattern has no wildcard; use Read or List")
		}
	}
	if _, err := matchGlob(pattern, ""); err != nil {
		return "", toolErr("the pattern is not valid")
	}
	start, files, err := t.files(ctx, dir)
	if err != nil {
		return "", err
	}
	type hit struct {
		path string
		mod  int64
	}
	var hits []hit
	for _, f := range files {
		rel, err := filepath.Rel(start, f)
		if err != nil {
			continue
		}
		if ok, _ := matchGlob(pattern, filepath.ToSlash(rel)); !ok {
			continue
		}
		var mod int64
		if info, err := t.fs.Stat(f); err == nil {
			mod = info.ModTime().UnixNano()
		}
		hits = append(hits, hit{f, mod})
	}
	if len(hits) == 0 {
		return "No files match under " + start, nil
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(b.mod, a.mod), strings.Compare(a.path, b.path)) })
	var b strings.Builder
	for i, h := range hits {
		if i == t.opts.MaxResults {
			fmt.Fprintf(&b, "(%d more not shown)\n", len(hits)-i)
			break
		}
		b.WriteString(h.path + "\n")
	}
	return b.String(), nil
}

// matchGlob matches a "/"-separated path against a pattern where "**" is
// any number of whole segments and other segments use path.Match.
func matchGlob(pattern, name string) (bool, error) {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegs(pat, name []string) (bool, error) {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if ok, err := matchSegs(pat[1:], name[i:]); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		if len(name) == 0 {
			return false, nil
		}
		ok, err := filepath.Match(pat[0], name[0])
		if err != nil || !ok {
			return false, err
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0, nil
}

// listTool returns the List tool: the entries of a directory.
func (t *Toolset) listTool() llm.Tool {
	return tool(memdir.ToolList,
		"List a memory directory. Directories end in /.",
		`{"type":"object","properties":{"path":{"type":"string","description":"absolute directory; defaults to the memory directory"}},"additionalProperties":false}`,
		func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				Path string `json:"path"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			return t.list(in.Path)
		})
}

func (t *Toolset) list(dir string) (string, error) {
	clean, err := t.resolve(cmp.Or(dir, t.roots[0]), true)
	if err != nil {
		return "", err
	}
	entries, err := afero.ReadDir(t.fs, clean)
	if err != nil {
		return "", describe(clean, err)
	}
	if len(entries) == 0 {
		return clean + " is empty", nil
	}
	var b strings.Builder
	b.WriteString(clean + "\n")
	for i, e := range entries {
		if i == t.opts.MaxResults {
			fmt.Fprintf(&b, "(%d more not shown)\n", len(entries)-i)
			break
		}
		name := e.Name()
		switch {
		case e.IsDir():
			name += "/"
		case e.Mode()&fs.ModeSymlink != 0:
			name += " (link)"
		}
		fmt.Fprintf(&b, "  %s\n", name)
	}
	return b.String(), nil
}
