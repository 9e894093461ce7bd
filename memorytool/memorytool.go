// Package memorytool serves Anthropic's client-side memory tool
// (memory_20250818) from a memory directory: the model's view, create,
// str_replace, insert, delete and rename commands on /memories/... act on
// the directory through its one write gate, and the directory's MEMORY.md
// index stays in step with the files.
//
// Results and refusals are text for the model, worded as the official
// helpers word them: Call returns the result, or a *memdir.ToolError whose message is
// sent back as an error tool result.
//
// # Security
//
// A path must be /memories or below it. Before anything is read, a path
// with a NUL, a backslash, a percent-encoded dot, slash or backslash, a
// "." or ".." segment, an empty segment or a hidden segment (a name that
// starts with a dot) is refused. Every read, write, removal and rename then
// goes through the memory directory's memdir.WriteGate: a path that leaves
// the directory through a symbolic link (dangling links and loops
// included) is refused, on the real disk the operation is confined by the
// kernel (os.Root) so a link swapped in after the check cannot redirect
// it, and content headed for the team directory is scanned for
// credentials. No message holds a host path.
//
// # Concurrency
//
// A *Handler is safe for concurrent use; each write is a locked
// read-modify-write cycle, so concurrent edits of one file all land.
package memorytool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// memoriesRoot is the directory the model sees; it maps to the memory
// directory.
const memoriesRoot = "/memories"

// toolType and toolName are the provider-defined tool's type and name.
const (
	toolType = "memory_20250818"
	toolName = "memory"
)

// maxFileBytes bounds a file the tool reads or writes.
const maxFileBytes = 1 << 20

// lineWidth is the width of the line numbers in a view.
const lineWidth = 6

// toolErr is a refusal or failure meant for the model (a
// *memdir.ToolError: send its message as the tool result with is_error
// set), the one type and wording the memory tools and the MCP server share.
func toolErr(format string, args ...any) error {
	return &memdir.ToolError{Msg: fmt.Sprintf(format, args...)}
}

// Handler runs memory tool commands on one memory directory.
type Handler struct {
	fs   afero.Fs
	dir  *memdir.Dir
	gate *memdir.WriteGate
	root string
}

// New returns a Handler for the memory directory d (created on the
// first write): every command writes through d, with its scanner, synced
// flag, lock and history.
func New(d *memdir.Dir) (*Handler, error) {
	if d == nil {
		return nil, errors.New("memorytool: New needs the memory directory (memdir.NewDir)")
	}
	d = d.WithDoor(teamwire.DoorMemoryTool) // its shared writes go with its door
	return &Handler{fs: d.FS(), dir: d, gate: d.Gate(), root: d.Path()}, nil
}

// Tool returns the memory tool for llm.RunAgent: a provider-defined tool
// (llm.ToolSpec.Type) whose calls run Call.
func (h *Handler) Tool() llm.Tool {
	return llm.Tool{Spec: llm.ToolSpec{Name: toolName, Type: toolType}, Call: h.Call}
}

