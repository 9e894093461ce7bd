package foldersync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/filelock"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// Delete modes: what a file missing from the folder does to the remote.
const (
	// DeleteImmediate deletes on the remote on the first walk that misses
	// the file (the default).
	DeleteImmediate = "immediate"
	// DeleteCorroborate deletes once the file has been missing on two
	// walks at least CorroborateAge apart (Claude Code's store default).
	DeleteCorroborate = "corroborate"
	// DeleteNever never deletes on the remote.
	DeleteNever = "never"
)

// CorroborateAge is how long a file must have been missing, over two
// walks at least, before DeleteCorroborate deletes it on the remote.
const CorroborateAge = 30 * time.Second

// DefaultBasisName is the basis file's name inside the folder (a dot
// file: never synced).
const DefaultBasisName = ".foldersync-basis"

// DefaultConflictsDirName is the folder, inside the synced folder, where
// the losing side of a conflict is kept (a dot folder: never synced).
const DefaultConflictsDirName = ".foldersync-conflicts"

// racyWindow is git's racy-clean rule: a file modified less than this
// before its stat was recorded may change again within the same mtime
// tick, so its cached sum is not trusted and it is read again.
const racyWindow = 2 * time.Second

// batchSize is how many changes go to the remote, or paths are fetched,
// at once; the basis is saved after each batch.
const batchSize = 100

// MassDeleteThreshold is the most deletions one round makes on one side
// without confirmation: max(50, 10 % of the tracked memories).
func MassDeleteThreshold(tracked int) int { return max(50, tracked/10) }

// History records a file's version before a write replaces or removes
// it, and takes a checkpoint a rewind can return to
// (*filehistory.Tracker satisfies it).
type History interface {
	memdir.History
	MakeSnapshot(ctx context.Context, id string) error
}

