package memtools

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/edits"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// readTool returns the Read tool: a file's lines, numbered, from an
// optional 1-based offset, at most limit lines.
func (t *Toolset) readTool() llm.Tool {
	return tool(memdir.ToolRead,
		"Read a memory file. Lines are numbered from 1. Use offset and limit to read part of a long file.",
		`{"type":"object","properties":{"file_path":{"type":"string","description":"absolute path of the file"},"offset":{"type":"integer","minimum":1,"description":"first line to read (1-based)"},"limit":{"type":"integer","minimum":1,"description":"how many lines to read"}},"required":["file_path"],"additionalProperties":false}`,
		func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				FilePath string `json:"file_path"`
				Offset   int    `json:"offset"`
				Limit    int    `json:"limit"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			return t.read(in.FilePath, in.Offset, in.Limit)
		})
}

func (t *Toolset) read(p string, offset, limit int) (string, error) {
	clean, err := t.resolve(p, false)
	if err != nil {
		return "", err
	}
	f, err := t.gate.Open(clean)
	if err != nil {
		return "", t.fsError(clean, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", describe(clean, err)
	}
	if info.IsDir() {
		return "", toolErr("%s is a directory; use List", clean)
	}
	if !info.Mode().IsRegular() {
		return "", toolErr("%s is not a regular file", clean)
	}
	if info.Size() > t.opts.MaxFileBytes {
		return "", toolErr("%s is too large to read (%d bytes, limit %d)", clean, info.Size(), t.opts.MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, t.opts.MaxFileBytes+1))
	if err != nil {
		return "", describe(clean, err)
	}
	if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return "", toolErr("%s is a binary file and is not shown", clean)
	}
	r := bufio.NewReader(bytes.NewReader(data))
	view := filehistory.View{Offset: offset, Limit: limit, Partial: offset > 1}
	if offset < 1 {
		offset = 1
	}
	if limit < 1 || limit > t.opts.MaxReadLines {
		limit = t.opts.MaxReadLines
	}
	var b strings.Builder
	n, shown := 0, 0
	more := false
	for {
		line, err := r.ReadString('\n')
		if len(line) > 0 {
			n++
			if n >= offset {
				if shown == limit || b.Len() >= t.opts.MaxOutputBytes {
					more = true
					break
				}
				fmt.Fprintf(&b, "%6d\t%s\n", n, t.cut(strings.TrimRight(line, "\r\n")))
				shown++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", describe(clean, err)
		}
	}
	view.Partial = view.Partial || more
	t.reads.RecordRead(clean, data, view)
	switch {
	case n == 0:
		return "(the file is empty)", nil
	case shown == 0:
		return "", toolErr("%s has only %d lines", clean, n)
	case more:
		fmt.Fprintf(&b, "(more lines follow; read on with offset=%d)\n", offset+shown)
	}
	return b.String(), nil
}

func (t *Toolset) cut(line string) string {
	if len(line) <= t.opts.MaxLineLength {
		return line
	}
	return strings.ToValidUTF8(line[:t.opts.MaxLineLength], "") + " [line cut]"
}

// writeTool returns the Write tool: create or replace a file atomically.
func (t *Toolset) writeTool() llm.Tool {
	return tool(memdir.ToolWrite,
		"Create or replace a memory file with the given content. Parent directories are created.",
		`{"type":"object","properties":{"file_path":{"type":"string","description":"absolute path of the file"},"content":{"type":"string","description":"the whole new content"}},"required":["file_path","content"],"additionalProperties":false}`,
		func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				FilePath string  `json:"file_path"`
				Content  *string `json:"content"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if in.Content == nil {
				return "", toolErr("content is required")
			}
			return t.write(ctx, in.FilePath, *in.Content)
		})
}

func (t *Toolset) write(ctx context.Context, p, content string) (string, error) {
	clean, err := t.resolve(p, false)
	if err != nil {
		return "", err
	}
	if int64(len(content)) > t.opts.MaxFileBytes {
		return "", toolErr("the content is too large (%d bytes, limit %d)", len(content), t.opts.MaxFileBytes)
	}
	if info, err := t.fs.Stat(clean); err == nil && info.IsDir() {
		return "", toolErr("%s is a directory", clean)
	}
	_, err = t.gate.UpdateFile(ctx, clean, func(old []byte, exists bool) ([]byte, error) {
		if err := t.checkWrite(clean, old, exists, true); err != nil {
			return nil, err
		}
		return []byte(content), nil
	}, 0o644)
	if err != nil {
		return "", t.fsError(clean, err)
	}
	t.recordWrite(clean, []byte(content))
	return withIndexNotice(fmt.Sprintf("Wrote %d bytes to %s", len(content), clean), clean, content), nil
}

