package memdir

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/secrets"
)

// maxIndexLineRunes is the length a pointer line in MEMORY.md is kept to;
// a longer hook is shortened with an ellipsis.
const maxIndexLineRunes = 150

// ErrInvalidMemory is matched (errors.Is) by every error Save returns for a
// Memory it refuses; the message says which field is wrong.
var ErrInvalidMemory = errors.New("invalid memory")

func invalidMemory(format string, args ...any) error {
	return fmt.Errorf("memdir: %w: %s", ErrInvalidMemory, fmt.Sprintf(format, args...))
}

// Memory is one memory to save.
type Memory struct {
	// File is the topic file, relative to the memory directory, with "/"
	// separators and a ".md" suffix, such as "testing_policy.md" or
	// "team/ci.md". Empty means derived from Name.
	File string
	// Name is a short title; it also titles the index pointer.
	Name string
	// Description is the one-line hook used to judge relevance later.
	Description string
	// Type is one of the four memory types, or empty.
	Type MemoryType
	// Body is the memory itself. For feedback and project memories, lead
	// with the rule or fact.
	Body string
	// Why and HowToApply, when set, are appended as "**Why:**" and
	// "**How to apply:**" lines.
	Why        string
	HowToApply string
	// IfVersion, when set, makes the save conditional: IfVersionNew
	// ("new") creates the file and refuses to replace one, and a version
	// (MemoryVersion, as SaveResult.Version gives it) replaces the file
	// only while it still holds that version. A refused save is a
	// *VersionError (ErrVersionMismatch) and writes nothing.
	IfVersion string
	// Metadata holds header fields to keep, as Frontmatter.Metadata reads
	// them (node_type, originSessionId, modified and any other key): Save
	// merges those of the file it replaces with these, so a rewrite never
	// drops what another tool wrote. modified is always refreshed.
	Metadata map[string]string
}

// SaveResult describes what Save wrote.
type SaveResult struct {
	// Path is the absolute path of the topic file.
	Path string
	// File is Path relative to the memory directory, "/"-separated.
	File string
	// IndexLine is the pointer line now in MEMORY.md.
	IndexLine string
	// ReplacedPointer reports whether an existing pointer to the same file
	// was replaced rather than a new one appended.
	ReplacedPointer bool
	// Version is the saved file's version (MemoryVersion): give it as
	// Memory.IfVersion to replace the file only if nobody changed it.
	Version string
}

// Dir is one memory directory on a filesystem. It is safe for concurrent
// use, and so are several Dir values and several processes on one
// directory: every write goes through the directory's WriteGate, and
// MEMORY.md updates hold the index lock, so no pointer is lost.
type Dir struct {
	fs   afero.Fs
	path string
	gate *WriteGate
	opts DirOptions
}

// DirOptions tunes a Dir; the zero value writes Claude Code 2.1.328's
// layout with the real clock.
type DirOptions struct {
	// Layout of the memory files Save writes (default LayoutCurrent).
	Layout Layout
	// SessionID, when set, is the originSessionId of files Save creates.
	SessionID string
	// Now stamps metadata.modified (default time.Now).
	Now func() time.Time
	// Synced says the directory is synced to the user's account: Save
	// refuses a secret in any file, as in team memory.
	Synced bool
	// Scanner finds secrets in the writes that are scanned; nil means
	// secrets.New(). Give the host's own to have every write of every
	// layer built on this Dir use it.
	Scanner *secrets.Scanner
	// Team says the directory is itself a team directory, whatever its
	// name (a team directory synced on its own): every write is scanned,
	// as in the team directory of a memory directory.
	Team bool
}

// NewDir returns the memory directory at path (absolute) on fsys. The
// directory need not exist yet.
func NewDir(fsys afero.Fs, path string, opts DirOptions) (*Dir, error) {
	if fsys == nil {
		return nil, errors.New("memdir: NewDir needs a filesystem (afero.Fs)")
	}
	if !filepath.IsAbs(path) {
		return nil, errors.New("memdir: NewDir needs an absolute directory path")
	}
	p := filepath.Clean(path)
	gopts := gateOptions{Synced: opts.Synced, Scanner: opts.Scanner}
	if opts.Team {
		gopts.TeamDirs = []string{p}
	}
	gate, err := newWriteGate(fsys, []string{p}, gopts)
	if err != nil {
		return nil, err
	}
	return &Dir{fs: fsys, path: p, gate: gate, opts: opts}, nil
}