// Options configures an Engine. The zero value is usable.
type Options struct {
	// Include reports whether a file at rel (slash-separated, relative to
	// the folder) is synced. Default: every file none of whose path
	// segments starts with "." (the basis and the conflicts folder are
	// never synced, whatever Include says). A folder below the synced one
	// that holds a memory store's manifest (memdir.StoreManifestName) is
	// never synced either: its store's own sync keeps it. Its answer
	// must depend on rel alone: the engine remembers it.
	Include func(rel string) bool
	// BasisPath is where the basis is kept (default DefaultBasisName in
	// the folder). It must lie inside the memory directory's roots.
	BasisPath string
	// ConflictsDir is where the losing side of a conflict is kept
	// (default DefaultConflictsDirName in the folder).
	ConflictsDir string
	// ConflictsIn is the memory directory ConflictsDir lies in when it is
	// not the synced one's (a conflicts folder beside the synced folder);
	// copies kept aside are written through its write gate.
	ConflictsIn *memdir.Dir
	// BasisInMemory keeps the basis in the Engine only: no basis file is
	// read or written. The Mirror, when set, seeds the Engine's first
	// round (and the round after a failed one) and receives every save;
	// without a Mirror the Engine starts from an empty basis, a first
	// sync that deletes nothing on either side.
	BasisInMemory bool
	// Mode says which sides a round changes: ModeBoth (the default),
	// ModePull or ModePush.
	Mode Mode
	// DeleteMode is DeleteImmediate (default), DeleteCorroborate or
	// DeleteNever.
	DeleteMode string
	// KeepDeleted stops deletions from propagating either way: a file
	// deleted here is brought back from the remote, and a path deleted on
	// the remote stays here.
	KeepDeleted bool
	// AllowMassDelete lets a round delete more than MassDeleteThreshold
	// memories on one side; otherwise that side's deletions are held
	// (Result.Held).
	AllowMassDelete bool
	// ReadOnly pulls only: nothing is sent to the remote.
	ReadOnly bool
	// MaxBytes is the largest file synced (0: no limit); larger ones are
	// skipped (SkipOversized).
	MaxBytes int64
	// Retries is how often a round looks again after the remote answered
	// Mismatch (someone wrote in between), default 3; negative: never.
	Retries int
	// History, when set, makes every round that writes or deletes a
	// local file undoable: a checkpoint (Result.Checkpoint) is taken
	// before its first such write, and each write records the file's
	// previous version (or its absence: a rewind removes a new file).
	History History
	// CheckpointPrefix starts the name of the checkpoint a round takes
	// (Options.History; default "sync").
	CheckpointPrefix string
	// AsideName names the copy of rel kept aside at a time (the stamp,
	// UTC, such as 20261203T150405.000Z), relative to the conflicts
	// folder. Default: the stamp before rel's extension
	// ("notes/a.20261203T150405.000Z.md").
	AsideName func(rel, stamp string) string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Prepare, when set, runs at the start of every round (a driver's
	// check that the folder is still its own, its manifest); an error
	// stops the round before anything is read or changed, and is
	// returned as it is.
	Prepare func(ctx context.Context) error
	// Mirror, when set, keeps a copy of what the folder and the remote
	// agreed on in a driver's own format (Claude Code's store basis) and
	// seeds the first round of a folder the engine never synced.
	Mirror BasisMirror
}

// Mode says which sides a round changes.
type Mode int

const (
	// ModeBoth changes both sides.
	ModeBoth Mode = iota
	// ModePull changes the folder only: local changes wait, and a path
	// both sides changed is left as it is and skipped (SkipConflict) for
	// a round both ways to settle.
	ModePull
	// ModePush changes the remote only: the remote's changes wait, and a
	// path both sides changed is skipped (SkipConflict).
	ModePush
)

// Agreed is what a folder and its remote last agreed on, as a
// BasisMirror keeps it.
type Agreed struct {
	// Store and Generation are the remote's identity and generation.
	Store      string
	Generation int64
	// Entries are the paths both sides hold, with the remote's entry.
	Entries map[string]Entry
	// Pending are local deletions waiting for corroboration.
	Pending map[string]PendingDelete
	// Resetting says the remote was found replaced or restored and no
	// round that may push (Options.Mode) has completed since: until one
	// does, nothing is deleted on either side on the remote's word and a
	// path whose sides differ keeps the local side.
	Resetting bool
	// InFlight are the changes a round began and may not have seen
	// through: a push whose reply was lost, a pull written by a run
	// killed before it recorded it. The next round that finds exactly
	// those bytes on that side takes them as agreed, not as another's
	// change; otherwise they never landed and are forgotten.
	InFlight map[string]InFlight
	// Diverged are the paths found different on both sides with nothing
	// agreed on and no sign the local file is the newer: the local file
	// stayed where it was and the remote's copy, of this Sum, was kept
	// aside once. The file is pushed once it is edited again.
	Diverged map[string]Divergence
}

// Divergence is a path left as it is beside the remote's copy: the Sum
// of that copy (kept aside) and of the local file then. A local file
// that changed since, beside the same remote copy, was edited after the
// user was shown the remote's: it is pushed.
type Divergence struct {
	Remote string `json:"remote"`
	Local  string `json:"local"`
}

// InFlight is one change a round began: the Sum of the bytes sent to the
// remote, or written here with Here ("" for a deletion), and for a write
// here the remote's Ref and Written of the version it came from.
type InFlight struct {
	Sum     string `json:"sum"`
	Here    bool   `json:"here,omitempty"`
	Ref     string `json:"ref,omitempty"`
	Written int64  `json:"written,omitempty"`
}

// PendingDelete is a local deletion not yet sent: when the file was
// first missed, and on how many walks.
type PendingDelete struct {
	FirstMissed time.Time
	Walks       int
}

// BasisMirror keeps the basis in a driver's own format beside the
// engine's.
type BasisMirror interface {
	// Seed returns what the folder agreed on before the engine kept its
	// basis; ok is false when there is nothing.
	Seed() (a Agreed, ok bool)
	// Save records a after every save of the engine's basis.
	Save(ctx context.Context, a Agreed) error
}

// UnchangedMirror is a BasisMirror that can tell at no cost that it
// still holds what it last seeded or saved, so an unchanged round need
// not build the seed and compare it with the engine's basis.
type UnchangedMirror interface {
	BasisMirror
	Unchanged() bool
}

// Engine keeps one folder in step with one Remote. Rounds of one Engine
// run one at a time; it is safe for concurrent use. Rounds on one folder
// run one at a time across Engines and processes too: each holds the
// lock file beside the basis (".<basis name>.lock").
type Engine struct {
	round sync.Mutex
	dir   *memdir.Dir
	fs    afero.Fs
	gate  *memdir.WriteGate
	// plainGate writes the engine's own records (the basis, copies kept
	// aside) outside any checkpoint.
	plainGate *memdir.WriteGate
	scanner   *secrets.Scanner
	folder    string
	remote    Remote
	opts      Options
	basis     string
	aside     string
	// asideGate and asideFS write and read the conflicts folder.
	asideGate *memdir.WriteGate
	asideFS   afero.Fs
	// kept is the basis as the last pass saved or read it, with the
	// basis file's size and modification time then: a pass whose file
	// still has them uses it without reading the file again.
	kept      *basis
	keptStamp [2]int64
	// stat is the stat cache of the last pass, carried into a basis the
	// Mirror seeds again (Options.BasisInMemory).
	stat map[string]statEntry
	// asideInside: the basis or the conflicts folder lies in the folder
	// under a name that is not a dot name (Include must be told).
	asideInside bool
	// mirrored is agreedKey of what the Mirror last saved.
	mirrored string
	// verdicts remembers what judge made of each path.
	verdicts map[string]pathVerdict
}

// New returns the engine that keeps folder (an absolute path inside the
// memory directory d) in step with remote. Every local write goes
// through d's write gate.
func New(d *memdir.Dir, folder string, remote Remote, opts Options) (*Engine, error) {
	if d == nil {
		return nil, errors.New("foldersync: New needs the memory directory (a *memdir.Dir)")
	}
	if remote == nil {
		return nil, errors.New("foldersync: New needs a Remote")
	}
	if !filepath.IsAbs(folder) {
		return nil, fmt.Errorf("foldersync: the folder %q is not an absolute path", folder)
	}
	folder = filepath.Clean(folder)
	switch opts.DeleteMode {
	case "":
		opts.DeleteMode = DeleteImmediate
	case DeleteImmediate, DeleteCorroborate, DeleteNever:
	default:
		return nil, fmt.Errorf("foldersync: delete mode %q is not immediate, corroborate or never", opts.DeleteMode)
	}
	if opts.Mode < ModeBoth || opts.Mode > ModePush {
		return nil, fmt.Errorf("foldersync: mode %d is not ModeBoth, ModePull or ModePush", opts.Mode)
	}
	if opts.Retries == 0 {
		opts.Retries = 3
	}
	if opts.Retries < 0 {
		opts.Retries = 0
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// The basis and the copies kept aside are the engine's own records,
	// never in a checkpoint: a rewind gives back the folder's files and
	// leaves the basis, so the next round sends what it gave back as an
	// edit, and no copy kept aside is ever taken away.
	plain := d.Gate()
	if t, ok := opts.History.(*filehistory.Tracker); ok && t == nil {
		opts.History = nil // a nil tracker records nothing, as memdir takes it
	}
	if opts.History != nil {
		d = d.WithHistory(opts.History)
	}
	e := &Engine{dir: d, fs: d.FS(), gate: d.Gate(), plainGate: plain, scanner: d.Scanner(), folder: folder, remote: remote, opts: opts,
		basis: opts.BasisPath, aside: opts.ConflictsDir}
	if e.basis == "" {
		e.basis = filepath.Join(folder, DefaultBasisName)
	}
	if e.aside == "" {
		e.aside = filepath.Join(folder, DefaultConflictsDirName)
	}
	for _, p := range []string{filepath.Join(folder, DefaultBasisName), e.basis, e.basis + prevSuffix} {
		if _, err := e.gate.CheckPath(p); err != nil {
			return nil, fmt.Errorf("foldersync: %s is not inside the memory directory: %w", p, err)
		}
	}
	for _, p := range []string{e.basis, e.aside} {
		if rel, err := filepath.Rel(folder, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !fswalk.Hidden(filepath.ToSlash(rel)) {
			e.asideInside = true
		}
	}
	e.asideGate, e.asideFS = plain, e.fs
	if opts.ConflictsIn != nil {
		e.asideGate, e.asideFS = opts.ConflictsIn.Gate(), opts.ConflictsIn.FS()
	}
	if _, err := e.asideGate.CheckPath(filepath.Join(e.aside, "x")); err != nil {
		return nil, fmt.Errorf("foldersync: the conflicts folder %s is not inside its memory directory (Options.ConflictsIn): %w", e.aside, err)
	}
	return e, nil
}

// Folder is the synced folder.
func (e *Engine) Folder() string { return e.folder }

// Reasons a file is skipped: left exactly as it is on both sides, the
// rest of the round going on. A driver's Check gives its own reasons,
// and a refusal by the remote starts with SkipRefused.
const (
	// SkipBadName: the name is not valid UTF-8 in NFC form, or holds a
	// control or format character; rename the file.
	SkipBadName = "bad-name: the name is not NFC UTF-8 or holds a control character; rename the file"
	// SkipNotUTF8: the file's bytes are not valid UTF-8, which JSON (both
	// protocols) would carry as other bytes; save the file as UTF-8.
	SkipNotUTF8 = "not_utf8: the file's bytes are not valid UTF-8 and would not reach the remote exactly; save it as UTF-8"
	// SkipNULByte: the file holds a NUL byte, which not every server
	// store keeps; remove it.
	SkipNULByte = "nul_byte: the file holds a NUL byte, which not every store can keep; remove it"
	// SkipRemoteKeptChanging: the remote answered that it had changed
	// (Mismatch) each time the round sent the file; nothing was written
	// there, and the next round sends it again. A file pushed earlier in
	// the round and changed since may be in Pushed too, each for its own
	// version.
	SkipRemoteKeptChanging = "remote-changing: the remote changed each time this round sent the file; the next round sends it again"
	// SkipNotRegular: a link, a device or another non-regular file.
	SkipNotRegular = "not a regular file"
	// SkipOversized: larger than Options.MaxBytes.
	SkipOversized = "oversized"
	// SkipSecret: the file holds what looks like a secret (a key, a
	// token); remove it to sync the file.
	SkipSecret = "secret"
	// SkipReadOnly: a local change not sent, the remote being pulled
	// only (Options.ReadOnly).
	SkipReadOnly = "read-only"
	// SkipConflict: both sides changed the path and the round changes
	// one side only (Options.Mode); a round both ways settles it.
	SkipConflict = "conflict"
	// SkipUnreadable: the file could not be read this round.
	SkipUnreadable = "unreadable"
	// SkipChanged: the file changed while the round ran; the next round
	// takes it.
	SkipChanged = "changed-during-sync"
	// SkipPathClash starts the reason of a path that is a folder of
	// another path, or lies below one ("a.md" beside "a.md/b.md"): both
	// cannot be files on a disk. What is in the way follows the colon.
	SkipPathClash = "path-clash"
	// SkipScreened starts the reason of a file a screen every server
	// applies refuses (package screen); what to fix follows the colon.
	SkipScreened = "screened"
	// SkipRefused starts the reason of a change the remote refused
	// (Outcome Refused); its words follow the colon.
	SkipRefused = "refused"
	// SkipUnwritable: the file or its folder cannot be written here (its
	// permissions, another user's folder, a read-only filesystem); the
	// rest of the round went on. Make it writable to take the remote's
	// change.
	SkipUnwritable = "unwritable: this client may not write the file or its folder (permissions, or a read-only filesystem); the rest synced: make it writable to take the remote's change"
	// SkipDiverged: the file and the remote's copy differ, nothing says
	// what both last agreed on (a first sync, a lost or damaged basis)
	// and nothing says the file is the newer. The local file stays as it
	// is and the remote's copy was kept aside in the conflicts folder;
	// edit the file to send it, or remove it to take the remote's.
	SkipDiverged = "diverged: the file and the remote's copy differ with no record of what both last agreed on; yours stays and the remote's copy is in the conflicts folder: edit yours to send it, or remove it to take the remote's"
	// SkipRejected starts the reason of a change a person reviewing the
	// remote already rejected; the reason given follows the colon.
	SkipRejected = "rejected-in-review"
)

// SkipContent says why JSON, which both protocols speak, would not carry
// content exactly (SkipNULByte, SkipNotUTF8), or "" when it would. A
// driver's Check starts with it.
func SkipContent(content []byte) string {
	var te *synctext.Error
	if !errors.As(synctext.CheckContent(content), &te) {
		return ""
	}
	if te.Reason == synctext.ReasonNUL {
		return SkipNULByte
	}
	return SkipNotUTF8
}

// SkipText is SkipContent after the name's check: SkipBadName for a name
// that is not NFC UTF-8 or holds a control character.
func SkipText(name string, content []byte) string {
	if synctext.CheckName(name) != nil || !norm.NFC.IsNormalString(name) {
		return SkipBadName
	}
	return SkipContent(content)
}

// Skip is a path a round left alone, and why (one of the Skip reasons,
// or a driver's Check reason).
type Skip struct {
	Path   string
	Reason string
}

// Conflict is a path whose losing side was kept aside at SavedAs: the
// local side of a path both sides changed (the remote's version took the
// file); with LocalKept, the remote's copy of a replaced or restored
// remote (the local file was kept and pushed); with Stale, a local copy
// older than the remote's deletion of the path (the file was moved
// there, and nothing pushed).
type Conflict struct {
	Path      string
	SavedAs   string
	LocalKept bool
	Stale     bool
}

// MassDeleteHold reports deletions held back on one side ("local" or
// "remote"): more than Threshold (MassDeleteThreshold of Tracked) at
// once. They stay tracked and are held again next round until allowed
// (Options.AllowMassDelete) or the files come back.
type MassDeleteHold struct {
	Side      string
	Paths     []string
	Tracked   int
	Threshold int
}

// Result says what a round did. Paths are slash-separated, relative to
// the folder.
type Result struct {
	Pulled, Pushed              []string
	DeletedLocal, DeletedRemote []string
	Conflicts                   []Conflict
	Skipped                     []Skip
	// Pending are local deletions waiting for corroboration.
	Pending []string
	// InReview are paths whose change the remote kept for a person's
	// review: the local files stay as they are and no round deletes them
	// while they wait.
	InReview []string
	Held     []MassDeleteHold
	// BasisReset reports a remote that was replaced or restored (another
	// Store, or a Generation older than the basis'): the round deleted
	// nothing on either side, kept the local side of each difference and
	// the remote's copy aside.
	BasisReset bool
	// BasisDamaged reports a basis file that could not be read (torn,
	// edited by hand): it was kept aside beside itself (".damaged") and
	// the round rebuilt the basis from what both sides hold and the
	// Mirror's copy where it is intact. Nothing was deleted on either
	// side, and a file that differs kept the local side.
	BasisDamaged *BasisError
	// Checkpoint names the snapshot taken before the round first
	// overwrote or deleted a local file (Options.History).
	Checkpoint string
	// Unchanged reports a round that found nothing to do on either side.
	Unchanged bool
	// mismatched are the paths the remote answered Mismatch to in the
	// last pass: after the last retry they are SkipRemoteKeptChanging.
	mismatched []string
}

// Changed reports whether the round changed anything on either side.
func (r Result) Changed() bool {
	return len(r.Pulled)+len(r.Pushed)+len(r.DeletedLocal)+len(r.DeletedRemote)+len(r.Conflicts) > 0
}

// Refused reports whether the skip is a refusal of the file itself: its
// bytes or its name cannot travel exactly (a driver's Check, SkipBadName),
// its path clashes with another (SkipPathClash), or a screen every server
// applies refuses it (SkipScreened). The file is left exactly as it is
// until someone fixes or renames it; nothing else waits for it. A secret,
// an oversized or unreadable file, a change the remote refused or a
// reviewer rejected, and the skips the next round may carry are not
// refusals in this sense.
func (s Skip) Refused() bool {
	switch s.Reason {
	case SkipSecret, SkipOversized, SkipNotRegular, SkipUnreadable, SkipChanged, SkipReadOnly, SkipConflict, SkipDiverged, SkipRemoteKeptChanging:
		return false
	}
	return !strings.HasPrefix(s.Reason, SkipRefused+":") && !strings.HasPrefix(s.Reason, SkipRejected+":")
}

// local is one synced file of the folder.
type local struct {
	abs   string
	sum   string
	size  int64
	mtime time.Time
	// screened: the walk read these bytes and refusal passed them (a
	// file the stat cache vouched for was not read).
	screened bool
}

// Round runs one round: walk the folder, list the remote, decide every
// path, carry out the decisions on both sides and record the basis after
// each batch. A failed listing changes nothing; a failed change leaves
// its path for the next round. When the remote answers Mismatch the
// round looks again, at most Options.Retries times.
func (e *Engine) Round(ctx context.Context) (Result, error) {
	return e.RoundMode(ctx, e.opts.Mode)
}

// RoundMode runs one round that changes the sides mode allows, in place
// of Options.Mode: one engine, and its stat cache, serves a driver whose
// calls pull, push or do both (a team directory's Pull, Push and Sync).
func (e *Engine) RoundMode(ctx context.Context, mode Mode) (Result, error) {
	if mode < ModeBoth || mode > ModePush {
		return Result{}, fmt.Errorf("foldersync: mode %d is not ModeBoth, ModePull or ModePush", mode)
	}
	e.round.Lock()
	defer e.round.Unlock()
	var res Result
	// One round at a time on this folder across processes too (two
	// watchers, a watcher and a sync): the lock beside the basis.
	if err := e.fs.MkdirAll(e.folder, 0o755); err != nil {
		return res, fmt.Errorf("foldersync: create the folder: %w", err)
	}
	unlock, err := filelock.Lock(ctx, e.fs, filepath.Join(e.folder, DefaultBasisName))
	if err != nil {
		return res, fmt.Errorf("foldersync: wait for another sync of this folder: %w", err)
	}
	defer unlock()
	if e.opts.Prepare != nil {
		if err := e.opts.Prepare(ctx); err != nil {
			return res, err
		}
	}
	for attempt := 0; ; attempt++ {
		res.Pending, res.Held, res.InReview, res.mismatched = nil, nil, nil, nil
		again, err := e.once(ctx, &res, mode)
		if err == nil && again && attempt >= e.opts.Retries {
			for _, p := range res.mismatched {
				res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipRemoteKeptChanging})
			}
		}
		if err != nil || !again || attempt >= e.opts.Retries {
			res.Unchanged = err == nil && !again && !res.Changed() && len(res.Pending)+len(res.InReview)+len(res.Held) == 0
			res.Skipped = dedupSkips(res.Skipped)
			return res, err
		}
	}
}

// round is the state of one pass of a round.
type round struct {
	e      *Engine
	b      *basis
	res    *Result
	dirty  bool // the basis changed since it was saved
	now    time.Time
	locals map[string]*local
	remote map[string]Entry
	gen    int64 // the highest generation an applied change reported
	reset  bool  // the listing is of a replaced or restored remote
	// untouchable are the paths this round leaves alone on both sides
	// (skipped, or in another path's way).
	untouchable map[string]bool
	// stores are the folders below this one that hold a memory store's
	// manifest (memdir.StoreManifestName): each is kept in step by its
	// store's own sync, never by this one.
	stores []string
}

// inStore reports whether p lies in a store's folder.
func (r *round) inStore(p string) bool {
	return slices.ContainsFunc(r.stores, func(d string) bool { return strings.HasPrefix(p, d+"/") })
}

// once runs one pass; again reports a Mismatch worth looking again for.
// Its phases: take the basis, walk the folder, list the remote, settle
// what the last round left in flight, decide every path, carry out the
// decisions here, then there, and record what both now agree on.
func (e *Engine) once(ctx context.Context, res *Result, mode Mode) (again bool, err error) {
	b, err := e.takeBasis()
	if err != nil {
		return false, err
	}
	e.kept = nil // a pass that fails leaves no half-changed basis behind
	r := &round{e: e, b: b, res: res, now: e.opts.Now(), untouchable: map[string]bool{}}
	defer func() {
		e.stat = b.Stat
		if err == nil && e.opts.BasisInMemory {
			e.kept = b
		} else if err == nil {
			if st, serr := e.basisStamp(); serr == nil {
				e.kept, e.keptStamp = b, st
			}
		}
	}()
	if err := r.keepDamagedAside(); err != nil {
		return false, err
	}
	walkOK, err := r.walk(ctx, r.untouchable)
	if err != nil {
		return false, err
	}
	r.leaveStoresAlone()
	lst, err := r.listRemote(ctx)
	if err != nil {
		return false, err
	}
	r.settle()
	if lst.Unchanged && !r.reset && walkOK && r.agrees(r.untouchable) {
		// Nothing moved on either side since both agreed: nothing to
		// decide.
		return false, r.finish(ctx, mode, lst, 0, false)
	}
	paths := r.paths(mode)
	deleted, err := r.deletionEvidence(ctx, lst)
	if err != nil {
		return false, err
	}
	decisions, holdThere, holdHere := r.decideAll(paths, deleted, mode, walkOK)
	here, changes, err := r.plan(ctx, decisions, holdThere, holdHere)
	if err != nil {
		return false, err
	}
	if err := r.carryOutHere(ctx, here); err != nil {
		return false, err
	}
	sent := len(changes)
	if again, err = r.carryOutThere(ctx, changes); err != nil {
		return false, err
	}
	return again, r.finish(ctx, mode, lst, sent, again)
}

// takeBasis is the basis a pass starts from: the one the last pass kept
// while nothing says it changed, else the Mirror's seed (BasisInMemory)
// or the basis file (seeded from the Mirror when there is none).
func (e *Engine) takeBasis() (*basis, error) {
	var b *basis
	var err error
	var stamp [2]int64
	var statErr error
	if !e.opts.BasisInMemory {
		stamp, statErr = e.basisStamp()
	}
	var seed *Agreed
	if e.opts.BasisInMemory && e.opts.Mirror != nil {
		// The Mirror is the basis of record: it may have been given
		// another state since the last round (a driver's caller that
		// keeps it). One that still holds what it last seeded or saved
		// leaves the kept basis standing, with no seed to build.
		u, tells := e.opts.Mirror.(UnchangedMirror)
		if !tells || e.kept == nil || !u.Unchanged() {
			seed = &Agreed{}
			if a, ok := e.opts.Mirror.Seed(); ok {
				seed = &a
			}
		}
	}
	if e.kept != nil && statErr == nil && stamp == e.keptStamp && (seed == nil || e.kept.holds(*seed)) {
		b = e.kept
	} else if e.opts.BasisInMemory {
		b = newBasis()
		b.fresh = true
		if seed != nil {
			b.seed(*seed)
		}
		// What a file's size and modification time say of its content
		// holds whatever the basis: the cache outlives a seed.
		maps.Copy(b.Stat, e.stat)
	} else if b, err = readBasis(e.fs, e.basis); err != nil {
		return nil, err
	} else if e.opts.Mirror != nil && b.fresh {
		if a, ok := e.opts.Mirror.Seed(); ok {
			b.seed(a)
		}
	}
	return b, nil
}

// keepDamagedAside moves a damaged basis file aside and reports it.
func (r *round) keepDamagedAside() error {
	e, b := r.e, r.b
	if b.damaged != nil {
		// Moved, not copied: the next save must not keep it as the
		// basis saved before (prevSuffix).
		if err := e.fs.Rename(e.basis, e.basis+".damaged"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("foldersync: keep the damaged basis aside: %w (nothing was changed)", err)
		}
		b.damaged.KeptAt = e.basis + ".damaged"
		r.res.BasisDamaged = b.damaged
		b.damaged = nil
		r.dirty = true
	}
	return nil
}

// leaveStoresAlone forgets what lies in a store's folder below this one:
// its store sync's alone, nothing of it deleted, pushed or pulled.
func (r *round) leaveStoresAlone() {
	if len(r.stores) == 0 {
		return
	}
	maps.DeleteFunc(r.locals, func(p string, _ *local) bool { return r.inStore(p) })
	maps.DeleteFunc(r.untouchable, func(p string, _ bool) bool { return r.inStore(p) })
	r.res.Skipped = slices.DeleteFunc(r.res.Skipped, func(s Skip) bool { return r.inStore(s.Path) })
	for p := range r.b.Entries {
		if r.inStore(p) {
			delete(r.b.Entries, p)
			delete(r.b.Deletes, p)
			r.dirty = true
		}
	}
}

// listRemote lists the remote, keeps the paths synced here and resets
// the basis when the remote is not the one it was made with.
func (r *round) listRemote(ctx context.Context) (Listing, error) {
	e, b, res, untouchable := r.e, r.b, r.res, r.untouchable
	prev := b.listing()
	lst, err := e.remote.List(ctx, prev)
	if err != nil {
		return Listing{}, fmt.Errorf("foldersync: list the remote: %w", err)
	}
	if lst.Unchanged {
		lst.Entries = prev.Entries
	}
	if lst.Entries == nil {
		lst.Entries = map[string]Entry{}
	}
	r.remote = make(map[string]Entry, len(lst.Entries))
	for p, en := range lst.Entries {
		v := e.judge(p)
		if v == pathExcluded || r.inStore(p) {
			continue // never synced here: left alone
		}
		if v == pathBadName {
			untouchable[p] = true
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipBadName})
			continue
		}
		r.remote[p] = en
	}
	r.reset = b.replacedBy(lst)
	if r.reset {
		res.BasisReset = true
		b.Entries = map[string]Entry{}
		b.Deletes = map[string]pendingDelete{}
		b.Store, b.Generation, b.Listing = lst.Store, lst.Generation, nil
		b.Resetting = true
		b.InFlight, b.Diverged = nil, nil
		r.dirty = true
	}
	return lst, nil
}

