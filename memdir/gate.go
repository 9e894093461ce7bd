package memdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/filelock"
	"github.com/agentmem-sdk/agentmem/internal/realpath"
	"github.com/agentmem-sdk/agentmem/rootfs"
	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// indexLockTimeout bounds how long a write waits for another writer of the
// same MEMORY.md (another goroutine or process) before it gives up.
const indexLockTimeout = 30 * time.Second

// WriteGate is the one check, and the one way to write, for every path
// that a model or a remote peer chooses inside memory directories: Dir.Save,
// the memory tools, the team sync client's pull and the background agents'
// permission rules all go through it.
//
// It refuses, with a *PathTraversalError and nothing written, any path that
// is not strictly inside one of its roots once cleaned and once symbolic
// links are followed (under the strict policy of one resolver: a dangling
// link, a loop, more than 40 links or a link that cannot be read are
// refused); with a *secrets.Error, content headed for a team
// directory that holds a credential; and, with a *screen.Error, content
// that adds an invisible character, an index line with a foreign link,
// or (shared writes only) a high-confidence injection (CheckContent).
//
// On the real disk (afero.OsFs) every write goes through an os.Root opened
// on the target's memory root (package rootfs), so a directory swapped for
// a symbolic link between the check and the write cannot make the write,
// or its temporary file, land outside: the kernel resolves every component
// inside the root at the moment of the open. On other afero.Fs
// implementations the checked path is written as it is.
//
// Every write and removal holds the lock of its memory root (the lock of
// the root's MEMORY.md, flock on the real disk) from its read to its
// rename, so read-modify-write cycles by several goroutines, Dir values,
// tools or processes never lose each other's changes: the index keeps
// every pointer, and a memory tool's "modified since read" check sees any
// write that landed before its own; on afero.MemMapFs too, where the
// gates of one process over one filesystem share an in-process lock. A
// write waits for the lock until its ctx ends, and at most
// indexLockTimeout.
//
// A WriteGate is safe for concurrent use.
type WriteGate struct {
	fs      afero.Fs
	roots   []string // cleaned, NFC, no trailing separator; longest first
	teams   []string // team directories, same form
	scanner *secrets.Scanner
	synced  bool // every write is scanned (gateOptions.Synced)
	// within, when set, confines the gate to one directory below its
	// roots (a view: Dir.Sub); targets keep the root they have in the
	// whole directory, so the view shares its lock.
	within  string
	history History // records a file's version before a write (Dir.WithHistory)
	// prov is recorded for every shared write (Dir.WithProvenance);
	// provState is shared by every handle of the directory.
	prov      Provenance
	provState *provenanceState
}

// gateOptions configures a WriteGate. The zero value means the defaults.
type gateOptions struct {
	// TeamDirs are directories whose writes are scanned for secrets. By
	// default: the team directory (TeamMemPath) of every root, and every root
	// whose own name is "team".
	TeamDirs []string
	// Scanner finds secrets; nil means secrets.New().
	Scanner *secrets.Scanner
	// Synced says the roots are private memory synced to the user's
	// account (a private memory store): every write under them is
	// scanned, not only team writes, and refused with a *secrets.Error
	// whose Synced is set.
	Synced bool
}

// newWriteGate returns a gate that writes only below roots (absolute
// memory directories, such as the auto-memory directory or an
// agent-memory directory) on fsys. A Dir builds it: every layer takes
// the Dir, so none builds a gate of its own.
func newWriteGate(fsys afero.Fs, roots []string, opts gateOptions) (*WriteGate, error) {
	if fsys == nil {
		return nil, errors.New("memdir: a memory directory needs a filesystem (afero.Fs)")
	}
	if len(roots) == 0 {
		return nil, errors.New("memdir: a memory directory needs at least one path")
	}
	g := &WriteGate{fs: fsys, scanner: opts.Scanner, synced: opts.Synced, provState: &provenanceState{}}
	if g.scanner == nil {
		g.scanner = secrets.New()
	}
	for i, r := range roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("memdir: memory directory %d is not an absolute path", i)
		}
		r = cleanDir(r)
		g.roots = append(g.roots, r)
		if opts.TeamDirs == nil {
			if filepath.Base(r) == TeamDirName {
				g.teams = append(g.teams, r)
			} else {
				g.teams = append(g.teams, cleanDir(TeamMemPath(r)))
			}
		}
	}
	for _, t := range opts.TeamDirs {
		if !filepath.IsAbs(t) {
			return nil, errors.New("memdir: a team directory is not an absolute path")
		}
		g.teams = append(g.teams, cleanDir(t))
	}
	// The innermost root wins when roots nest (a team dir given as a root
	// beside its auto-memory dir).
	longestFirst := func(a, b string) int { return len(b) - len(a) }
	slices.SortStableFunc(g.roots, longestFirst)
	slices.SortStableFunc(g.teams, longestFirst)
	return g, nil
}