// withIndexNotice adds memdir.IndexNotice to a tool's answer when the
// file written is an index.
func withIndexNotice(answer, path, content string) string {
	if filepath.Base(path) != memdir.EntrypointName {
		return answer
	}
	if n := memdir.IndexNotice(path, content, memdir.IndexLimits{}); n != "" {
		return answer + "\n\n" + n
	}
	return answer
}

// fsError explains a failed read or write: the gate's refusal, or what the
// filesystem said.
func (t *Toolset) fsError(clean string, err error) error {
	if refused := t.refusal(err); refused != nil {
		return refused
	}
	var te *memdir.ToolError
	if errors.As(err, &te) {
		return te
	}
	var he *memdir.HistoryError
	if errors.As(err, &he) {
		return toolErr("%s was not written: its previous version could not be saved for undo", clean)
	}
	return describe(clean, err)
}

// editTool returns the Edit tool: replace an exact string that occurs once
// (or every occurrence with replace_all).
func (t *Toolset) editTool() llm.Tool {
	return tool(memdir.ToolEdit,
		"Replace old_string with new_string in a memory file. old_string must match exactly and occur once, unless replace_all is true.",
		`{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`,
		func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				FilePath string `json:"file_path"`
				edit
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			return t.edit(ctx, in.FilePath, []edit{in.edit})
		})
}