// paths are every path either side or the basis knows; one that cannot
// be a file beside another (a folder of it) is untouchable.
func (r *round) paths(mode Mode) map[string]bool {
	b, res, untouchable := r.b, r.res, r.untouchable
	paths := map[string]bool{}
	for p := range r.locals {
		paths[p] = true
	}
	for p := range r.remote {
		paths[p] = true
	}
	for p := range b.Entries {
		paths[p] = true
	}
	for p, other := range folderClashes(paths, r.locals) {
		untouchable[p] = true
		if mode == ModePush && r.locals[p] == nil {
			continue // never written by this round: nothing to report
		}
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipPathClash + ": " + other + " is in the way"})
	}
	return paths
}

// deletionEvidence is when the remote deleted each tracked path it lacks
// (and each untracked local one), on its evidence only.
func (r *round) deletionEvidence(ctx context.Context, lst Listing) (map[string]time.Time, error) {
	e, b, untouchable := r.e, r.b, r.untouchable
	deleted := maps.Clone(lst.Deleted)
	if deleted == nil {
		deleted = map[string]time.Time{}
	}
	if !r.reset {
		var missing []string
		for p := range b.Entries {
			if _, ok := r.remote[p]; !ok && !untouchable[p] && deleted[p].IsZero() {
				missing = append(missing, p)
			}
		}
		// Paths here the remote lacks, never agreed on: a deletion
		// newer than the local copy makes it stale.
		for p := range r.locals {
			if _, ok := r.remote[p]; !ok && !untouchable[p] && deleted[p].IsZero() {
				if _, tracked := b.Entries[p]; !tracked {
					missing = append(missing, p)
				}
			}
		}
		if lst.DeletesByAbsence && lst.Store != "" && lst.Generation > 0 {
			// The remote vouches for its listing: a tracked path it lacks
			// was deleted there (when is unknown; only untracked copies are
			// judged stale by the time).
			kept := missing[:0]
			for _, p := range missing {
				if _, tracked := b.Entries[p]; tracked {
					deleted[p] = r.now
					continue
				}
				kept = append(kept, p)
			}
			missing = kept
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			ev, err := e.remote.Deleted(ctx, missing)
			if err != nil {
				return nil, fmt.Errorf("foldersync: ask the remote for deletions: %w", err)
			}
			maps.Copy(deleted, ev)
		}
	}
	return deleted, nil
}

