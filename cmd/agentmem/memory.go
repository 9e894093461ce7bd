package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// cliHistory starts the name of the file history each of the CLI's own
// memory edits (new, rm) is recorded in, one history per edit, so its
// undo touches only the files that edit changed.
const cliHistory = "agentmem-cli"

// doneSuffix ends the name of the snapshot a CLI edit takes when it has
// finished: the state it left, which its undo checks nobody changed
// since (filehistory.RewindOptions.IfUnchangedSince).
const doneSuffix = "-done"

// maxBodyBytes bounds the body new reads from standard input.
const maxBodyBytes = 1 << 20

// optString is a string flag that remembers whether it was given.
type optString struct {
	v   string
	set bool
}

func (o *optString) String() string     { return o.v }
func (o *optString) Set(s string) error { o.v, o.set = s, true; return nil }

func newFlags(fs *flag.FlagSet) runner {
	typ := fs.String("type", "", "the memory's type: user, feedback, project or reference (required)")
	name := fs.String("name", "", "a short title; it also titles the index pointer and names the file (required)")
	desc := fs.String("description", "", "one line that says when the memory is relevant (required)")
	var body optString
	fs.Var(&body, "body", "the memory itself, as `text` (default: read from standard input)")
	file := fs.String("file", "", "the file to write, relative to the memory directory, such as deploys.md or team/ci.md (default derived from --name)")
	why := fs.String("why", "", "why the rule or fact holds (a **Why:** line)")
	how := fs.String("how-to-apply", "", "when and how to apply it (a **How to apply:** line)")
	replace := fs.Bool("replace", false, "overwrite a memory file that exists already (undoable)")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) > 0 {
			return exitError, fmt.Errorf("unexpected argument %q (the body goes in --body or on standard input)", args[0])
		}
		m := memdir.Memory{File: *file, Name: strings.TrimSpace(*name), Description: strings.TrimSpace(*desc), Why: *why, HowToApply: *how}
		t, ok := memdir.ParseMemoryType(*typ)
		switch {
		case *typ == "":
			return exitError, errors.New("--type is required: user, feedback, project or reference")
		case !ok:
			return exitError, fmt.Errorf("--type %q is not a memory type: want user, feedback, project or reference", *typ)
		case m.Name == "":
			return exitError, errors.New("--name is required: a short title, such as --name \"Testing policy\"")
		case m.Description == "":
			return exitError, errors.New("--description is required: one line that says when the memory is relevant")
		}
		m.Type = t
		text, err := memoryBody(e, body)
		if err != nil {
			return exitError, err
		}
		m.Body = text
		return runNew(e, c, m, *replace)
	}
}

// memoryBody is --body, else standard input.
func memoryBody(e env, body optString) (string, error) {
	text := body.v
	if !body.set {
		if e.stdin == nil {
			return "", errors.New("no body: pass --body TEXT or pipe the memory on standard input")
		}
		if f, ok := e.stdin.(*os.File); ok {
			if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
				fmt.Fprintln(e.stderr, "reading the memory from standard input; end it with Ctrl-D (or pass --body TEXT)")
			}
		}
		data, err := io.ReadAll(io.LimitReader(e.stdin, maxBodyBytes+1))
		if err != nil {
			return "", fmt.Errorf("read the body from standard input: %w", err)
		}
		if len(data) > maxBodyBytes {
			return "", fmt.Errorf("the body on standard input is over %d bytes: a memory should be a short note", maxBodyBytes)
		}
		text = string(data)
	}
	if strings.TrimSpace(text) == "" {
		return "", errors.New("the memory has no body: pass --body TEXT or pipe it on standard input")
	}
	return text, nil
}