// command is the tool's input: one of six commands and its fields.
type command struct {
	Command    string  `json:"command"`
	Path       string  `json:"path"`
	ViewRange  []int   `json:"view_range"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	InsertText *string `json:"insert_text"`
	OldPath    string  `json:"old_path"`
	NewPath    string  `json:"new_path"`
}

// Call runs one command given as the tool call's JSON input and returns
// the result text, or an *memdir.ToolError for the model. Any other error is not the
// model's to see (the context ended).
func (h *Handler) Call(ctx context.Context, input json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var c command
	dec := json.NewDecoder(bytes.NewReader(input))
	if err := dec.Decode(&c); err != nil {
		return "", toolErr("The input is not a valid memory command: %s", jsonProblem(err))
	}
	switch c.Command {
	case "view":
		return h.view(c)
	case "create":
		if c.FileText == nil {
			return "", toolErr("Parameter `file_text` is required for command: create")
		}
		return h.create(ctx, c.Path, *c.FileText)
	case "str_replace":
		if c.OldStr == nil {
			return "", toolErr("Parameter `old_str` is required for command: str_replace")
		}
		newStr := ""
		if c.NewStr != nil {
			newStr = *c.NewStr
		}
		return h.strReplace(ctx, c.Path, *c.OldStr, newStr)
	case "insert":
		if c.InsertLine == nil || c.InsertText == nil {
			return "", toolErr("Parameters `insert_line` and `insert_text` are required for command: insert")
		}
		return h.insert(ctx, c.Path, *c.InsertLine, *c.InsertText)
	case "delete":
		return h.delete(ctx, c.Path)
	case "rename":
		return h.rename(ctx, c.OldPath, c.NewPath)
	case "":
		return "", toolErr("Parameter `command` is required (view, create, str_replace, insert, delete or rename)")
	}
	return "", toolErr("Unknown command %q: use view, create, str_replace, insert, delete or rename", c.Command)
}

func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q must be a %s", te.Field, te.Type)
	}
	return "it is not a JSON object"
}

// target is a /memories path mapped to the memory directory.
type target struct {
	shown string // the path as the model gave it
	rel   string // "/"-separated below the directory; "" for the root
	abs   string
}

// resolve validates a model path before anything touches the disk.
func (h *Handler) resolve(p string) (target, error) {
	if p == "" {
		return target{}, toolErr("Parameter `path` is required")
	}
	if p != memoriesRoot && !strings.HasPrefix(p, memoriesRoot+"/") {
		return target{}, toolErr("Path must start with %s, got: %s", memoriesRoot, shorten(p))
	}
	lower := strings.ToLower(p)
	switch {
	case strings.ContainsAny(p, "\x00\\"):
		return target{}, toolErr("The path %s is not allowed: it contains a NUL byte or a backslash", shorten(p))
	case strings.Contains(lower, "%2e") || strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c"):
		return target{}, toolErr("The path %s is not allowed: it contains a percent-encoded dot, slash or backslash", shorten(p))
	}
	rel := strings.TrimSuffix(strings.TrimPrefix(p, memoriesRoot), "/")
	rel = strings.TrimPrefix(rel, "/")
	if rel != "" {
		for _, seg := range strings.Split(rel, "/") {
			switch {
			case seg == "" || seg == "." || seg == "..":
				return target{}, toolErr("Path %s would escape %s directory", shorten(p), memoriesRoot)
			case strings.HasPrefix(seg, "."):
				return target{}, toolErr("The path %s is not allowed: hidden names (starting with a dot) are reserved", shorten(p))
			}
		}
		if path.Clean(rel) != rel {
			return target{}, toolErr("Path %s would escape %s directory", shorten(p), memoriesRoot)
		}
	}
	t := target{shown: p, rel: rel, abs: filepath.Join(h.root, filepath.FromSlash(rel))}
	if rel != "" {
		if _, err := h.gate.CheckPath(t.abs); err != nil {
			return target{}, h.refusal(t, err)
		}
	}
	return t, nil
}

// shorten keeps an echoed path short.
func shorten(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}

// refusal turns a gate or filesystem error into text for the model.
func (h *Handler) refusal(t target, err error) error {
	if r := memdir.Refusal(t.shown, memoriesRoot, err); r != nil {
		return r
	}
	if errors.Is(err, fs.ErrNotExist) {
		return toolErr("The path %s does not exist. Please provide a valid path.", t.shown)
	}
	return toolErr("The operation on %s failed; the file was not changed", t.shown)
}

// isMemoryFile reports whether rel is a memory file the index points to.
func isMemoryFile(rel string) bool { return memdir.CheckFile(rel) == nil }

// isIndex reports whether rel is one of the directory's indexes.
func isIndex(rel string) bool {
	return rel == memdir.EntrypointName || rel == memdir.TeamDirName+"/"+memdir.EntrypointName
}

// read reads a file through the gate's confined open.
func (h *Handler) read(t target) ([]byte, error) {
	f, err := h.gate.Open(t.abs)
	if err != nil {
		return nil, h.refusal(t, err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.IsDir() {
		return nil, toolErr("The path %s is a directory, not a file.", t.shown)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, h.refusal(t, err)
	}
	if len(data) > maxFileBytes {
		return nil, toolErr("File %s is over %d bytes; memory files should be short", t.shown, maxFileBytes)
	}
	return data, nil
}

func (h *Handler) view(c command) (string, error) {
	t, err := h.resolve(c.Path)
	if err != nil {
		return "", err
	}
	info, err := h.fs.Stat(t.abs)
	if err != nil {
		if t.rel == "" && errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("Here're the files and directories up to 2 levels deep in %s, excluding hidden items:\n0B\t%s", t.shown, t.shown), nil
		}
		return "", h.refusal(t, err)
	}
	if info.IsDir() {
		return h.listing(t, info)
	}
	data, err := h.read(t)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(data), "\n")
	start, end := 1, len(lines)
	if c.ViewRange != nil {
		if len(c.ViewRange) != 2 {
			return "", toolErr("Invalid `view_range`: it should be a list of two integers")
		}
		start, end = c.ViewRange[0], c.ViewRange[1]
		if end == -1 {
			end = len(lines)
		}
		if start < 1 || start > len(lines) || end < start || end > len(lines) {
			return "", toolErr("Invalid `view_range`: %v. It should be within [1, %d], the second no smaller than the first (or -1 for the end)", c.ViewRange, len(lines))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Here's the content of %s with line numbers:", t.shown)
	for i := start; i <= end; i++ {
		fmt.Fprintf(&b, "\n%*d\t%s", lineWidth, i, lines[i-1])
	}
	return b.String(), nil
}

// listing lists a directory two levels deep with sizes, hidden names and
// links left out.
func (h *Handler) listing(t target, info fs.FileInfo) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Here're the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s\t%s", t.shown, formatSize(info.Size()), t.shown)
	var walk func(abs, shown string, depth int)
	walk = func(abs, shown string, depth int) {
		entries, err := afero.ReadDir(h.fs, abs)
		if err != nil {
			return
		}
		slices.SortFunc(entries, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := shown + "/" + e.Name()
			switch {
			case e.Mode().IsDir():
				fmt.Fprintf(&b, "\n%s\t%s/", formatSize(e.Size()), p)
				if depth < 2 {
					walk(filepath.Join(abs, e.Name()), p, depth+1)
				}
			case e.Mode().IsRegular():
				fmt.Fprintf(&b, "\n%s\t%s", formatSize(e.Size()), p)
			}
		}
	}
	walk(t.abs, strings.TrimSuffix(t.shown, "/"), 1)
	return b.String(), nil
}

// formatSize writes a size as the official helpers do: 0B, 512B, 4K, 1.5K.
func formatSize(n int64) string {
	if n <= 0 {
		return "0B"
	}
	units := []string{"B", "K", "M", "G"}
	i := 0
	size := float64(n)
	for size >= 1024 && i < len(units)-1 {
		size /= 1024
		i++
	}
	if size == float64(int64(size)) {
		return fmt.Sprintf("%d%s", int64(size), units[i])
	}
	return fmt.Sprintf("%.1f%s", size, units[i])
}

var errExists = errors.New("exists")

func (h *Handler) create(ctx context.Context, p, text string) (string, error) {
	t, err := h.resolve(p)
	if err != nil {
		return "", err
	}
	if t.rel == "" {
		return "", toolErr("The path %s is a directory; give a file path", t.shown)
	}
	if len(text) > maxFileBytes {
		return "", toolErr("The file text is over %d bytes; memory files should be short", maxFileBytes)
	}
	if info, err := h.fs.Stat(t.abs); err == nil && info.IsDir() {
		return "", toolErr("File %s already exists", t.shown)
	}
	_, err = h.gate.UpdateFile(ctx, t.abs, func(_ []byte, exists bool) ([]byte, error) {
		if exists {
			return nil, errExists
		}
		return []byte(text), nil
	}, 0o644)
	if errors.Is(err, errExists) {
		return "", toolErr("File %s already exists", t.shown)
	}
	if err != nil {
		return "", h.refusal(t, err)
	}
	return h.withNotice(ctx, "File created successfully at: "+t.shown, t, text), nil
}

// withNotice adds to a write's answer what the model should know of the
// index's size (memdir.IndexNotice): after a write of MEMORY.md itself,
// or after the new pointer a memory file got in it.
func (h *Handler) withNotice(ctx context.Context, answer string, t target, written string) string {
	notice := ""
	if path.Base(t.rel) == memdir.EntrypointName {
		notice = memdir.IndexNotice(t.shown, written, memdir.IndexLimits{})
	} else if h.indexAdded(ctx, t.rel) {
		if index, err := afero.ReadFile(h.fs, filepath.Join(h.dir.Path(), memdir.EntrypointName)); err == nil {
			notice = memdir.IndexNotice(memdir.EntrypointName, string(index), memdir.IndexLimits{})
		}
	}
	if notice == "" {
		return answer
	}
	return answer + "\n\n" + notice
}

// indexAdded gives a new memory file its pointer in MEMORY.md, and
// reports whether it added one.
func (h *Handler) indexAdded(ctx context.Context, rel string) bool {
	if !isMemoryFile(rel) {
		return false
	}
	added, err := h.dir.EnsurePointer(ctx, rel)
	return err == nil && added
}

// edit runs a locked read-modify-write cycle on an existing file and
// returns what it wrote.
func (h *Handler) edit(ctx context.Context, t target, change func(old string) (string, error)) (string, error) {
	if t.rel == "" {
		return "", toolErr("The path %s is not a file.", t.shown)
	}
	if info, err := h.fs.Stat(t.abs); err != nil {
		return "", h.refusal(t, err)
	} else if info.IsDir() {
		return "", toolErr("The path %s is not a file.", t.shown)
	}
	var written string
	_, err := h.gate.UpdateFile(ctx, t.abs, func(old []byte, exists bool) ([]byte, error) {
		if !exists {
			return nil, toolErr("The path %s does not exist. Please provide a valid path.", t.shown)
		}
		out, err := change(string(old))
		if err != nil {
			return nil, err
		}
		if len(out) > maxFileBytes {
			return nil, toolErr("The edited file would be over %d bytes; memory files should be short", maxFileBytes)
		}
		written = out
		return []byte(out), nil
	}, 0o644)
	var te *memdir.ToolError
	if errors.As(err, &te) {
		return "", te
	}
	if err != nil {
		return "", h.refusal(t, err)
	}
	return written, nil
}

func (h *Handler) strReplace(ctx context.Context, p, oldStr, newStr string) (string, error) {
	t, err := h.resolve(p)
	if err != nil {
		return "", err
	}
	if oldStr == "" {
		return "", toolErr("Parameter `old_str` must not be empty")
	}
	var snippet string
	written, err := h.edit(ctx, t, func(content string) (string, error) {
		switch n := strings.Count(content, oldStr); {
		case n == 0:
			return "", toolErr("No replacement was performed, old_str `%s` did not appear verbatim in %s.", oldStr, t.shown)
		case n > 1:
			var lines []string
			for i := 0; ; {
				j := strings.Index(content[i:], oldStr)
				if j < 0 {
					break
				}
				lines = append(lines, fmt.Sprint(strings.Count(content[:i+j], "\n")+1))
				i += j + 1
			}
			return "", toolErr("No replacement was performed. Multiple occurrences of old_str `%s` in lines: %s. Please ensure it is unique", oldStr, strings.Join(lines, ", "))
		}
		at := strings.Count(content[:strings.Index(content, oldStr)], "\n")
		out := strings.Replace(content, oldStr, newStr, 1)
		lines := strings.Split(out, "\n")
		var b strings.Builder
		b.WriteString("The memory file has been edited. Here is the snippet showing the change (with line numbers):")
		for i := max(0, at-2); i < min(len(lines), at+3); i++ {
			fmt.Fprintf(&b, "\n%*d\t%s", lineWidth, i+1, lines[i])
		}
		snippet = b.String()
		return out, nil
	})
	if err != nil {
		return "", err
	}
	return h.withNotice(ctx, snippet, t, written), nil
}

func (h *Handler) insert(ctx context.Context, p string, at int, text string) (string, error) {
	t, err := h.resolve(p)
	if err != nil {
		return "", err
	}
	written, err := h.edit(ctx, t, func(content string) (string, error) {
		var lines []string
		if trimmed := strings.TrimSuffix(content, "\n"); content != "" {
			lines = strings.Split(trimmed, "\n")
		}
		if at < 0 || at > len(lines) {
			return "", toolErr("Invalid `insert_line` parameter: %d. It should be within the range [0, %d].", at, len(lines))
		}
		lines = slices.Insert(lines, at, strings.TrimRight(text, "\n"))
		return strings.Join(lines, "\n") + "\n", nil
	})
	if err != nil {
		return "", err
	}
	return h.withNotice(ctx, fmt.Sprintf("The file %s has been edited.", t.shown), t, written), nil
}

func (h *Handler) delete(ctx context.Context, p string) (string, error) {
	t, err := h.resolve(p)
	if err != nil {
		return "", err
	}
	switch {
	case t.rel == "":
		return "", toolErr("Cannot delete the %s directory itself", memoriesRoot)
	case isIndex(t.rel):
		return "", toolErr("Cannot delete %s: it is the index of the memory directory (edit it instead)", t.shown)
	}
	info, err := h.fs.Stat(t.abs)
	if err != nil {
		return "", toolErr("The path %s does not exist", t.shown)
	}
	if info.IsDir() {
		files := h.memoryFilesUnder(t)
		if _, err := h.gate.RemoveAll(ctx, t.abs); err != nil {
			return "", h.refusal(t, err)
		}
		for _, f := range files {
			_ = h.dir.RemovePointers(ctx, f)
		}
	} else {
		if _, err := h.gate.Remove(ctx, t.abs); err != nil {
			return "", h.refusal(t, err)
		}
		if isMemoryFile(t.rel) {
			_ = h.dir.RemovePointers(ctx, t.rel)
		}
	}
	return "Successfully deleted " + t.shown, nil
}

// memoryFilesUnder lists the memory files below a directory, relative to
// the memory directory.
func (h *Handler) memoryFilesUnder(t target) []string {
	var out []string
	_ = afero.Walk(h.fs, t.abs, func(p string, info fs.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(h.root, p)
		if err == nil && isMemoryFile(filepath.ToSlash(rel)) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func (h *Handler) rename(ctx context.Context, oldPath, newPath string) (string, error) {
	from, err := h.resolve(oldPath)
	if err != nil {
		return "", err
	}
	to, err := h.resolve(newPath)
	if err != nil {
		return "", err
	}
	switch {
	case from.rel == "" || to.rel == "":
		return "", toolErr("Cannot rename the %s directory itself", memoriesRoot)
	case isIndex(from.rel) || isIndex(to.rel):
		return "", toolErr("Cannot rename to or from %s: it is the index of the memory directory", memdir.EntrypointName)
	case to.rel == from.rel || strings.HasPrefix(to.rel, from.rel+"/"):
		return "", toolErr("Cannot move %s into itself", from.shown)
	}
	info, err := h.fs.Stat(from.abs)
	if err != nil {
		return "", toolErr("The path %s does not exist", from.shown)
	}
	if _, err := h.fs.Stat(to.abs); err == nil {
		return "", toolErr("The destination %s already exists", to.shown)
	}
	if info.IsDir() {
		files := h.memoryFilesUnder(from)
		if err := h.gate.Rename(ctx, from.abs, to.abs); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return "", toolErr("The destination %s already exists", to.shown)
			}
			return "", h.refusal(from, err)
		}
		for _, f := range files {
			_ = h.dir.MovePointers(ctx, f, to.rel+strings.TrimPrefix(f, from.rel))
		}
		return fmt.Sprintf("Successfully renamed %s to %s", from.shown, to.shown), nil
	}
	// A file is written where it lands (checked there: a move into team/
	// is scanned for secrets), then removed where it was: a removal the
	// gate would refuse is refused before anything is written.
	if err := h.gate.CheckRemove(ctx, from.abs); err != nil {
		return "", h.refusal(from, err)
	}
	data, err := h.read(from)
	if err != nil {
		return "", err
	}
	_, err = h.gate.UpdateFile(ctx, to.abs, func(_ []byte, exists bool) ([]byte, error) {
		if exists {
			return nil, errExists
		}
		return data, nil
	}, info.Mode().Perm())
	if errors.Is(err, errExists) {
		return "", toolErr("The destination %s already exists", to.shown)
	}
	if err != nil {
		return "", h.refusal(to, err)
	}
	if _, err := h.gate.Remove(ctx, from.abs); err != nil {
		_, _ = h.gate.Remove(ctx, to.abs)
		return "", h.refusal(from, err)
	}
	switch {
	case isMemoryFile(from.rel) && isMemoryFile(to.rel):
		_ = h.dir.MovePointers(ctx, from.rel, to.rel)
		h.indexAdded(ctx, to.rel)
	case isMemoryFile(from.rel):
		_ = h.dir.RemovePointers(ctx, from.rel)
	default:
		h.indexAdded(ctx, to.rel)
	}
	return fmt.Sprintf("Successfully renamed %s to %s", from.shown, to.shown), nil
}