// decideAll decides every path first, so each side's deletions can be
// counted against the mass-delete threshold before any happens, and
// reports which side's deletions are held.
func (r *round) decideAll(paths map[string]bool, deleted map[string]time.Time, mode Mode, walkOK bool) (decisions map[string]action, holdThere, holdHere bool) {
	e, b, res, untouchable := r.e, r.b, r.res, r.untouchable
	decisions = map[string]action{}
	var deleteThere, deleteHere []string
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if untouchable[p] {
			continue
		}
		st := pathState{b: b.Entries[p].Sum, r: r.remote[p].Sum, written: r.remote[p].writtenAt()}
		if l := r.locals[p]; l != nil {
			st.l, st.mtime = l.sum, l.mtime
		}
		if st.r == "" {
			st.deleted = deleted[p]
		}
		a := decide(st, e.opts.KeepDeleted, r.reset || b.Resetting)
		if d, ok := b.Diverged[p]; ok && a == actDiverged && d.Remote == st.r && d.Local != st.l {
			a = actKeepLocal // edited since the remote's copy was put beside it
		}
		switch {
		case mode != ModeBoth && (a == actConflict || a == actKeepLocal || a == actDiverged):
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipConflict})
			a = actNone
		case mode == ModePull && (a == actPush || a == actDeleteThere),
			mode == ModePush && (a == actPull || a == actRestore || a == actDeleteHere || a == actStale):
			a = actNone // the other side's turn
		}
		switch a {
		case actDeleteThere:
			if !walkOK || e.opts.ReadOnly || !r.corroborated(p) { // corroborated records the deletion
				a = actNone
			} else {
				deleteThere = append(deleteThere, p)
			}
		case actDeleteHere, actStale:
			deleteHere = append(deleteHere, p)
		case actPush, actKeepLocal:
			if e.opts.ReadOnly {
				res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipReadOnly})
				a = actNone
			}
		}
		if _, ok := b.Diverged[p]; ok && a != actDiverged && a != actKeepLocal {
			delete(b.Diverged, p) // settled: the sides agree, or one of them moved
			r.dirty = true
		}
		if a != actDeleteThere {
			if _, ok := b.Deletes[p]; ok && r.locals[p] != nil {
				delete(b.Deletes, p) // the file came back
				r.dirty = true
			}
		}
		decisions[p] = a
	}
	tracked := len(b.Entries)
	return decisions, r.hold("remote", deleteThere, tracked), r.hold("local", deleteHere, tracked)
}

