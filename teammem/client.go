package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// Client defaults.
const (
	// defaultReplyCap bounds a reply until the server's limits are known
	// (a server without the limits view keeps it).
	defaultReplyCap        = 64 << 20
	defaultTimeout         = 30 * time.Second
	defaultConflictRetries = 2
)

// HTTPDoer sends requests (an *http.Client, or a wrapper).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// Options configures a sync Client. BaseURL, Repo, Token, Fs and
// TeamDir are required; the zero value of the rest means the defaults.
type Options struct {
	// BaseURL is the server, such as https://team.example.com.
	BaseURL string
	// Path is the endpoint below BaseURL (default teamwire.DefaultSyncPath).
	Path string
	// Repo is "owner/name".
	Repo  string
	Token string
	// HTTP sends requests (default an http.Client with a 30 s timeout).
	HTTP HTTPDoer
	// Retries is how often a network error, a timeout, a 429 or a 5xx
	// other than 507 is sent again, honouring Retry-After (default 3;
	// negative: none).
	Retries int
	// ConflictRetries after a 412 (default 2).
	ConflictRetries int
	// BaseDelay and MaxDelay shape the backoff min(base*2^(n-1), max)
	// (defaults 500 ms and 32 s).
	BaseDelay, MaxDelay time.Duration
	// Jitter returns a number in [0, 1); up to 25 % of the delay is added
	// (default math/rand).
	Jitter func() float64
	// Sleep waits between retries (default a timer honouring ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// KeepDeleted stops deletions from propagating: a file deleted here is
	// not deleted on the server, and a key deleted on the server is not
	// deleted here. By default deletions propagate both ways (by the
	// three-way rules of SyncState, so only a deletion of a copy nobody
	// changed since the last sync).
	KeepDeleted bool
	// AllowMassDelete lets a round delete more than foldersync.MassDeleteThreshold
	// memories on one side. By default such a round deletes nothing on
	// that side and reports the deletions in foldersync.Result.Held.
	AllowMassDelete bool
	// StateFile, when set, is where the SyncState is kept between runs
	// (StatePath gives the usual place): every Pull, Push and Sync loads it
	// into an empty SyncState first and saves it, atomically, after. A
	// missing or unreadable file means no base: that run deletes nothing.
	StateFile string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxReplyBytes bounds a reply until the server's limits are known
	// (default 64 MiB). A reply that reaches it makes the client
	// ask the server's limits view once and raise the bound to what the
	// server can hold, so any repo the server accepts can be pulled.
	MaxReplyBytes int64
	// SkipDirs are folders of the team directory ("/"-separated, relative
	// to it, such as a memory store's mount "proj") that this client never
	// carries: their files are not pushed, pulled, deleted or reported.
	// A folder that holds a memory store's manifest
	// (memdir.StoreManifestName) is skipped too, listed here or not: a
	// store folder is kept in step by its store's sync alone.
	SkipDirs []string
	// History, when set, makes each pull that changes files undoable: a
	// snapshot (foldersync.Result.Checkpoint) is taken before its first write, and
	// every file it writes or removes is recorded in it by the write
	// itself, under the write's lock (memdir.Dir.WithHistory). Give the
	// client its own filehistory.Tracker.
	History *filehistory.Tracker
	Logger  *slog.Logger
	// Door, Session and Origin say how this client's writes reach the
	// server (teamwire.DoorHeader, SessionHeader, OriginHeader): the server
	// records them with the token's name on every write it stores. Door
	// defaults to teamwire.DoorSync; Session and Origin are sent when set.
	Door, Session, Origin string
}