func runNew(e env, c *common, m memdir.Memory, replace bool) (int, error) {
	r, err := writableMemory(e, c)
	if err != nil {
		return exitError, err
	}
	d, err := memdir.NewDir(e.fs, filepath.Clean(r.path.Dir), memdir.DirOptions{})
	if err != nil {
		return exitError, err
	}
	// The file Save will write, known first so an existing memory is not
	// overwritten by accident.
	file, err := memdir.MemoryFileName(m)
	if err != nil {
		return exitError, err
	}
	m.File = file
	if _, err := e.fs.Stat(filepath.Join(d.Path(), filepath.FromSlash(file))); err == nil && !replace {
		return exitError, fmt.Errorf("%s exists already: pass --replace to overwrite it (undoable), or choose another --name or --file; nothing was written", file)
	}
	d, change, err := tracked(e, c, d, "new")
	if err != nil {
		return exitError, err
	}
	res, err := d.Save(context.Background(), m)
	if err != nil {
		return exitError, change.failed(e, c, err)
	}
	fmt.Fprintf(e.stdout, "saved %s memory %s\n", m.Type, res.File)
	fmt.Fprintf(e.stdout, "index: %s\n", res.IndexLine)
	return change.done(e, c)
}

func showFlags(*flag.FlagSet) runner {
	return func(e env, c *common, args []string) (int, error) {
		d, file, err := namedMemory(e, c, args)
		if err != nil {
			return exitError, err
		}
		f, err := d.Gate().Open(filepath.Join(d.Path(), filepath.FromSlash(file)))
		if err != nil {
			return exitError, err
		}
		defer f.Close()
		if _, err := io.Copy(e.stdout, f); err != nil {
			return exitError, err
		}
		return exitOK, nil
	}
}

func rmFlags(*flag.FlagSet) runner {
	return func(e env, c *common, args []string) (int, error) {
		d, file, err := namedMemory(e, c, args)
		if err != nil {
			return exitError, err
		}
		d, change, err := tracked(e, c, d, "rm")
		if err != nil {
			return exitError, err
		}
		if err := d.Delete(context.Background(), file); err != nil {
			return exitError, change.failed(e, c, err)
		}
		index := memdir.EntrypointName
		if strings.HasPrefix(file, memdir.TeamDirName+"/") {
			index = memdir.TeamDirName + "/" + memdir.EntrypointName
		}
		fmt.Fprintf(e.stdout, "removed %s and its pointer in %s\n", file, index)
		return change.done(e, c)
	}
}

// nameKey folds a memory name for matching: lower case, and runs of
// spaces, '-' and '_' made one '-'.
func nameKey(s string) string {
	return strings.Join(strings.FieldsFunc(memdir.LinkKey(norm.NFC.String(s)), func(r rune) bool { return r == ' ' || r == '-' || r == '_' || r == '\t' }), "-")
}

func oneTarget(args []string) (string, error) {
	switch {
	case len(args) == 0:
		return "", errors.New("which memory? give its file (deploys.md, team/ci.md) or its name (see agentmem ls)")
	case len(args) > 1:
		return "", fmt.Errorf("unexpected argument %q (quote a name with spaces)", args[1])
	}
	return args[0], nil
}

// findMemory returns the memory file target names: a file relative to
// the memory directory, or a memory's name or file stem, as [[name]]
// links name one, with case, spaces, '-' and '_' not told apart (the
// header may hold "testing-policy" for the title "Testing policy").
// namedMemory resolves the memory directory of show and rm and the one
// memory file their argument names.
func namedMemory(e env, c *common, args []string) (*memdir.Dir, string, error) {
	target, err := oneTarget(args)
	if err != nil {
		return nil, "", err
	}
	r, err := existingMemory(e, c)
	if err != nil {
		return nil, "", err
	}
	d, err := memdir.NewDir(e.fs, filepath.Clean(r.path.Dir), memdir.DirOptions{})
	if err != nil {
		return nil, "", err
	}
	file, err := findMemory(e, d, target)
	return d, file, err
}