// localWork is what a round does to the folder: pulls, pulls over a
// local edit (conflicts), deletions and stale copies moved aside.
type localWork struct {
	pulls, conflicts, deletes, stales []string
}

// plan turns the decisions into the folder's work and the remote's
// changes, recording in the basis what needs neither.
func (r *round) plan(ctx context.Context, decisions map[string]action, holdThere, holdHere bool) (localWork, []Change, error) {
	b := r.b
	var here localWork
	var changes []Change
	for _, p := range slices.Sorted(maps.Keys(decisions)) {
		a := decisions[p]
		switch {
		case a == actDeleteThere && holdThere, (a == actDeleteHere || a == actStale) && holdHere:
			continue
		}
		switch a {
		case actNone:
			if en, ok := r.remote[p]; ok && r.locals[p] != nil && r.locals[p].sum == en.Sum && b.Entries[p] != en {
				b.Entries[p] = en
				r.dirty = true
			}
		case actForget:
			if _, ok := b.Entries[p]; ok {
				delete(b.Entries, p)
				delete(b.Deletes, p)
				r.dirty = true
			}
		case actPull, actRestore:
			here.pulls = append(here.pulls, p)
		case actConflict:
			here.conflicts = append(here.conflicts, p)
		case actDeleteHere:
			here.deletes = append(here.deletes, p)
		case actStale:
			here.stales = append(here.stales, p)
		case actDiverged:
			if b.Diverged[p].Remote == r.remote[p].Sum {
				r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: SkipDiverged})
				continue // its copy is aside already
			}
			if err := r.keepRemoteAside(ctx, p); err != nil {
				return here, nil, err
			}
			if b.Diverged == nil {
				b.Diverged = map[string]Divergence{}
			}
			b.Diverged[p] = Divergence{Remote: r.remote[p].Sum, Local: r.locals[p].sum}
			r.dirty = true
		case actKeepLocal:
			if b.Diverged[p].Remote != r.remote[p].Sum { // not kept aside already
				if err := r.keepRemoteAside(ctx, p); err != nil {
					return here, nil, err
				}
			}
			fallthrough // then pushed
		case actPush:
			ch, ok, err := r.pushChange(ctx, p)
			if err != nil {
				return here, nil, err
			}
			if ok {
				changes = append(changes, ch)
			}
		case actDeleteThere:
			changes = append(changes, Change{Path: p, Delete: true, Expect: r.remote[p]})
		}
	}
	for p := range b.Deletes {
		if _, ok := b.Entries[p]; !ok {
			delete(b.Deletes, p)
			r.dirty = true
		}
	}
	return here, changes, r.save(ctx)
}

// carryOutHere does the folder's work and saves the basis.
func (r *round) carryOutHere(ctx context.Context, here localWork) error {
	if err := r.pull(ctx, here.pulls, false); err != nil {
		return err
	}
	if err := r.pull(ctx, here.conflicts, true); err != nil {
		return err
	}
	for _, p := range here.deletes {
		if err := r.deleteHere(ctx, p, false); err != nil {
			return err
		}
	}
	for _, p := range here.stales {
		if err := r.deleteHere(ctx, p, true); err != nil {
			return err
		}
	}
	return r.save(ctx)
}

// carryOutThere sends the changes one batch at a time, each recorded as
// in flight before it goes; again reports a Mismatch.
func (r *round) carryOutThere(ctx context.Context, changes []Change) (again bool, err error) {
	for len(changes) > 0 {
		n := min(batchSize, len(changes))
		batch := changes[:n]
		changes = changes[n:]
		// What is sent is recorded first: a reply lost on the way back
		// leaves the next round a way to know these bytes as its own.
		for _, c := range batch {
			r.begin(c.Path, InFlight{Sum: sumOf(c)})
		}
		if err := r.save(ctx); err != nil {
			return false, err
		}
		outs, err := r.e.remote.Apply(ctx, batch)
		again = r.record(batch, outs) || again
		if serr := r.save(ctx); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return false, fmt.Errorf("foldersync: send changes to the remote: %w", err)
		}
	}
	return again, nil
}

// agrees reports whether the folder and the remote hold exactly what
// the basis agreed on, with nothing skipped, pending or resetting.
func (r *round) agrees(untouchable map[string]bool) bool {
	b := r.b
	if b.Resetting || len(b.Deletes) > 0 || len(untouchable) > 0 || len(r.locals) != len(b.Entries) || len(r.remote) != len(b.Entries) {
		return false
	}
	for p, en := range b.Entries {
		l, ok := r.locals[p]
		if !ok || l.sum != en.Sum || r.remote[p] != en {
			return false
		}
	}
	return true
}

// finish records what the round leaves the basis agreeing with and saves
// it: sent changes went to the remote, again asks for another pass.
func (r *round) finish(ctx context.Context, mode Mode, lst Listing, sent int, again bool) error {
	b := r.b
	// Record the listing the basis now agrees with, for the next round's
	// Unchanged check; the remote's generation moved on with our writes,
	// so the next listing is a newer one (not a restored one).
	if sent == 0 && !again {
		if !lst.Unchanged || b.Listing == nil {
			b.Listing = &savedListing{Store: lst.Store, Generation: lst.Generation, Tag: lst.Tag, Entries: lst.Entries}
			r.dirty = true
		}
	} else if b.Listing != nil {
		b.Listing = nil // the remote moved: the next round lists it whole
		r.dirty = true
	}
	if b.Resetting && mode != ModePull && !again {
		b.Resetting = false // the local side has reached the remote
		r.dirty = true
	}
	if gen := max(lst.Generation, r.gen); b.Store != lst.Store || b.Generation < gen || r.reset {
		b.Store, b.Generation = lst.Store, gen
		r.dirty = true
	}
	return r.save(ctx)
}

// basisStamp is the basis file's size and modification time.
func (e *Engine) basisStamp() ([2]int64, error) {
	info, err := e.fs.Stat(e.basis)
	if err != nil {
		return [2]int64{}, err
	}
	return [2]int64{info.Size(), info.ModTime().UnixNano()}, nil
}

// replacedBy reports whether lst is not the remote the basis was made
// with: another Store, a Generation older than the basis', or an entry
// back at a version written well before the one agreed on (wentBack): a
// store restored from a backup and written past the basis' Generation
// since. A remote
// that names neither is judged by its entries: it must still hold one of
// the basis' entries with the same Ref (when the driver gives Refs).
func (b *basis) replacedBy(lst Listing) bool {
	if len(b.Entries) == 0 {
		return false
	}
	if b.Store != "" && lst.Store != "" && b.Store != lst.Store {
		return true
	}
	if b.Generation > 0 && lst.Generation > 0 && lst.Generation < b.Generation {
		return true
	}
	if !lst.Unchanged && wentBack(b.Entries, lst.Entries) {
		return true
	}
	if lst.Store != "" || lst.Generation > 0 {
		return false
	}
	refs := false
	for p, en := range b.Entries {
		if en.Ref == "" {
			continue
		}
		refs = true
		if r, ok := lst.Entries[p]; ok && r.Ref == en.Ref {
			return false
		}
	}
	return refs
}