// cleanDir cleans and NFC-normalises a directory path and drops any
// trailing separator (the filesystem root stays "/").
func cleanDir(p string) string { return norm.NFC.String(filepath.Clean(p)) }

// inside reports whether clean (a cleaned path) is strictly below dir.
func inside(dir, clean string) bool {
	if dir == string(filepath.Separator) {
		return clean != dir && strings.HasPrefix(clean, dir)
	}
	return strings.HasPrefix(clean, dir+string(filepath.Separator))
}

// Target is a write that passed the path check.
type Target struct {
	// Path is the cleaned absolute path.
	Path string
	// Root is the memory root the write is confined to: the team
	// directory for team writes, else the memory directory holding Path.
	Root string
	// Rel is Path relative to Root.
	Rel string
	// Team reports whether the write lands in a team directory (by name,
	// or through a link inside the memory directory that leads there).
	Team bool
	// Synced reports whether the write lands in private memory that is
	// synced to the user's account (DirOptions.Synced).
	Synced bool
}

// Roots returns the gate's memory directories (a view's own directory).
func (g *WriteGate) Roots() []string {
	if g.within != "" {
		return []string{g.within}
	}
	return append([]string(nil), g.roots...)
}

// CheckPath checks that abs may be written: absolute, no NUL, strictly
// inside a root once cleaned, and still inside it once links are
// followed. A team write is judged against the team directory itself.
func (g *WriteGate) CheckPath(abs string) (Target, error) {
	if strings.IndexByte(abs, 0) >= 0 {
		return Target{}, &PathTraversalError{Reason: ReasonNUL}
	}
	if !filepath.IsAbs(abs) {
		return Target{}, &PathTraversalError{Reason: ReasonNotAbsolute}
	}
	clean := norm.NFC.String(filepath.Clean(abs))
	if g.within != "" && !inside(g.within, clean) {
		return Target{}, &PathTraversalError{Reason: ReasonNotMemoryPath}
	}
	for _, team := range g.teams {
		if inside(team, clean) {
			t := Target{Path: clean, Root: team, Rel: strings.TrimPrefix(clean[len(team):], string(filepath.Separator)), Team: true}
			if err := realpath.Within(g.fs, team, t.Rel); err != nil {
				return Target{}, containmentError(err, true)
			}
			return t, nil
		}
	}
	for _, root := range g.roots {
		if !inside(root, clean) {
			continue
		}
		t := Target{Path: clean, Root: root, Rel: strings.TrimPrefix(clean[len(root):], string(filepath.Separator))}
		if err := realpath.Within(g.fs, root, t.Rel); err != nil {
			return Target{}, containmentError(err, false)
		}
		team, err := g.reachesTeam(root, clean)
		if err != nil {
			return Target{}, containmentError(err, false)
		}
		t.Team, t.Synced = team, g.synced && !team
		return t, nil
	}
	for _, root := range g.roots {
		if strings.HasPrefix(abs, root) {
			// It names a memory root and leaves it once cleaned.
			return Target{}, &PathTraversalError{Reason: ReasonOutsideRoot}
		}
	}
	return Target{}, &PathTraversalError{Reason: ReasonNotMemoryPath}
}

// reachesTeam reports whether clean, a path in root but not in a team
// directory by name, leads into one through a link.
func (g *WriteGate) reachesTeam(root, clean string) (bool, error) {
	if _, ok := g.fs.(afero.Lstater); !ok {
		return false, nil // no links on this filesystem
	}
	real, err := realpath.ResolvePartial(g.fs, clean)
	if err != nil {
		return false, err
	}
	for _, team := range g.teams {
		if !inside(root, team) {
			continue
		}
		realTeam, err := realpath.ResolvePartial(g.fs, team)
		if err != nil {
			return false, err
		}
		if real == realTeam || inside(realTeam, real) {
			return true, nil // the team directory itself is a directory tool's target
		}
	}
	return false, nil
}