func findMemory(e env, d *memdir.Dir, target string) (string, error) {
	headers, err := memdir.ScanMemoryFiles(context.Background(), e.fs, d.Path(), memdir.ScanOptions{MaxFiles: 1 << 20})
	if err != nil {
		return "", err
	}
	rel := filepath.ToSlash(strings.TrimPrefix(target, "./"))
	key := nameKey(target)
	var matches []string
	for _, h := range headers {
		if h.Filename == rel {
			return h.Filename, nil
		}
		if slices.ContainsFunc(memdir.LinkNames(h.Filename, h.Name), func(k string) bool { return nameKey(k) == key }) {
			matches = append(matches, h.Filename)
		}
	}
	sort.Strings(matches)
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("no memory %q in %s: give a file or a name that agentmem ls shows", target, d.Path())
	case 1:
		return matches[0], nil
	}
	return "", fmt.Errorf("%q names several memories (%s): give the file", target, strings.Join(matches, ", "))
}

// writableMemory resolves the memory directory for a command that writes
// a memory: memory must be enabled; the directory need not exist (the
// first save creates it), but a --dir's parent must, so a mistyped --dir
// is an error and not a new tree.
func writableMemory(e env, c *common) (resolved, error) {
	r, err := resolve(e, c)
	if err != nil {
		return r, err
	}
	if !memoryEnabled(e, c, r.project) {
		return r, errMemoryDisabled
	}
	parent := filepath.Dir(filepath.Clean(r.path.Dir))
	if info, err := e.fs.Stat(parent); r.explicit && (err != nil || !info.IsDir()) {
		return r, fmt.Errorf("the memory directory's parent does not exist: %s (check --dir)", parent)
	}
	return r, nil
}

// cliChange is one CLI edit recorded for undo: its own file history
// and the checkpoint taken before it wrote.
type cliChange struct {
	h                   *filehistory.Tracker
	history, checkpoint string
}

// tracked opens a file history of its own for one CLI edit, takes a
// checkpoint named after the command and returns d made with that
// history (memdir.Dir.WithHistory), so every write records the file's
// version under its lock, as the memory tools do.
func tracked(e env, c *common, d *memdir.Dir, verb string) (*memdir.Dir, *cliChange, error) {
	home, err := configHome(e, c)
	if err != nil {
		return nil, nil, err
	}
	// The checkpoint is named after the real time of the change, not --now.
	checkpoint := filehistory.CheckpointID(verb, time.Now())
	history := cliHistory + "-" + checkpoint
	h, err := filehistory.Open(e.fs, home, history, filehistory.Options{})
	if err != nil {
		return nil, nil, err
	}
	if err := h.MakeSnapshot(context.Background(), checkpoint); err != nil {
		return nil, nil, fmt.Errorf("record the undo checkpoint (nothing was changed): %w", err)
	}
	return d.WithHistory(h), &cliChange{h: h, history: history, checkpoint: checkpoint}, nil
}

// done records the state the edit left and prints its undo command.
func (ch *cliChange) done(e env, c *common) (int, error) {
	if err := ch.h.MakeSnapshot(context.Background(), ch.checkpoint+doneSuffix); err != nil {
		return exitError, fmt.Errorf("the change was made, but what it left could not be recorded: %w; undo it with %s", err, ch.undoCommand(c))
	}
	fmt.Fprintf(e.stdout, "undo with: %s\n", ch.undoCommand(c))
	return exitOK, nil
}

// failed reports an edit that stopped part way: whatever it wrote is
// recorded, and the undo command is part of the error.
func (ch *cliChange) failed(e env, c *common, err error) error {
	st, rerr := ch.h.Rewind(context.Background(), ch.checkpoint, filehistory.RewindOptions{DryRun: true})
	if rerr != nil {
		return err
	}
	if len(st.FilesChanged) == 0 {
		// Nothing was written: the history this change opened (its own,
		// named after it) would only list an empty checkpoint.
		_ = e.fs.RemoveAll(ch.h.Dir())
		return err
	}
	_ = ch.h.MakeSnapshot(context.Background(), ch.checkpoint+doneSuffix)
	return fmt.Errorf("%w; what was written can be undone with %s", err, ch.undoCommand(c))
}

// undoCommand is the rewind command that undoes the edit.
func (ch *cliChange) undoCommand(c *common) string {
	return rewindCommand(c, ch.checkpoint, ch.history)
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