// SyncState is what a client remembers between calls: the three-way
// base of the sync. The caller creates one (the zero value) per team
// directory and server and passes it to every call, or sets
// Options.StateFile to keep it on disk between processes.
//
// For each key, Base holds the checksum the two sides last agreed on.
// With it, every Pull, Push and Sync decides each key by comparing the
// local file (l) and the server's entry (s) with the base (b):
//
//	l == s                       nothing to do (the base follows)
//	s == b, l changed            push (l deleted: delete on the server)
//	l == b, s changed            pull (s deleted: delete here)
//	l deleted, s changed         pull: the edit wins
//	s deleted, l changed         push: the edit wins
//	both changed, differently    the server's version takes the file; the
//	                             local one is kept under ConflictsDirName
//	                             and reported in Result.Conflicts
//
// (Result is the sync engine's: foldersync.Result.)
//
// A key with no base (a new state, a lost state file) is never deleted on
// either side: a file only here is pushed, one only on the server pulled,
// and two different versions are a conflict; a copy older than the key's
// deletion on the server is moved aside rather than pushed back.
type SyncState struct {
	// Base is the per-key checksum both sides last agreed on. Between
	// calls, give the client the state as a call left it, or another (a
	// state read again from its file): a Base changed in place is not
	// seen.
	Base map[string]string
	// ETag is the server's repo checksum as of ServerChecksums.
	ETag string
	// ServerChecksums are the entry checksums the server was last seen to
	// hold, and Tombstones its deleted keys (Unix ms).
	ServerChecksums map[string]string
	Tombstones      map[string]int64
	// MaxEntries is the server's entry limit once learned from a 413.
	MaxEntries int
	// ServerHasContent reports whether the server held any entry at the
	// last sync (TeamMemoryActive's second input).
	ServerHasContent bool
	// StoreID is the identity of the server's store (teamwire.StoreIDHeader)
	// and Version the repo version, as of the last completed round. A
	// round that meets another identity, or an older version, forgets
	// Base: the server is not the store this client agreed with.
	StoreID string
	Version int64
	// Resetting is set from the round that found the store replaced or
	// restored until a round that may push completes: meanwhile nothing
	// is deleted or moved aside on the server's word, and a key that
	// differs keeps the local version (the server's is kept aside).
	Resetting bool
	// InReview are the keys the last round that pushed found waiting for
	// a person's review on the server, with the checksum of the local
	// content sent (kept in the state file; InReview reads it back).
	InReview map[string]string
	// Authors say who wrote each server entry as it is, as the last full
	// read of the server said (teamwire.Content.EntryAuthors; kept in the
	// state file, read back by Attributions for the prompt).
	Authors map[string]teamwire.Attribution
	// InFlight and Diverged are what the engine keeps of changes a round
	// began and may not have seen through (a push whose reply was lost)
	// and of files it left in place beside the server's newer copy
	// (foldersync.Agreed); kept in the state file, written after every
	// batch of a round.
	InFlight map[string]foldersync.InFlight
	Diverged map[string]foldersync.Divergence
	// Reset says why the last round took the server for another store
	// than the one this directory agreed with (another identity, an
	// emptied repo, an older version: a replaced store, a restored
	// backup), "" when it did not: that round forgot Base and deleted
	// nothing (its Result.BasisReset).
	Reset string
	// FileError is set when Options.StateFile could not be read
	// (ErrCorruptState): this state started without a base, and its
	// first round deleted nothing.
	FileError error
	loaded    bool
}

// ErrorClass sorts sync failures for callers and the watcher.
type ErrorClass string

// The error classes.
const (
	ClassAuth           ErrorClass = "auth"
	ClassForbidden      ErrorClass = "forbidden"
	ClassTimeout        ErrorClass = "timeout"
	ClassNetwork        ErrorClass = "network"
	ClassParse          ErrorClass = "parse"
	ClassConflict       ErrorClass = "conflict"
	ClassTooManyEntries ErrorClass = "too_many_entries"
	// ClassTLS: the server's certificate could not be verified (an
	// untrusted authority, another host name, expired), or it does not
	// speak TLS. Not retried: the error says what to fix.
	ClassTLS     ErrorClass = "tls"
	ClassUnknown ErrorClass = "unknown"
)

// SyncError reports a failed sync request.
type SyncError struct {
	Class ErrorClass
	// Status is the HTTP status (0 for network errors).
	Status int
	// Code is the server's error_code, when it sent one.
	Code string
	// Attempts is how many times the request was sent.
	Attempts int
	// MaxEntries is the server's entry limit (ClassTooManyEntries).
	MaxEntries int
	// Keys are the keys the server named as the reason it refused the
	// request (a screened entry, keys that cannot exist side by side).
	Keys []string
	Err  error
}

func (e *SyncError) Error() string {
	s := "teammem: sync failed (" + string(e.Class)
	if e.Status != 0 {
		s += ", HTTP " + strconv.Itoa(e.Status)
	}
	if e.Code != "" {
		s += ", " + e.Code
	}
	s += ")"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SyncError) Unwrap() error { return e.Err }