func (e *Engine) included(rel string) bool {
	hidden := false
	for rest := rel; ; {
		seg, tail, more := strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		hidden = hidden || seg[0] == '.'
		if !more {
			break
		}
		rest = tail
	}
	if e.opts.Include != nil {
		if !e.opts.Include(rel) {
			return false
		}
		if !hidden && !e.asideInside {
			return true // neither the basis nor the conflicts folder: both are dot names
		}
		abs := filepath.Join(e.folder, filepath.FromSlash(rel))
		return abs != e.basis && !inside(e.aside, abs)
	}
	return !hidden
}

// staleTempAge is how old a write's temporary file in the folder must be
// to be taken for one a killed process left (a write takes milliseconds).
const staleTempAge = time.Hour

// clockSlack is how much older than the agreed version a remote's
// version of an entry must have been written to tell of a remote that
// went back: more than the clocks of two servers of one store differ by.
const clockSlack = time.Minute

// wentBack reports whether the remote holds an entry, at the path and
// under the handle agreed on, in another version written more than
// clockSlack before the agreed one: a store moves forward, so only a
// restored one gives back an older version of a memory.
func wentBack(agreed, listed map[string]Entry) bool {
	for p, en := range listed {
		old, ok := agreed[p]
		if ok && en.Written > 0 && old.Written > 0 && en.Sum != old.Sum && en.Ref == old.Ref &&
			en.Written < old.Written-clockSlack.Milliseconds() {
			return true
		}
	}
	return false
}

func inside(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// pathVerdict is what the engine makes of a path by its name alone.
type pathVerdict uint8

const (
	pathExcluded pathVerdict = iota + 1 // not synced here (included says no)
	pathBadName                         // synced here, but no remote can hold the name
	pathSyncable
)

// judge says what included and nameProblem make of p and remembers it:
// both depend on the path alone, and an unchanged folder of thousands
// of memories need not be judged name by name every round. Only rounds
// call it (they hold e.round).
func (e *Engine) judge(p string) pathVerdict {
	if v, ok := e.verdicts[p]; ok {
		return v
	}
	v := pathSyncable
	switch {
	case !e.included(p):
		v = pathExcluded
	case nameProblem(p) != "":
		v = pathBadName
	}
	if e.verdicts == nil || len(e.verdicts) >= maxVerdicts {
		e.verdicts = map[string]pathVerdict{} // names of memories long gone do not pile up
	}
	e.verdicts[p] = v
	return v
}

// maxVerdicts bounds what judge remembers.
const maxVerdicts = 100_000

// nameProblem reports why a path cannot be synced by name ("" when it
// can).
func nameProblem(p string) string {
	if synctext.CheckName(p) != nil || !norm.NFC.IsNormalString(p) || path.Clean(p) != p || strings.HasPrefix(p, "/") {
		return SkipBadName
	}
	return ""
}

// walk reads the folder's synced files. untouchable collects the paths
// of files that are there but not synced this round: they count as
// present, so nothing is deleted or written for them. ok is false when a
// file or folder could not be read: that round deletes nothing on the
// remote.
func (r *round) walk(ctx context.Context, untouchable map[string]bool) (ok bool, err error) {
	e := r.e
	r.locals = make(map[string]*local, len(r.b.Stat))
	// One allocation for the locals of an unchanged folder, not one each.
	slab := make([]local, 0, len(r.b.Stat))
	newLocal := func(l local) *local {
		if len(slab) == cap(slab) {
			return &l
		}
		slab = append(slab, l)
		return &slab[len(slab)-1]
	}
	ok = true
	nowNS := r.now.UnixNano()
	skippedBefore := len(r.res.Skipped)
	err = fswalk.WalkAnyOrder(ctx, e.fs, e.folder, func(en fswalk.Entry) error {
		if dir, ok := strings.CutSuffix(en.Rel, "/"+memdir.StoreManifestName); ok && !en.Type.IsDir() {
			r.stores = append(r.stores, dir)
		}
		if en.Type.IsDir() {
			return nil
		}
		if en.Type.IsRegular() && atomicfile.IsTemp(path.Base(en.Rel)) {
			// A write's temporary file: one older than staleTempAge was
			// left by a process killed in the middle, and goes.
			if info, err := en.Lstat(e.fs); err == nil && r.now.Sub(info.ModTime()) > staleTempAge {
				_, _ = e.plainGate.Remove(ctx, en.Abs)
			}
			return nil
		}
		p := en.Rel
		v := e.judge(p)
		if v == pathExcluded {
			if en.Type&fs.ModeSymlink != 0 && !fswalk.Hidden(p) {
				// A link to a folder is not followed: said, not passed over
				// in silence (its files are not synced from here).
				if info, err := e.fs.Stat(en.Abs); err == nil && info.IsDir() {
					r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: SkipNotRegular})
				}
			}
			return nil
		}
		skip := func(reason string) {
			untouchable[p] = true
			r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: reason})
		}
		if !en.Type.IsRegular() {
			skip(SkipNotRegular)
			return nil
		}
		if v == pathBadName {
			skip(SkipBadName)
			return nil
		}
		c, cached := r.b.Stat[p]
		info, err := en.Lstat(e.fs)
		if err != nil {
			ok = false
			skip(SkipUnreadable)
			return nil
		}
		if !info.Mode().IsRegular() {
			skip(SkipNotRegular) // became a link or a folder since the listing
			return nil
		}
		if e.opts.MaxBytes > 0 && info.Size() > e.opts.MaxBytes {
			skip(SkipOversized)
			return nil
		}
		mt := info.ModTime()
		if cached && c.Size == info.Size() && c.MtimeNS == mt.UnixNano() && c.SeenNS-c.MtimeNS >= int64(racyWindow) {
			r.locals[p] = newLocal(local{abs: en.Abs, sum: c.Sum, size: c.Size, mtime: mt})
			return nil
		}
		raw, err := afero.ReadFile(e.fs, en.Abs)
		if err != nil {
			ok = false
			skip(SkipUnreadable)
			return nil
		}
		if reason := e.refusal(p, raw); reason != "" {
			if _, had := r.b.Stat[p]; had {
				delete(r.b.Stat, p)
				r.dirty = true
			}
			skip(reason)
			return nil
		}
		sum := Sum(raw)
		r.locals[p] = newLocal(local{abs: en.Abs, sum: sum, size: int64(len(raw)), mtime: mt, screened: true})
		// A file read again inside the racy window, as it was, changes
		// nothing worth saving; once outside it, its entry is trusted.
		st := statEntry{Size: info.Size(), MtimeNS: mt.UnixNano(), SeenNS: nowNS, Sum: sum}
		if old, had := r.b.Stat[p]; !had || old.Size != st.Size || old.MtimeNS != st.MtimeNS || old.Sum != st.Sum || st.SeenNS-st.MtimeNS >= int64(racyWindow) {
			r.b.Stat[p] = st
			r.dirty = true
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	// The walk met files in the folder's own order; report in path order.
	slices.SortFunc(r.res.Skipped[skippedBefore:], func(a, b Skip) int { return strings.Compare(a.Path, b.Path) })
	for p := range r.b.Stat {
		if r.locals[p] == nil { // gone, or not synced this walk
			delete(r.b.Stat, p)
			r.dirty = true
		}
	}
	return ok, err
}

// refusal reports why a file's content or name cannot be synced ("" when
// it can): the driver's Check, the screens every server applies, the
// secret scanner.
func (e *Engine) refusal(p string, raw []byte) string {
	if reason := e.remote.Check(p, raw); reason != "" {
		return reason
	}
	if err := screen.CheckShared(p, string(raw)); err != nil {
		return SkipScreened + ": " + err.Error()
	}
	if e.scanner != nil && len(e.scanner.Scan(string(raw))) > 0 {
		return SkipSecret
	}
	return ""
}