// containmentError turns a resolver error into a *PathTraversalError.
func containmentError(err error, team bool) *PathTraversalError {
	switch {
	case errors.Is(err, realpath.ErrOutside):
		if team {
			return &PathTraversalError{Reason: ReasonSymlinkEscape}
		}
		return &PathTraversalError{Reason: ReasonOutsideRoot}
	case errors.Is(err, realpath.ErrDangling):
		return &PathTraversalError{Reason: ReasonDangling}
	case errors.Is(err, realpath.ErrLoop), errors.Is(err, errELOOP):
		return &PathTraversalError{Reason: ReasonLoop}
	case errors.Is(err, realpath.ErrUnreadableLink):
		return &PathTraversalError{Reason: ReasonUnverifiable, Detail: "unreadable symbolic link"}
	}
	return &PathTraversalError{Reason: ReasonUnverifiable, Detail: errorCode(err)}
}

// CheckContent checks content as the whole of what a write would leave
// at t: a team or synced write holding a credential is refused with a
// *secrets.Error; any write holding an invisible or direction-control
// character, or an index (MEMORY.md) whose line carries a second link or
// a link out of its directory, with a *screen.Error; a team or synced
// write holding a high-confidence injection (text addressed to the model
// as instructions, fake system or tool-call markup) with a *screen.Error
// whose Shared is set.
func (g *WriteGate) CheckContent(t Target, content string) error {
	return g.checkChange(t, "", content)
}

// checkChange is CheckContent for a write that replaces old with
// content: the screens refuse only what the write adds, so a line that
// old already held (written before the screens, or outside agentmem)
// never blocks a write; agentmem lint reports it. The secret scanner
// judges the whole content, as before.
func (g *WriteGate) checkChange(t Target, old, content string) error {
	shared := t.Team || t.Synced
	if shared {
		if err := g.scanner.Check(content); err != nil {
			var se *secrets.Error
			if t.Synced && errors.As(err, &se) {
				se.Synced = true
			}
			return err
		}
	}
	found := screen.Blocking(content, screen.Options{Shared: shared, Index: filepath.Base(t.Path) == EntrypointName})
	if len(found) == 0 {
		return nil
	}
	var had map[string]bool
	if old != "" {
		had = map[string]bool{}
		for _, l := range strings.Split(old, "\n") {
			had[l] = true
		}
	}
	for _, f := range found {
		if !had[screen.LineAt(content, f.Offset)] {
			return &screen.Error{Finding: f, Shared: shared}
		}
	}
	return nil
}

// WriteFile checks abs and content and replaces the file atomically,
// creating parent directories, confined to the target's root (see the
// type's documentation). A MEMORY.md is written under its lock.
func (g *WriteGate) WriteFile(ctx context.Context, abs string, data []byte, perm fs.FileMode) (Target, error) {
	return g.UpdateFile(ctx, abs, func([]byte, bool) ([]byte, error) { return data, nil }, perm)
}

// UpdateFile checks abs, then reads the file (exists reports whether it
// was there), passes its content to update and writes what update returns
// (checked for secrets when it is a team write), atomically and confined
// to the target's root. The whole cycle holds the root's lock, so
// concurrent updates never lose each other. An error from update is
// returned as it is and nothing is written.
func (g *WriteGate) UpdateFile(ctx context.Context, abs string, update func(old []byte, exists bool) ([]byte, error), perm fs.FileMode) (Target, error) {
	t, err := g.CheckPath(abs)
	if err != nil {
		return Target{}, err
	}
	if err := g.mayWrite(ctx, t); err != nil {
		return Target{}, err
	}
	fsys, name, done, err := g.open(t)
	if err != nil {
		return Target{}, err
	}
	defer done()
	if err := fsys.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return Target{}, confinedError(err, "create the directory of "+filepath.Base(name))
	}
	unlock, err := g.lock(ctx, fsys, name, t)
	if err != nil {
		return Target{}, err
	}
	defer unlock()
	old, err := afero.ReadFile(fsys, name)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Target{}, confinedError(err, "read "+filepath.Base(name))
	}
	data, err := update(old, exists)
	if err != nil {
		return Target{}, err
	}
	if err := g.checkChange(t, string(old), string(data)); err != nil {
		return Target{}, err
	}
	if info, err := fsys.Stat(name); err == nil && info.IsDir() {
		return Target{}, fmt.Errorf("memdir: %s is a directory", filepath.Base(name))
	}
	if err := g.track(ctx, t.Path); err != nil {
		return Target{}, err
	}
	if err := g.recordProvenance(ctx, t, data, false); err != nil {
		return Target{}, err
	}
	if err := atomicfile.WriteFile(fsys, name, data, perm); err != nil {
		return Target{}, confinedError(err, "write "+filepath.Base(name))
	}
	return t, nil
}