// Permanent reports whether retrying later cannot help without a change
// (no token, no access, a client error other than 409 or 429).
func (e *SyncError) Permanent() bool {
	switch e.Class {
	case ClassAuth, ClassForbidden, ClassTooManyEntries, ClassTLS:
		return true
	}
	return e.Status >= 400 && e.Status < 500 && e.Status != 409 && e.Status != 429 && e.Status != 412
}

// Client syncs one team directory with the server: one sync engine
// (foldersync.Engine) through one team driver (Remote), kept across
// its Sync, Pull and Push calls so that an unchanged file is not read
// again. Safe for concurrent use; its rounds run one at a time.
type Client struct {
	*transport
	fs      afero.Fs
	teamDir string      // cleaned
	team    *memdir.Dir // the team directory: how its files were written
	aside   *memdir.Dir // the conflicts folder beside it
	remote  *Remote
	engine  *foldersync.Engine

	// mu holds a round: st is the state it runs with (the engine's
	// Mirror).
	mu      sync.Mutex
	st      *SyncState
	own     SyncState // the watcher's (State)
	leftOut []string  // SkipDirs, cleaned
	// stated is the driver's view of the server the last round copied
	// into its SyncState.
	stated *repoView
	// mirrored stamps the state the engine was last seeded from or saved
	// to (stateBasis.Unchanged).
	mirrored stateStamp
}

// Configuration errors.
var (
	ErrNoToken = errors.New("teammem: no sync token (set Options.Token)")
	ErrNoRepo  = errors.New("teammem: no repo (set Options.Repo to owner/name)")
)

// New returns a Client that syncs the team directory team: the
// team view of a memory directory (Dir.Sub(memdir.TeamDirName)), or a
// team directory on its own (memdir.NewDir with DirOptions.Team). Every
// pull writes through it, with its scanner, synced flag and lock; pushed
// files are checked with its scanner; conflict copies go to a folder
// beside it (ConflictsDirName) with the same rules.
func New(team *memdir.Dir, cfg Options) (*Client, error) {
	if team == nil {
		return nil, errors.New("teammem: New needs the team directory (a memdir.Dir: its filesystem and path)")
	}
	fsys, teamDir := team.FS(), team.Path()
	if fsys == nil || teamDir == "" {
		return nil, errors.New("teammem: New needs a filesystem and the team directory")
	}
	t, err := newTransport(cfg)
	if err != nil {
		return nil, err
	}
	team = team.WithHistory(t.cfg.History)
	c := &Client{transport: t, fs: fsys, teamDir: filepath.Clean(teamDir), team: team}
	aside, err := team.WithPath(c.conflictsDir())
	if err != nil {
		return nil, fmt.Errorf("teammem: %w", err)
	}
	c.aside = aside
	c.remote = &Remote{t: t}
	c.leftOut = c.skipDirs()
	opts := foldersync.Options{
		Include:         c.includes,
		ConflictsDir:    c.conflictsDir(),
		ConflictsIn:     aside,
		KeepDeleted:     t.cfg.KeepDeleted,
		AllowMassDelete: t.cfg.AllowMassDelete,
		Retries:         t.cfg.ConflictRetries,
		Now:             t.cfg.Now,
		// A pull's checkpoint, and the local side of a conflict kept as
		// <key>.<time>.md beside the team directory.
		CheckpointPrefix: "team-pull",
		AsideName:        func(rel, stamp string) string { return synctext.FitName(rel, "."+stamp+".md") }, // within a file name's limit
		BasisInMemory:    true,
		Mirror:           stateBasis{c},
	}
	if t.cfg.History != nil {
		opts.History = t.cfg.History
	}
	if c.engine, err = foldersync.New(team, c.teamDir, c.remote, opts); err != nil {
		return nil, fmt.Errorf("teammem: %w", err)
	}
	return c, nil
}

// skipDirs returns the folders this client never carries (SkipDirs),
// cleaned.
func (c *Client) skipDirs() []string {
	out := make([]string, 0, len(c.cfg.SkipDirs))
	for _, d := range c.cfg.SkipDirs {
		if d = strings.Trim(path.Clean(filepath.ToSlash(d)), "/"); d != "" && d != "." {
			out = append(out, d)
		}
	}
	return out
}

// underDirs reports whether key lies in one of dirs.
func underDirs(key string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(key, d+"/") })
}

func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// printable returns s without control or format characters (a hostile
// server's reply must not drive the user's terminal), cut to max runes.
func printable(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "..."
	}
	return s
}