// corroborated records a local deletion and reports whether the delete
// mode lets it reach the remote now.
func (r *round) corroborated(p string) bool {
	switch r.e.opts.DeleteMode {
	case DeleteImmediate:
		return true
	case DeleteNever:
		return false
	}
	d, ok := r.b.Deletes[p]
	if !ok {
		d = pendingDelete{FirstMissedMS: r.now.UnixMilli()}
	}
	d.Walks++
	r.b.Deletes[p] = d
	r.dirty = true
	if d.Walks >= 2 && r.now.Sub(time.UnixMilli(d.FirstMissedMS)) >= CorroborateAge {
		return true
	}
	r.res.Pending = append(r.res.Pending, p)
	return false
}

// hold reports whether one side's deletions are held.
func (r *round) hold(side string, paths []string, tracked int) bool {
	limit := MassDeleteThreshold(tracked)
	if len(paths) <= limit || r.e.opts.AllowMassDelete {
		return false
	}
	r.res.Held = append(r.res.Held, MassDeleteHold{Side: side, Paths: paths, Tracked: tracked, Threshold: limit})
	return true
}

// abs is the local file of path p.
func (r *round) abs(p string) string { return filepath.Join(r.e.folder, filepath.FromSlash(p)) }

// pushChange reads the local file again for its push; ok is false when
// it changed since the walk (skipped, for the next round).
func (r *round) pushChange(ctx context.Context, p string) (Change, bool, error) {
	l := r.locals[p]
	raw, err := afero.ReadFile(r.e.fs, l.abs)
	if err != nil || Sum(raw) != l.sum {
		r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: SkipChanged})
		return Change{}, false, nil
	}
	if !l.screened { // each write is screened once
		if reason := r.e.refusal(p, raw); reason != "" {
			r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: reason})
			return Change{}, false, nil
		}
	}
	expect := r.remote[p]                      // what the remote holds now (zero: must not exist)
	wrote, _ := r.e.dir.Provenance(l.abs, raw) // the door that wrote it, if recorded
	return Change{Path: p, Content: raw, Wrote: wrote, Expect: expect}, true, ctx.Err()
}

// begin records a change about to be made (Agreed.InFlight).
func (r *round) begin(p string, f InFlight) {
	if r.b.InFlight == nil {
		r.b.InFlight = map[string]InFlight{}
	}
	r.b.InFlight[p] = f
	r.dirty = true
}

// sumOf is the Sum a change leaves on the remote ("" for a deletion).
func sumOf(c Change) string {
	if c.Delete {
		return ""
	}
	return Sum(c.Content)
}

// settle takes each change the last round began and did not see through
// (Agreed.InFlight) as agreed when its side holds exactly what it
// carried, and forgets it otherwise: it never landed, and the basis as
// it was still stands.
func (r *round) settle() {
	b := r.b
	for p, f := range b.InFlight {
		var got Entry
		var there bool
		if f.Here {
			if l := r.locals[p]; l != nil {
				got, there = Entry{Sum: l.sum, Ref: f.Ref, Written: f.Written}, true
			}
		} else {
			got, there = r.remote[p]
		}
		switch {
		case f.Sum == "" && !there:
			delete(b.Entries, p)
			delete(b.Deletes, p)
		case there && got.Sum == f.Sum:
			b.Entries[p] = got
			delete(b.Deletes, p)
		}
		delete(b.InFlight, p)
		r.dirty = true
	}
}

// record applies the remote's outcomes to the basis; mismatch reports a
// change the remote did not apply because someone wrote in between.
func (r *round) record(batch []Change, outs []Outcome) (mismatch bool) {
	byPath := map[string]Change{}
	for _, c := range batch {
		byPath[c.Path] = c
	}
	for _, o := range outs {
		c, ok := byPath[o.Path]
		if !ok {
			continue
		}
		if _, ok := r.b.InFlight[o.Path]; ok && o.Status != Mismatch {
			// Answered: nothing is in doubt. A Mismatch may answer a
			// retry of a change that did land: the next pass settles it.
			delete(r.b.InFlight, o.Path)
			r.dirty = true
		}
		switch o.Status {
		case Applied:
			if c.Delete {
				delete(r.b.Entries, c.Path)
				delete(r.b.Deletes, c.Path)
				r.res.DeletedRemote = append(r.res.DeletedRemote, c.Path)
			} else {
				en := o.Entry
				if en.Sum == "" {
					en.Sum = Sum(c.Content)
				}
				r.b.Entries[c.Path] = en
				delete(r.b.Deletes, c.Path)
				r.res.Pushed = append(r.res.Pushed, c.Path)
			}
			r.gen = max(r.gen, o.Generation)
			r.dirty = true
		case Mismatch:
			mismatch = true
			r.res.mismatched = append(r.res.mismatched, c.Path)
		case InReview:
			r.res.InReview = append(r.res.InReview, c.Path)
		case Rejected:
			r.res.Skipped = append(r.res.Skipped, Skip{Path: c.Path, Reason: SkipRejected + ": " + o.Reason})
		case Refused:
			reason := SkipRefused + ": " + o.Reason
			if strings.HasPrefix(o.Reason, SkipPathClash) {
				reason = o.Reason // the remote's clash, named as one
			}
			r.res.Skipped = append(r.res.Skipped, Skip{Path: c.Path, Reason: reason})
		}
	}
	return mismatch
}

// checkpoint takes the round's snapshot before its first local overwrite
// or deletion.
func (r *round) checkpoint(ctx context.Context) error {
	h := r.e.opts.History
	if h == nil || r.res.Checkpoint != "" {
		return nil
	}
	prefix := r.e.opts.CheckpointPrefix
	if prefix == "" {
		prefix = "sync"
	}
	id := filehistory.CheckpointID(prefix, r.now)
	if err := h.MakeSnapshot(ctx, id); err != nil && !onlyFilesLeftOut(err) {
		return fmt.Errorf("foldersync: take a checkpoint before the round writes: %w (nothing was written)", err)
	}
	r.res.Checkpoint = id
	return nil
}

// onlyFilesLeftOut reports whether a snapshot's error says only that
// some tracked files could not be backed up: the checkpoint stands, and
// the round never writes those (a file it cannot read or that is not a
// regular file is left alone).
func onlyFilesLeftOut(err error) bool {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *filehistory.SnapshotFileError
		if !errors.As(e, &fe) {
			return false
		}
	}
	return true
}

var errLocalChanged = errors.New("foldersync: the file changed during the sync")

// pull fetches paths from the remote and writes them here, each only
// over the version it was decided on; with conflict, the local side is
// kept aside first.
func (r *round) pull(ctx context.Context, paths []string, conflict bool) error {
	for len(paths) > 0 {
		n := min(batchSize, len(paths))
		batch := paths[:n]
		paths = paths[n:]
		got, err := r.e.remote.Get(ctx, batch)
		if err != nil {
			return fmt.Errorf("foldersync: fetch from the remote: %w", err)
		}
		// What is about to be written is recorded first: a run killed
		// after a write and before the basis took it leaves the next
		// round a way to know the file as agreed, not as an edit here.
		for _, p := range batch {
			if content, ok := got[p]; ok {
				en := r.remote[p]
				r.begin(p, InFlight{Sum: Sum(content), Here: true, Ref: en.Ref, Written: en.Written})
			}
		}
		if err := r.save(ctx); err != nil {
			return err
		}
		for _, p := range batch {
			content, ok := got[p]
			if !ok {
				continue // deleted since the listing: the next round sees it
			}
			if err := r.write(ctx, p, content, conflict); err != nil {
				return err
			}
			delete(r.b.InFlight, p) // recorded, or not written at all
		}
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	return nil
}

// write writes one pulled path.
func (r *round) write(ctx context.Context, p string, content []byte, conflict bool) error {
	en := r.remote[p]
	sum := Sum(content)
	if en.Sum != "" && sum != en.Sum {
		en = Entry{Sum: sum} // changed since the listing: the basis takes what was written
	}
	en.Sum = sum
	l := r.locals[p]
	// Every write is recorded in the checkpoint (a new file too: a
	// rewind removes it), so it is taken before the first.
	if err := r.checkpoint(ctx); err != nil {
		return err
	}
	if conflict && l != nil {
		raw, err := afero.ReadFile(r.e.fs, l.abs)
		if err != nil || Sum(raw) != l.sum {
			r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: SkipChanged})
			return nil
		}
		saved, err := r.keepAside(ctx, p, raw)
		if err != nil {
			return err
		}
		r.res.Conflicts = append(r.res.Conflicts, Conflict{Path: p, SavedAs: saved})
	}
	perm := fs.FileMode(0o644)
	if l != nil {
		if info, err := r.e.fs.Stat(l.abs); err == nil {
			perm = info.Mode().Perm() // the file keeps its mode
		}
	}
	_, err := r.e.gate.UpdateFile(ctx, r.abs(p), func(old []byte, exists bool) ([]byte, error) {
		if (l == nil && exists) || (l != nil && (!exists || Sum(old) != l.sum)) {
			return nil, errLocalChanged
		}
		return content, nil
	}, perm)
	if skip := writeSkip(err); skip != "" {
		r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: skip})
		return nil
	}
	if err != nil {
		return fmt.Errorf("foldersync: write %s: %w", p, err)
	}
	r.b.Entries[p] = en
	delete(r.b.Deletes, p)
	r.noteWritten(p, content)
	r.res.Pulled = append(r.res.Pulled, p)
	r.dirty = true
	return nil
}