// open returns the filesystem and name to write t through: on the real
// disk a rootfs confined to t.Root (created if missing) and t.Rel,
// otherwise the gate's filesystem and t.Path. done releases it.
func (g *WriteGate) open(t Target) (afero.Fs, string, func(), error) {
	if _, ok := g.fs.(*afero.OsFs); !ok {
		return g.fs, t.Path, func() {}, nil
	}
	if err := os.MkdirAll(t.Root, 0o755); err != nil {
		return nil, "", nil, confinedError(err, "create the memory directory")
	}
	r, err := rootfs.New(t.Root)
	if err != nil {
		return nil, "", nil, confinedError(err, "open the memory directory")
	}
	return r, t.Rel, func() { _ = r.Close() }, nil
}

// lock takes the write lock of t's root: the lock of the root's
// MEMORY.md (name is t's name in fsys, whose root is t.Root on the real
// disk). It waits until ctx ends, at most indexLockTimeout.
func (g *WriteGate) lock(ctx context.Context, fsys afero.Fs, name string, t Target) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	index := filepath.Join(t.Root, EntrypointName)
	if name == t.Rel {
		index = EntrypointName // fsys is confined to t.Root
	}
	ctx, cancel := context.WithTimeout(ctx, indexLockTimeout)
	unlock, err := filelock.Lock(ctx, fsys, index)
	cancel()
	if err != nil {
		return nil, confinedError(err, "lock the memory directory")
	}
	return unlock, nil
}

// confinedError explains a failed write. A path that os.Root refused to
// leave the root through (a link swapped in after the check) is a
// *PathTraversalError; anything else keeps its cause for errors.Is.
func confinedError(err error, what string) error {
	if isEscape(err) {
		return &PathTraversalError{Reason: ReasonSymlinkEscape, Detail: "refused at write time"}
	}
	return fmt.Errorf("memdir: %s: %w", what, err)
}

// isEscape reports whether err is os.Root refusing a path that leaves it.
func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), "path escapes from parent") {
			return true
		}
	}
	return errors.Is(err, errELOOP)
}

// CheckTeamContainment checks that teamDir/rel (rel relative and cleaned)
// stays strictly inside teamDir once symbolic links are followed, under
// the same resolver policy as WriteGate, and returns a *PathTraversalError
// when it does not. teammem's validators use it after their own key and
// prefix checks.
func CheckTeamContainment(fsys afero.Fs, teamDir, rel string) error {
	if err := realpath.Within(fsys, cleanDir(teamDir), rel); err != nil {
		return containmentError(err, true)
	}
	return nil
}

// Remove checks abs like CheckPath and removes the file, confined to its
// root like a write, so a directory swapped for a link cannot make it
// remove a file outside. A file that does not exist is not an error.
func (g *WriteGate) Remove(ctx context.Context, abs string) (Target, error) {
	return g.remove(ctx, abs, false, nil)
}

// RemoveIf is Remove when check, given the file's content read under the
// same lock, accepts it: a removal that must not take a change made
// since it was decided on. check's error is returned as it is, and
// nothing is removed.
func (g *WriteGate) RemoveIf(ctx context.Context, abs string, check func(old []byte, exists bool) error) (Target, error) {
	return g.remove(ctx, abs, false, check)
}

// RemoveAll checks abs like CheckPath and removes it with everything
// below it, confined to its root like a write. A memory root itself is
// never removed. A path that does not exist is not an error.
func (g *WriteGate) RemoveAll(ctx context.Context, abs string) (Target, error) {
	return g.remove(ctx, abs, true, nil)
}