// Scanner returns the secret scanner every scanned write into the
// directory uses (DirOptions.Scanner, or the default one).
func (d *Dir) Scanner() *secrets.Scanner { return d.gate.scanner }

// Sub returns a view of the folder rel (relative, "/"-separated, inside
// the directory) such as the team directory, a store mount or a
// conflicts folder: a Dir whose path is that folder and whose writes may
// land only there, sharing d's filesystem, locks, scanner, synced flag and
// history. A write through the view is the write d would make of the same
// path: a file in the team directory is a team write (scanned, under the
// team index's lock) whichever handle makes it.
func (d *Dir) Sub(rel string) (*Dir, error) {
	if rel == "" || strings.ContainsRune(rel, 0) || path.IsAbs(rel) || filepath.IsAbs(rel) || path.Clean(rel) != rel || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
		return nil, &PathTraversalError{Reason: ReasonNotMemoryPath, Detail: "a view needs a clean relative folder inside the memory directory"}
	}
	abs := filepath.Join(d.path, filepath.FromSlash(rel))
	if _, err := d.gate.CheckPath(abs); err != nil {
		return nil, err
	}
	g := *d.gate
	g.within = cleanDir(abs)
	return &Dir{fs: d.fs, path: abs, gate: &g, opts: d.opts}, nil
}

// WithHistory returns a handle on the same directory (or view) whose
// every write, by any layer it is given to, first records the file's
// version in h under the write's lock, after the checks and just before
// the file changes, so the version saved for undo is exactly the one the
// write replaces (a rename records both paths; RemoveAll records none).
// A History that fails stops the write with a *HistoryError. A nil h
// returns a handle that records nothing.
func (d *Dir) WithHistory(h History) *Dir {
	if v := reflect.ValueOf(h); h != nil && v.Kind() == reflect.Pointer && v.IsNil() {
		h = nil // a nil *filehistory.Tracker records nothing
	}
	g := *d.gate
	g.history = h
	c := *d
	c.gate = &g
	return &c
}

// WithRoots returns a handle on the same directory whose tools may also
// reach dirs (absolute; read-only material such as session transcripts,
// which a permission function keeps the model from writing), with d's
// scanner, synced flag and history.
func (d *Dir) WithRoots(dirs ...string) (*Dir, error) {
	if d.gate.within != "" {
		return nil, errors.New("memdir: a view of a folder cannot take more roots")
	}
	roots := append(d.gate.Roots(), dirs...)
	g, err := newWriteGate(d.fs, roots, gateOptions{Synced: d.opts.Synced, Scanner: d.gate.scanner})
	if err != nil {
		return nil, err
	}
	g.history, g.prov, g.provState = d.gate.history, d.gate.prov, d.gate.provState
	c := *d
	c.gate = g
	return &c, nil
}

// WithPath returns the memory directory at path (absolute) with d's
// filesystem, layout, scanner and synced flag, and no history: a folder
// beside d with d's rules, such as a consolidation's stage or the
// conflicts folder beside a team directory (which is not a team
// directory: DirOptions.Team is not carried).
func (d *Dir) WithPath(path string) (*Dir, error) {
	opts := d.opts
	opts.Team, opts.Scanner = false, d.gate.scanner
	return NewDir(d.fs, path, opts)
}

// keptMetadata merges the header fields of old (the file being replaced,
// nil when there is none) with extra, extra winning.
func keptMetadata(old []byte, extra map[string]string) map[string]string {
	out := map[string]string{}
	if fm, _, err := ParseFrontmatter(old); err == nil {
		maps.Copy(out, fm.Metadata)
	}
	maps.Copy(out, extra)
	return out
}

// Gate returns the WriteGate every write into the directory goes through.
func (d *Dir) Gate() *WriteGate { return d.gate }