// noteWritten records a written file in the stat cache.
func (r *round) noteWritten(p string, content []byte) {
	info, err := r.e.fs.Stat(r.abs(p))
	if err != nil {
		delete(r.b.Stat, p)
		return
	}
	r.b.Stat[p] = statEntry{Size: info.Size(), MtimeNS: info.ModTime().UnixNano(), SeenNS: r.e.opts.Now().UnixNano(), Sum: Sum(content)}
}

// writeSkip turns a local write's error into a skip reason for this path
// alone ("" for no error, or one that stops the round).
func writeSkip(err error) string {
	var pte *memdir.PathTraversalError
	var se *screen.Error
	var sec *secrets.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &sec):
		return SkipSecret
	case errors.Is(err, errLocalChanged):
		return SkipChanged
	case errors.As(err, &pte):
		return SkipRefused + ": " + err.Error()
	case errors.As(err, &se):
		return SkipScreened + ": " + err.Error()
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return SkipUnwritable
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.EEXIST), strings.Contains(err.Error(), "is a directory"), strings.Contains(err.Error(), "not a directory"):
		return SkipPathClash + ": a file or folder here is in the way"
	}
	return ""
}

// deleteHere removes a local file the remote deleted, only if it is
// still the version decided on; a stale copy is moved aside first.
func (r *round) deleteHere(ctx context.Context, p string, stale bool) error {
	l := r.locals[p]
	if err := r.checkpoint(ctx); err != nil {
		return err
	}
	raw, err := afero.ReadFile(r.e.fs, l.abs)
	if err != nil || Sum(raw) != l.sum {
		r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: SkipChanged})
		return nil
	}
	if stale {
		saved, err := r.keepAside(ctx, p, raw)
		if err != nil {
			return err
		}
		r.res.Conflicts = append(r.res.Conflicts, Conflict{Path: p, SavedAs: saved, Stale: true})
	}
	// Under the gate's lock: the file must still be what was decided on.
	_, err = r.e.gate.UpdateFile(ctx, l.abs, func(old []byte, exists bool) ([]byte, error) {
		if !exists || Sum(old) != l.sum {
			return nil, errLocalChanged
		}
		return old, nil
	}, 0o644)
	if err == nil {
		if _, err = r.e.gate.Remove(ctx, l.abs); errors.Is(err, fs.ErrNotExist) {
			err = nil // gone already
		}
	}
	if skip := writeSkip(err); skip != "" {
		r.res.Skipped = append(r.res.Skipped, Skip{Path: p, Reason: skip})
		return nil
	}
	if err != nil {
		return fmt.Errorf("foldersync: delete %s: %w", p, err)
	}
	delete(r.b.Entries, p)
	delete(r.b.Deletes, p)
	delete(r.b.Stat, p)
	r.res.DeletedLocal = append(r.res.DeletedLocal, p)
	r.dirty = true
	return nil
}

// keepRemoteAside saves the remote's copy of p aside before the local one
// is pushed over it (a replaced or restored remote).
func (r *round) keepRemoteAside(ctx context.Context, p string) error {
	got, err := r.e.remote.Get(ctx, []string{p})
	if err != nil {
		return fmt.Errorf("foldersync: fetch from the remote: %w", err)
	}
	content, ok := got[p]
	if !ok {
		return nil
	}
	saved, err := r.keepAside(ctx, p, content)
	if err != nil {
		return err
	}
	r.res.Conflicts = append(r.res.Conflicts, Conflict{Path: p, SavedAs: saved, LocalKept: true})
	return nil
}

// keepAside saves content under the conflicts folder, named after p and
// the time: "notes/a.20261203T150405.000Z.md". A name taken already gets
// a counter.
func (r *round) keepAside(ctx context.Context, p string, content []byte) (string, error) {
	stamp := r.e.opts.Now().UTC().Format("20060102T150405.000Z")
	ext := path.Ext(p)
	// The copy's name stays within what a filesystem holds, however long
	// the memory's name.
	name := synctext.FitName(strings.TrimSuffix(p, ext), "."+stamp+ext)
	if r.e.opts.AsideName != nil {
		name = r.e.opts.AsideName(p, stamp)
	}
	ext = path.Ext(name)
	base := strings.TrimSuffix(name, ext)
	saved := filepath.Join(r.e.aside, filepath.FromSlash(name))
	for i := 2; ; i++ {
		if _, err := r.e.asideFS.Stat(saved); errors.Is(err, fs.ErrNotExist) {
			break
		}
		saved = filepath.Join(r.e.aside, filepath.FromSlash(synctext.FitName(base, fmt.Sprintf(".%d%s", i, ext))))
	}
	if _, err := r.e.asideGate.WriteFile(ctx, saved, content, 0o644); err != nil {
		return "", fmt.Errorf("foldersync: keep a copy of %s aside: %w (nothing was overwritten)", p, err)
	}
	return saved, nil
}

// save writes the basis atomically if it changed.
func (r *round) save(ctx context.Context) error {
	if !r.dirty {
		return nil
	}
	if r.e.opts.BasisInMemory {
		// Nothing on disk; a pass that fails leaves e.kept unset, so the
		// next one starts again from what the Mirror holds.
	} else {
		// A copy stays beside it: the fallback of a basis damaged later
		// (readBasis). A copy, not the save before: that one lacks the
		// changes this save says are in flight.
		raw := r.b.marshal()
		for _, p := range []string{r.e.basis, r.e.basis + prevSuffix} {
			if _, err := r.e.plainGate.WriteFile(ctx, p, raw, 0o644); err != nil {
				return fmt.Errorf("foldersync: save the basis: %w", err)
			}
		}
	}
	r.dirty = false
	if m := r.e.opts.Mirror; m != nil {
		// Only what the mirror keeps: a save of the stat cache alone
		// leaves it as it is.
		a := r.b.agreed()
		key := agreedKey(a)
		if key != r.e.mirrored {
			if err := m.Save(ctx, a); err != nil {
				return fmt.Errorf("foldersync: save the basis: %w", err)
			}
			r.e.mirrored = key
		}
	}
	return nil
}

// folderClashes finds the paths that cannot be files beside another path
// of the set, one being a folder of the other ("a.md" and "a.md/b.md"),
// mapped to a path in their way. A path the folder holds as a file stays
// (the other is the one that cannot be written here); of two that are
// only on the remote, both are left alone.
func folderClashes(paths map[string]bool, locals map[string]*local) map[string]string {
	out := map[string]string{}
	for p := range paths {
		for i := len(p) - 1; i > 0; i-- {
			if p[i] != '/' || !paths[p[:i]] {
				continue
			}
			folder := p[:i]
			if locals[p] == nil {
				out[p] = folder
			}
			if locals[folder] == nil {
				out[folder] = p
			}
		}
	}
	return out
}

// agreedKey sums what a mirror keeps, to tell whether it changed.
func agreedKey(a Agreed) string {
	raw, _ := json.Marshal(a)
	return Sum(raw)
}

// Sum is the lowercase hex SHA-256 of b, as Entry.Sum holds it.
func Sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// dedupSkips drops a skip repeated by a round that looked again.
func dedupSkips(s []Skip) []Skip {
	seen := map[Skip]bool{}
	out := s[:0]
	for _, k := range s {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