// remove checks abs and removes it (all below it too when all is set),
// confined to its root under the root's lock, once check (when set)
// accepts the file's content.
func (g *WriteGate) remove(ctx context.Context, abs string, all bool, check func(old []byte, exists bool) error) (Target, error) {
	t, err := g.CheckPath(abs)
	if err != nil {
		return Target{}, err
	}
	if err := g.mayRemove(ctx, t); err != nil {
		return Target{}, err
	}
	if all && (t.Rel == "." || t.Rel == "") {
		return Target{}, &PathTraversalError{Reason: ReasonNotMemoryPath, Detail: "a memory root cannot be removed"}
	}
	fsys, name, done, err := g.open(t)
	if err != nil {
		return Target{}, err
	}
	defer done()
	unlock, err := g.lock(ctx, fsys, name, t)
	if err != nil {
		return Target{}, err
	}
	defer unlock()
	if check != nil {
		old, err := afero.ReadFile(fsys, name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Target{}, confinedError(err, "read "+filepath.Base(name))
		}
		if err := check(old, err == nil); err != nil {
			return Target{}, err
		}
	}
	if !all {
		if err := g.track(ctx, t.Path); err != nil {
			return Target{}, err
		}
	}
	rm := fsys.Remove
	if all {
		rm = fsys.RemoveAll
	}
	if err := rm(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Target{}, confinedError(err, "remove "+filepath.Base(name))
	}
	return t, nil
}

// ErrCrossRoot is returned by Rename for a move between two memory roots
// (such as into or out of the team directory): move the files one by one
// with WriteFile and Remove, so each is checked where it lands.
var ErrCrossRoot = errors.New("memdir: a rename cannot cross from one memory root to another (the team directory is its own root)")

// Rename checks both paths like CheckPath and renames from to to inside
// one memory root, confined to it like a write, creating to's parent
// directories. It refuses to replace an existing to (fs.ErrExist).
func (g *WriteGate) Rename(ctx context.Context, from, to string) error {
	tf, err := g.CheckPath(from)
	if err != nil {
		return err
	}
	tt, err := g.CheckPath(to)
	if err != nil {
		return err
	}
	if tf.Root != tt.Root {
		return ErrCrossRoot
	}
	if err := g.mayRemove(ctx, tf); err != nil {
		return err
	}
	if err := g.mayWrite(ctx, tt); err != nil {
		return err
	}
	if tf.Rel == "." || tf.Rel == "" {
		return &PathTraversalError{Reason: ReasonNotMemoryPath, Detail: "a memory root cannot be renamed"}
	}
	fsys, name, done, err := g.open(tf)
	if err != nil {
		return err
	}
	defer done()
	dest := tt.Path
	if name == tf.Rel {
		dest = tt.Rel // fsys is confined to the root
	}
	unlock, err := g.lock(ctx, fsys, name, tf)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := fsys.Stat(dest); err == nil {
		return fmt.Errorf("memdir: rename to %s: %w", filepath.Base(dest), fs.ErrExist)
	}
	for _, p := range []string{tf.Path, tt.Path} {
		if err := g.track(ctx, p); err != nil {
			return err
		}
	}
	if moved, err := afero.ReadFile(fsys, name); err == nil {
		if err := g.recordProvenance(ctx, tt, moved, false); err != nil {
			return err
		}
	}
	if err := fsys.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return confinedError(err, "make the directory of "+filepath.Base(dest))
	}
	if err := fsys.Rename(name, dest); err != nil {
		return confinedError(err, "rename "+filepath.Base(name))
	}
	return nil
}

// Open checks abs like CheckPath and opens it for reading, on the real
// disk through an os.Root on its memory root, so a directory swapped for
// a link after the check cannot make the read return a file outside.
func (g *WriteGate) Open(abs string) (afero.File, error) {
	t, err := g.CheckPath(abs)
	if err != nil {
		return nil, err
	}
	if _, ok := g.fs.(*afero.OsFs); !ok {
		return g.fs.Open(t.Path)
	}
	r, err := rootfs.New(t.Root)
	if err != nil {
		return nil, confinedError(err, "open the memory directory")
	}
	defer r.Close() // an open file outlives its root
	f, err := r.Open(t.Rel)
	if err != nil && isEscape(err) {
		return nil, &PathTraversalError{Reason: ReasonSymlinkEscape, Detail: "refused at read time"}
	}
	return f, err
}