// saveError explains a refused or failed topic-file write; refusals
// (*PathTraversalError, *secrets.Error) keep their type for errors.As.
func saveError(file string, err error) error {
	return fmt.Errorf("memdir: write memory file %s: %w", file, err)
}

// FS returns the filesystem the directory lives on.
func (d *Dir) FS() afero.Fs { return d.fs }

// Path returns the directory's absolute path, without a trailing separator.
func (d *Dir) Path() string { return d.path }

// Save writes m as a topic file with YAML frontmatter and puts its one-line
// pointer in MEMORY.md, each with an atomic replace (temp file + rename), so
// a crash leaves either the old or the new version of each file. Both
// writes go through the directory's WriteGate: a file that would land
// outside the directory through a symbolic link is refused with a
// *PathTraversalError, and a team memory (File under "team/") whose text
// holds a credential with a *secrets.Error (errors.Is secrets.ErrFound);
// a memory that `agentmem lint` would report (CheckMemoryFile,
// CheckIndexLine: a body that is not UTF-8 text, no name or description,
// a name that makes the index line too long) with a *MemoryError
// (errors.Is ErrInvalidMemory); nothing is written then. A pointer
// that already links the same file is replaced in place (and any duplicate
// pointers to it dropped) instead of being added again. The topic file is
// written first: if the index update fails, the memory is saved but not
// indexed, and the error says so.
func (d *Dir) Save(ctx context.Context, m Memory) (SaveResult, error) {
	file, err := memoryFileName(m)
	if err != nil {
		return SaveResult{}, err
	}
	if m.Type != "" {
		if _, ok := ParseMemoryType(string(m.Type)); !ok {
			return SaveResult{}, invalidMemory("unknown type %q (want user, feedback, project or reference)", m.Type)
		}
	}
	// The pointer goes into the index of the directory that holds the file
	// directly: team/x.md is indexed in team/MEMORY.md.
	indexDir, linkTarget := d.path, file
	if strings.HasPrefix(file, TeamDirName+"/") {
		indexDir, linkTarget = filepath.Join(d.path, TeamDirName), strings.TrimPrefix(file, TeamDirName+"/")
	}
	line := IndexLine(m, linkTarget)
	if err := CheckIndexLine(line); err != nil {
		return SaveResult{}, err
	}
	// The pointer line is screened before anything is written, so a name
	// or description the index would refuse leaves no unindexed file.
	indexAbs := filepath.Join(indexDir, EntrypointName)
	t, err := d.gate.CheckPath(indexAbs)
	if err != nil {
		return SaveResult{}, err
	}
	if err := d.gate.CheckContent(t, line+"\n"); err != nil {
		return SaveResult{}, err
	}
	abs := filepath.Join(d.path, filepath.FromSlash(file))
	opts := FormatOptions{Layout: d.opts.Layout, Team: strings.HasPrefix(file, TeamDirName+"/"), SessionID: d.opts.SessionID, Now: d.opts.Now}
	// The header fields of the file it replaces are read under the same
	// lock as the write, so a concurrent writer's fields are not lost.
	var version string
	if _, err := d.gate.UpdateFile(ctx, abs, func(old []byte, exists bool) ([]byte, error) {
		if err := checkIfVersion(file, m.IfVersion, old, exists); err != nil {
			return nil, err
		}
		m.Metadata = keptMetadata(old, m.Metadata)
		data, err := FormatMemoryFile(m, opts)
		if err != nil {
			return nil, err
		}
		// What lint would report is not written.
		if problems := CheckMemoryFile(file, data); len(problems) > 0 {
			return nil, problems[0]
		}
		version = MemoryVersion(data)
		return data, nil
	}, 0o644); err != nil {
		var me *MemoryError
		var ve *VersionError
		if errors.As(err, &me) || errors.As(err, &ve) {
			return SaveResult{}, err
		}
		return SaveResult{}, saveError(file, err)
	}

	replaced := false
	_, err = d.gate.UpdateFile(ctx, indexAbs, func(old []byte, _ bool) ([]byte, error) {
		var updated string
		updated, replaced = upsertPointer(string(old), linkTarget, line)
		return []byte(updated), nil
	}, 0o644)
	if err != nil {
		return SaveResult{}, fmt.Errorf("memdir: memory %s saved but %s could not be updated: %w", file, EntrypointName, err)
	}
	return SaveResult{Path: abs, File: file, IndexLine: line, ReplacedPointer: replaced, Version: version}, nil
}