// multiEditTool returns the MultiEdit tool: several Edit replacements
// applied in order to one file, all or none.
func (t *Toolset) multiEditTool() llm.Tool {
	return tool(memdir.ToolMultiEdit,
		"Apply several exact string replacements to one memory file, in order. Each old_string must match the text as left by the edits before it and occur once, unless its replace_all is true. Either every edit applies or the file is left unchanged.",
		`{"type":"object","properties":{"file_path":{"type":"string"},"edits":{"type":"array","minItems":1,"items":{"type":"object","properties":{"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["old_string","new_string"],"additionalProperties":false}}},"required":["file_path","edits"],"additionalProperties":false}`,
		func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				FilePath string `json:"file_path"`
				Edits    []edit `json:"edits"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if len(in.Edits) == 0 {
				return "", toolErr("edits must hold at least one edit")
			}
			return t.edit(ctx, in.FilePath, in.Edits)
		})
}

// edit is one replacement of Edit or MultiEdit.
type edit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// edit applies edits to the file at p through the write gate: the file
// is read, changed and written back in one locked cycle for MEMORY.md,
// and the result is scanned for secrets when it is team memory.
func (t *Toolset) edit(ctx context.Context, p string, calls []edit) (string, error) {
	clean, err := t.resolve(p, false)
	if err != nil {
		return "", err
	}
	for i, e := range calls {
		if e.OldString == "" {
			return "", toolErr("edit %d: old_string must not be empty; use Write to create a file", i+1)
		}
		if e.OldString == e.NewString {
			return "", toolErr("edit %d: old_string and new_string are the same", i+1)
		}
	}
	info, err := t.fs.Stat(clean)
	if err != nil {
		return "", describe(clean, err)
	}
	if !info.Mode().IsRegular() {
		return "", toolErr("%s is not a regular file", clean)
	}
	if info.Size() > t.opts.MaxFileBytes {
		return "", toolErr("%s is too large to edit", clean)
	}
	var written []byte
	_, err = t.gate.UpdateFile(ctx, clean, func(old []byte, exists bool) ([]byte, error) {
		if !exists {
			return nil, toolErr("%s does not exist", clean)
		}
		if err := t.checkWrite(clean, old, exists, false); err != nil {
			return nil, err
		}
		changes := make([]edits.Edit, len(calls))
		for i, e := range calls {
			changes[i] = edits.Edit{Old: e.OldString, New: e.NewString, All: e.ReplaceAll}
		}
		text, err := edits.Apply(string(old), changes)
		var ee *edits.Error
		switch {
		case errors.As(err, &ee) && ee.Count == 0:
			return nil, toolErr("%sold_string was not found in %s", editLabel(ee.Index, len(calls)), clean)
		case errors.As(err, &ee):
			return nil, toolErr("%sold_string occurs %d times in %s; include more context to make it unique, or set replace_all", editLabel(ee.Index, len(calls)), ee.Count, clean)
		case err != nil:
			return nil, err
		}
		if int64(len(text)) > t.opts.MaxFileBytes {
			return nil, toolErr("the edited file would be too large (%d bytes, limit %d)", len(text), t.opts.MaxFileBytes)
		}
		written = []byte(text)
		return written, nil
	}, info.Mode().Perm())
	if err != nil {
		return "", t.fsError(clean, err)
	}
	t.recordWrite(clean, written)
	return withIndexNotice("Edited "+clean, clean, string(written)), nil
}

// editLabel names edit i of n in an error ("edit 2: "), or nothing for a
// single Edit.
func editLabel(i, n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf("edit %d: ", i+1)
}

// grepTool returns the Grep tool: a regular expression over the files
// below a directory (or in one file).
func (t *Toolset) grepTool() llm.Tool {
	return tool(memdir.ToolGrep,
		"Search memory files with a regular expression (RE2 syntax). By default lists the files that match; output_mode \"content\" shows matching lines.",
		`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string","description":"absolute directory or file; defaults to the memory directory"},"glob":{"type":"string","description":"only files whose name matches, e.g. *.md"},"output_mode":{"type":"string","enum":["files_with_matches","content"]},"case_insensitive":{"type":"boolean"}},"required":["pattern"],"additionalProperties":false}`,
		func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				Pattern         string `json:"pattern"`
				Path            string `json:"path"`
				Glob            string `json:"glob"`
				OutputMode      string `json:"output_mode"`
				CaseInsensitive bool   `json:"case_insensitive"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			return t.grep(ctx, in.Pattern, in.Path, in.Glob, in.OutputMode == "content", in.CaseInsensitive)
		})
}

func (t *Toolset) grep(ctx context.Context, pattern, dir, glob string, content, fold bool) (string, error) {
	if pattern == "" {
		return "", toolErr("pattern is required")
	}
	if fold {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", toolErr("the pattern is not a valid regular expression: %v", err)
	}
	if glob != "" {
		if _, err := path.Match(glob, ""); err != nil {
			return "", toolErr("the glob is not valid")
		}
	}
	start, files, err := t.files(ctx, dir)
	if err != nil {
		return "", err
	}
	searched := start
	if len(files) == 1 && files[0] == start {
		searched = filepath.Dir(start) // a single file
	}
	rd, err := t.gate.Reader(searched)
	if err != nil {
		return "", describe(start, err)
	}
	defer rd.Close()
	var b strings.Builder
	hits, truncated := 0, false
	var buf bytes.Buffer
	for i, f := range files {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		if glob != "" {
			if ok, _ := path.Match(glob, filepath.Base(f)); !ok {
				continue
			}
		}
		data, ok := t.readSmall(rd, f, &buf)
		if !ok || !re.Match(data) {
			continue
		}
		if !content {
			if hits == t.opts.MaxResults || b.Len() >= t.opts.MaxOutputBytes {
				truncated = true
				break
			}
			b.WriteString(f + "\n")
			hits++
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if hits == t.opts.MaxResults || b.Len() >= t.opts.MaxOutputBytes {
				truncated = true
				break
			}
			fmt.Fprintf(&b, "%s:%d:%s\n", f, i+1, t.cut(line))
			hits++
		}
		if truncated {
			break
		}
	}
	if hits == 0 {
		return "No matches under " + start, nil
	}
	if truncated {
		b.WriteString("(more matches not shown; narrow the pattern or the path)\n")
	}
	return b.String(), nil
}

// readSmall reads a file the walk found, through rd, unless it is over
// the size limit or binary. buf is reused between calls.
func (t *Toolset) readSmall(rd *memdir.Reader, p string, buf *bytes.Buffer) ([]byte, bool) {
	f, err := rd.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(f, t.opts.MaxFileBytes+1))
	if err != nil || n > t.opts.MaxFileBytes {
		return nil, false
	}
	data := buf.Bytes()
	if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return nil, false
	}
	return data, true
}

// files lists the regular files below dir (default: the first root), or
// dir itself when it is a file, sorted by path. Links are not followed.
func (t *Toolset) files(ctx context.Context, dir string) (string, []string, error) {
	clean, err := t.resolve(cmp.Or(dir, t.roots[0]), true)
	if err != nil {
		return "", nil, err
	}
	info, err := t.fs.Stat(clean)
	if err != nil {
		return "", nil, describe(clean, err)
	}
	if !info.IsDir() {
		return clean, []string{clean}, nil
	}
	var out []string
	err = fswalk.Walk(ctx, t.fs, clean, func(e fswalk.Entry) error {
		if e.Type.IsRegular() {
			out = append(out, e.Abs)
		}
		return nil
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", nil, ctxErr
		}
		return "", nil, describe(clean, err)
	}
	return clean, out, nil
}