// History records a file's version before a write replaces or removes it,
// so the write can be undone (filehistory.Tracker satisfies it).
type History interface {
	TrackEdit(ctx context.Context, path string) error
}

// track records path in the gate's History, if it has one.
func (g *WriteGate) track(ctx context.Context, path string) error {
	if g.history == nil {
		return nil
	}
	if err := g.history.TrackEdit(ctx, path); err != nil {
		return &HistoryError{Err: err}
	}
	return nil
}

// HistoryError reports a write refused because the file's previous
// version could not be saved for undo; nothing was written.
type HistoryError struct{ Err error }

func (e *HistoryError) Error() string {
	return "memdir: the previous version could not be saved for undo, so nothing was written: " + e.Err.Error()
}

func (e *HistoryError) Unwrap() error { return e.Err }

// Reader opens many files below one directory of a memory root for
// reading: the directory is checked once, and each open is then confined
// by the operating system (an os.Root on the memory root, and one on each
// directory below it that a file is read in, so a file is one open)
// instead of being checked link by link. A search over
// every file of a directory uses it. Close it when done; it is not safe
// for concurrent use.
type Reader struct {
	fs   afero.Fs
	dir  string   // the directory opened, cleaned
	root string   // the memory root holding it
	r    *os.Root // nil off the real disk
	// subs are roots opened on directories below r, so that a file in
	// one is a single open; a directory is opened once per Reader.
	subs map[string]*os.Root
}

// Reader returns a Reader for dir: a memory root or a directory inside
// one that does not leave it through links.
func (g *WriteGate) Reader(dir string) (*Reader, error) {
	if strings.IndexByte(dir, 0) >= 0 || !filepath.IsAbs(dir) {
		return nil, &PathTraversalError{Reason: ReasonNotAbsolute}
	}
	clean := norm.NFC.String(filepath.Clean(dir))
	if g.within != "" && clean != g.within && !inside(g.within, clean) {
		return nil, &PathTraversalError{Reason: ReasonNotMemoryPath}
	}
	root := ""
	for _, r := range g.roots {
		if r == clean || inside(r, clean) {
			root = r
			break
		}
	}
	if root == "" {
		return nil, &PathTraversalError{Reason: ReasonNotMemoryPath}
	}
	if rel := strings.TrimPrefix(strings.TrimPrefix(clean, root), string(filepath.Separator)); rel != "" {
		if err := realpath.Within(g.fs, root, rel); err != nil {
			return nil, containmentError(err, false)
		}
	}
	rd := &Reader{fs: g.fs, dir: clean, root: root}
	if _, ok := g.fs.(*afero.OsFs); ok {
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, confinedError(err, "open the memory directory")
		}
		rd.r, rd.subs = r, map[string]*os.Root{}
	}
	return rd, nil
}

// Open opens abs, a file below the Reader's directory, for reading. A
// path that leaves the memory root, lexically or through a link, is
// refused with a *PathTraversalError.
func (rd *Reader) Open(abs string) (afero.File, error) {
	clean := norm.NFC.String(filepath.Clean(abs))
	if !inside(rd.dir, clean) {
		return nil, &PathTraversalError{Reason: ReasonOutsideRoot}
	}
	if rd.r == nil {
		return rd.fs.Open(clean)
	}
	rel := strings.TrimPrefix(clean[len(rd.root):], string(filepath.Separator))
	parent, name := rd.r, rel
	if d, base := filepath.Split(rel); d != "" {
		d = strings.TrimSuffix(d, string(filepath.Separator))
		sub, ok := rd.subs[d]
		if !ok {
			var err error
			if sub, err = rd.r.OpenRoot(d); err != nil {
				return nil, readError(err)
			}
			rd.subs[d] = sub
		}
		parent, name = sub, base
	}
	f, err := parent.Open(name)
	if err != nil {
		return nil, readError(err)
	}
	return f, nil
}

// readError is a Reader's open error: os.Root's refusal to leave the root
// as a *PathTraversalError, anything else as it is.
func readError(err error) error {
	if isEscape(err) {
		return &PathTraversalError{Reason: ReasonSymlinkEscape, Detail: "refused at read time"}
	}
	return err
}

// Close releases the Reader's handles on the memory root.
func (rd *Reader) Close() error {
	if rd.r == nil {
		return nil
	}
	for _, sub := range rd.subs {
		_ = sub.Close()
	}
	return rd.r.Close()
}