// IfVersionNew is the Memory.IfVersion of a save that creates a memory
// and never replaces one.
const IfVersionNew = "new"

// ErrVersionMismatch is what a *VersionError matches: a save's IfVersion
// did not hold.
var ErrVersionMismatch = errors.New("memdir: the memory is not at the version the save expected")

// VersionError reports a save refused by its IfVersion: the file exists
// where it was to be created ("new"), or holds another version than the
// one given (Current, "" when the file does not exist). Nothing was
// written.
type VersionError struct {
	File, Want, Current string
}

func (e *VersionError) Error() string {
	switch {
	case e.Want == IfVersionNew:
		return fmt.Sprintf("memdir: %s already exists (version %s) and the save was to create it; nothing was written: read it and save with its version to replace it", e.File, e.Current)
	case e.Current == "":
		return fmt.Sprintf("memdir: %s does not exist, and the save expected version %s; nothing was written", e.File, e.Want)
	}
	return fmt.Sprintf("memdir: %s is at version %s, not %s: someone changed it since it was read; nothing was written: read it again", e.File, e.Current, e.Want)
}

func (e *VersionError) Is(target error) bool { return target == ErrVersionMismatch }

// MemoryVersion is the version of a memory file's content: the first 12
// hex digits of its SHA-256, as Claude Code names a memory's version.
func MemoryVersion(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:6])
}

// checkIfVersion refuses a save whose IfVersion does not hold for the
// file as it is (under the write's lock).
func checkIfVersion(file, want string, old []byte, exists bool) error {
	cur := ""
	if exists {
		cur = MemoryVersion(old)
	}
	switch {
	case want == "":
		return nil
	case want == IfVersionNew && !exists:
		return nil
	case want != IfVersionNew && exists && want == cur:
		return nil
	}
	return &VersionError{File: file, Want: want, Current: cur}
}

// MemoryFileName returns the file Save writes m to, relative to the
// memory directory: m.File when set, else derived from m.Name
// ("Testing policy" gives "testing_policy.md"). A file Save would refuse
// gives an error matching ErrInvalidMemory.
func MemoryFileName(m Memory) (string, error) { return memoryFileName(m) }

// memoryFileName validates m.File, or derives it from m.Name.
func memoryFileName(m Memory) (string, error) {
	file := m.File
	if file == "" {
		slug := slugify(m.Name)
		if slug == "" {
			return "", invalidMemory("the memory needs a name with letters or digits (its file name is made from it), or a file name ending in .md")
		}
		file = slug + ".md"
	}
	switch {
	case strings.ContainsAny(file, "\\\x00"):
		return "", invalidMemory("file name contains a backslash or NUL")
	case path.IsAbs(file) || filepath.IsAbs(file):
		return "", invalidMemory("file must be relative to the memory directory")
	case file == ".." || strings.HasPrefix(file, "../"):
		return "", invalidMemory("the file %q would leave the memory directory; give a path inside it, such as notes/x.md", file)
	case path.Clean(file) != file:
		return "", invalidMemory("file must be a clean relative path without . or .. segments")
	case !strings.HasSuffix(file, ".md"):
		return "", invalidMemory("file must end in .md")
	case path.Base(file) == EntrypointName:
		return "", invalidMemory("%s is the index, not a memory file", EntrypointName)
	}
	if fswalk.Hidden(file) {
		return "", invalidMemory("file path segments must not start with a dot")
	}
	return file, nil
}

// slugify makes a file stem from a title: its letters, marks and digits
// in any script, lower-cased and in NFC (a title typed in NFD names the
// same file), other runs of characters become one '_', at most 60 bytes.
func slugify(name string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range strings.ToLower(norm.NFC.String(name)) {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || (unicode.Is(unicode.M, r) && b.Len() > 0 && !pendingSep)
		if !word {
			pendingSep = true
			continue
		}
		sep := pendingSep && b.Len() > 0
		if b.Len()+utf8.RuneLen(r)+btoi(sep) > 60 {
			break
		}
		if sep {
			b.WriteByte('_')
		}
		pendingSep = false
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FormatMemoryFile renders m as a memory file: a YAML header in the
// layout opts asks for (LayoutCurrent by default; values quoted when YAML
// needs it) and the body. Newlines in Name and Description are folded to
// spaces, since both must be one line.
func FormatMemoryFile(m Memory, opts FormatOptions) ([]byte, error) {
	header, err := encodeHeader(headerOut(m, opts))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("---\n")
	b.Write(header)
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimSpace(m.Body))
	b.WriteByte('\n')
	if m.Why != "" {
		b.WriteString("\n**Why:** " + oneLine(m.Why) + "\n")
	}
	if m.HowToApply != "" {
		if m.Why == "" {
			b.WriteByte('\n')
		}
		b.WriteString("**How to apply:** " + oneLine(m.HowToApply) + "\n")
	}
	return []byte(b.String()), nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// IndexLine renders the MEMORY.md pointer for m stored at target (relative
// to the index): "- [Title](target) — hook", kept within
// maxIndexLineRunes by shortening the hook. The line carries one link:
// brackets in the title and the hook become parentheses, angle brackets
// in the hook become ‹ and ›, and a URL's "://" and a "www." host take a
// look-alike colon and dot, so no renderer follows them.
func IndexLine(m Memory, target string) string {
	title := cmp.Or(oneLine(m.Name), strings.TrimSuffix(path.Base(target), ".md"))
	title = linkText(strings.NewReplacer("[", "(", "]", ")").Replace(title))
	line := "- [" + title + "](" + target + ")"
	// The hook is text, never a link: a description's brackets and angle
	// brackets would give the pointer line a second link, perhaps out of
	// the directory.
	hook := linkText(hookText.Replace(oneLine(m.Description)))
	if hook == "" {
		return line
	}
	room := maxIndexLineRunes - utf8.RuneCountInString(line) - len(" — ")
	if room < 8 {
		return line
	}
	if utf8.RuneCountInString(hook) > room {
		r := []rune(hook)
		hook = strings.TrimSpace(string(r[:room-1])) + "…"
	}
	return line + " — " + hook
}

// hookText turns the characters that open a Markdown link, an autolink
// or an HTML tag into ones that do not.
var hookText = strings.NewReplacer("[", "(", "]", ")", "<", "‹", ">", "›")

// wwwHost is a www. host in any case.
var wwwHost = regexp.MustCompile(`(?i)\bwww\.`)

// linkText turns a bare URL's "://" and a "www." host into look-alikes
// no renderer follows (the memory file keeps the URL as written; the
// pointer line only names it).
func linkText(s string) string {
	s = strings.ReplaceAll(s, "://", "∶//")
	return wwwHost.ReplaceAllStringFunc(s, func(w string) string { return w[:3] + "․" })
}

// upsertPointer replaces the first index line that links target with line
// and drops later lines linking the same target; with none, it appends.
func upsertPointer(index, target, line string) (string, bool) {
	var out []string
	replaced := false
	if strings.TrimSpace(index) != "" {
		for _, l := range strings.Split(strings.TrimRight(index, "\n"), "\n") {
			if linksTo(l, target) {
				if !replaced {
					out = append(out, line)
					replaced = true
				}
				continue
			}
			out = append(out, l)
		}
	}
	if !replaced {
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n", replaced
}

// linksTo reports whether an index line has a markdown link to target
// (also written as "./target").
func linksTo(line, target string) bool {
	for rest := line; ; {
		i := strings.Index(rest, "](")
		if i < 0 {
			return false
		}
		rest = rest[i+2:]
		j := strings.IndexByte(rest, ')')
		if j < 0 {
			return false
		}
		link := strings.TrimSpace(rest[:j])
		if link == target || link == "./"+target {
			return true
		}
		rest = rest[j:]
	}
}
