package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/agentmem-sdk/agentmem/secrets"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// Client defaults.
const (
	// defaultReplyCap bounds a reply until the server's limits are known
	// (a server without the limits view keeps it).
	defaultReplyCap        = 64 << 20
	defaultTimeout         = 30 * time.Second
	defaultMaxRetries      = 3
	defaultConflictRetries = 2
	defaultBaseDelay       = 500 * time.Millisecond
	defaultMaxDelay        = 32 * time.Second
)

// HTTPDoer sends requests (an *http.Client, or a wrapper).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// ClientOptions configures a sync Client. BaseURL, Repo, Token, Fs and
// TeamDir are required; the zero value of the rest means the defaults.
type ClientOptions struct {
	// BaseURL is the server, such as https://team.example.com.
	BaseURL string
	// Path is the endpoint below BaseURL (default wire.DefaultSyncPath).
	Path string
	// Repo is "owner/name".
	Repo  string
	Token string
	// HTTP sends requests (default an http.Client with a 30 s timeout).
	HTTP HTTPDoer
	// MaxRetries on network errors, timeouts, 429 and 5xx (default 3).
	MaxRetries int
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
	// that side and reports the deletions in Result.Held.
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
	// snapshot (Result.Checkpoint) is taken before its first write, and
	// every file it writes or removes is recorded in it by the write
	// itself, under the write's lock (memdir.Dir.WithHistory). Give the
	// client its own filehistory.Tracker.
	History *filehistory.Tracker
	Logger  *slog.Logger
	// Door, Session and Origin say how this client's writes reach the
	// server (wire.DoorHeader, SessionHeader, OriginHeader): the server
	// records them with the token's name on every write it stores. Door
	// defaults to wire.DoorSync; Session and Origin are sent when set.
	Door, Session, Origin string
}

// SyncState is what a client remembers between calls: the three-way
// base of the sync. The caller creates one (the zero value) per team
// directory and server and passes it to every call, or sets
// ClientOptions.StateFile to keep it on disk between processes.
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
// A key with no base (a new state, a lost state file) is never deleted on
// either side: a file only here is pushed, one only on the server pulled,
// and two different versions are a conflict; a copy older than the key's
// deletion on the server is moved aside rather than pushed back.
type SyncState struct {
	// Base is the per-key checksum both sides last agreed on.
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
	// StoreID is the identity of the server's store (wire.StoreIDHeader)
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
	// read of the server said (wire.Content.EntryAuthors; kept in the
	// state file, read back by Attributions for the prompt).
	Authors map[string]wire.Attribution
	loaded  bool
}

// Skip says why a key was not synced.
type Skip struct {
	Key string
	// Reason is "secret", "too_large", "invalid_key", "not_regular" (a link or a special file: never followed, never pushed), "not_utf8" (the
	// file's bytes are not valid UTF-8: JSON could not carry them exactly),
	// "nul_byte" (the file holds a NUL, which not every store can keep),
	// "not_nfc" (the file's name is not in Unicode NFC form, which the
	// server refuses), "screened" (SkipScreened: every server's screens
	// refuse the content), all four left as they are and never
	// overwritten by a pull, or, on pull,
	// "write_failed" (the file could not be written, such as a key below
	// a name that is a file here, RuleID SkipPathClash; the other keys
	// are still written) or
	// "checkpoint_failed" (ClientOptions.History could not save the file's
	// previous version, so it was left as it is; the next pull retries).
	Reason string
	// RuleID and Label name the secret found (Reason "secret"), or the
	// screen's rule and what to fix (Reason "screened"), or the server's
	// error code and words (Reason SkipRefused), or SkipPathClash and
	// what is in the way (Reason "write_failed"); Label is the
	// reviewer's reason for Reason "review_rejected".
	RuleID, Label string
}

// Result reports one Pull, Push or Sync.
type Result struct {
	// Written are the keys pull wrote to disk; Deleted those it removed
	// for tombstones (with PropagateDeletes).
	Written, Deleted []string
	// Uploaded are the keys push sent; SoftDeleted those it asked the
	// server to delete.
	Uploaded, SoftDeleted []string
	Skipped               []Skip
	// Conflicts are keys both sides changed: one version is in the file,
	// the other kept aside (Conflict.SavedAs).
	Conflicts []Conflict
	// StoreReset, when set, says why this round forgot the sync base: the
	// server's store has another identity, or its repo is older than the
	// one last seen (a replaced store, a restored backup). Nothing was
	// deleted on either side.
	StoreReset string
	// Held lists the deletions the mass-delete hold kept back
	// (ClientOptions.AllowMassDelete lets them through).
	Held []MassDeleteHold
	// StateError is set when the state file could not be read (the run
	// went on without a base, deleting nothing).
	StateError error
	// Checkpoint names the snapshot taken before the pull changed files
	// (ClientOptions.History); rewinding to it undoes the pull's writes.
	Checkpoint string
	// InReview are the keys this run sent that the server kept for a
	// person's review (the repo's policy is "review" and the token is an
	// agent's): not yet on the server, served to nobody else. The local
	// files stay as they are, and no sync deletes them while they wait;
	// each run sends them again (the server keeps one proposal) and
	// reports them here until they are approved or rejected.
	InReview []string
	// NotModified: the pull got 304. ServerEmpty: the server has no data.
	NotModified, ServerEmpty bool
	Requests                 int
	BytesSent                int64
}

// Add merges another result into r (for a caller that runs several steps).
func (r *Result) Add(o Result) {
	r.Written = append(r.Written, o.Written...)
	r.Deleted = append(r.Deleted, o.Deleted...)
	r.Uploaded = append(r.Uploaded, o.Uploaded...)
	r.SoftDeleted = append(r.SoftDeleted, o.SoftDeleted...)
	r.Skipped = append(r.Skipped, o.Skipped...)
	r.Conflicts = append(r.Conflicts, o.Conflicts...)
	r.Held = append(r.Held, o.Held...)
	r.InReview = append(r.InReview, o.InReview...)
	if o.StoreReset != "" {
		r.StoreReset = o.StoreReset
	}
	if o.StateError != nil {
		r.StateError = o.StateError
	}
	if o.Checkpoint != "" {
		r.Checkpoint = o.Checkpoint
	}
	r.NotModified, r.ServerEmpty = o.NotModified, o.ServerEmpty
	r.Requests += o.Requests
	r.BytesSent += o.BytesSent
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

// Client syncs one team directory with the server. Safe for concurrent
// use, but calls sharing one SyncState must not overlap.
type Client struct {
	*transport
	fs      afero.Fs
	teamDir string           // cleaned
	scanner *secrets.Scanner // the team directory's
	team    *memdir.Dir      // the team directory: how its files were written
	aside   *memdir.Dir      // the conflicts folder beside it
}

// Configuration errors.
var (
	ErrNoToken = errors.New("teammem: no sync token (set ClientOptions.Token)")
	ErrNoRepo  = errors.New("teammem: no repo (set ClientOptions.Repo to owner/name)")
)

// NewClient returns a Client that syncs the team directory team: the
// team view of a memory directory (Dir.Sub(memdir.TeamDirName)), or a
// team directory on its own (memdir.NewDir with DirOptions.Team). Every
// pull writes through it, with its scanner, synced flag and lock; pushed
// files are checked with its scanner; conflict copies go to a folder
// beside it (ConflictsDirName) with the same rules.
func NewClient(team *memdir.Dir, cfg ClientOptions) (*Client, error) {
	if team == nil {
		return nil, errors.New("teammem: NewClient needs the team directory (a memdir.Dir: its filesystem and path)")
	}
	fsys, teamDir := team.FS(), team.Path()
	if fsys == nil || teamDir == "" {
		return nil, errors.New("teammem: NewClient needs a filesystem and the team directory")
	}
	t, err := newTransport(cfg)
	if err != nil {
		return nil, err
	}
	team = team.WithHistory(t.cfg.History)
	c := &Client{transport: t, fs: fsys, teamDir: filepath.Clean(teamDir), scanner: team.Scanner(), team: team}
	aside, err := team.WithPath(c.conflictsDir())
	if err != nil {
		return nil, fmt.Errorf("teammem: %w", err)
	}
	c.aside = aside
	return c, nil
}

// localFile is a team file read for a sync.
type localFile struct {
	key, content, sum string
	mtime             time.Time
}

// Hashes refreshes the state's ETag and known server checksums from the
// hashes view, without fetching or writing any content (a cheap start for
// a push from a fresh process).
func (c *Client) Hashes(ctx context.Context, st *SyncState) (Result, error) {
	var res Result
	err := c.probe(ctx, st, &res)
	return res, err
}

// probe refreshes the known server checksums from the hashes view.
func (c *Client) probe(ctx context.Context, st *SyncState, res *Result) error {
	resp, body, err := c.send(ctx, res, http.MethodGet, c.endpoint+"&view=hashes", nil, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotFound {
		st.ETag, st.ServerChecksums = "", map[string]string{}
		return nil
	}
	var hv wire.HashesView
	if err := json.Unmarshal(body, &hv); err != nil || hv.EntryChecksums == nil {
		return &SyncError{Class: ClassParse, Status: resp.StatusCode, Err: errors.New("the hashes view has no entryChecksums")}
	}
	st.ETag, st.ServerChecksums, st.Tombstones = hv.Checksum, hv.EntryChecksums, hv.DeletedEntries
	return nil
}

// Skip reasons for files whose bytes or name a push cannot carry exactly.
const (
	SkipNotUTF8 = "not_utf8"
	SkipNULByte = "nul_byte"
	SkipNotNFC  = "not_nfc"
	// SkipScreened: a screen every server applies refuses the content (an
	// invisible character, a high-confidence injection, a foreign link in
	// MEMORY.md; package screen). RuleID names the rule, Label says what
	// to fix.
	SkipScreened = "screened"
	// SkipRefused: the server refused this key alone (Label gives its
	// error code and words: a key that cannot exist beside another, one
	// its screens refuse); the file is left as it is and the rest of the
	// push went through. Fix or rename the file.
	SkipRefused = "refused"
	// SkipPathClash is the RuleID of a "write_failed" pull whose key
	// cannot be a file here: a name on its way is a file here where the
	// server has a folder, or the key is a folder here (Label says
	// which). The rest of the pull went through; rename one of them.
	SkipPathClash = "path_clash"
	// SkipReviewRejected: a person reviewing the repo already rejected
	// this very change (the server keeps its reason; agentmem team review
	// ls --status rejected shows it). The file is left as it is; change
	// or remove it.
	SkipReviewRejected = "review_rejected"
)

// skipDirs returns the folders this client never carries: SkipDirs and
// those of the manifests found.
func (c *Client) skipDirs(manifests []string) []string {
	out := make([]string, 0, len(c.cfg.SkipDirs)+len(manifests))
	for _, d := range append(append([]string{}, c.cfg.SkipDirs...), manifests...) {
		if d = strings.Trim(path.Clean(filepath.ToSlash(d)), "/"); d != "" && d != "." {
			out = append(out, d)
		}
	}
	return out
}

// underDirs reports whether key lies in one of dirs.
func underDirs(key string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(key, d+"/") {
			return true
		}
	}
	return false
}

// readLocal reads the pushable files of the team dir, sorted by key, and
// returns the folders the client never carries (SkipDirs and store
// folders), whose files it leaves out.
func (c *Client) readLocal(ctx context.Context) (files []localFile, permIssues bool, skipped []Skip, skipDirs []string, err error) {
	var paths, others []fswalk.Entry
	var manifests []string
	err = fswalk.Walk(ctx, c.fs, c.teamDir, func(e fswalk.Entry) error {
		if path.Base(e.Rel) == memdir.StoreManifestName && !e.Type.IsDir() {
			manifests = append(manifests, path.Dir(e.Rel))
		}
		if e.Type.IsRegular() {
			paths = append(paths, e)
		} else if !e.Type.IsDir() {
			others = append(others, e) // a link or a special file
		}
		return nil
	})
	skipDirs = c.skipDirs(manifests)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil, skipDirs, nil
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		return nil, true, nil, skipDirs, nil
	case err != nil:
		return nil, false, nil, skipDirs, err
	}
	for _, e := range others {
		name := path.Base(e.Rel)
		ext := path.Ext(name)
		if underDirs(e.Rel, skipDirs) || strings.HasPrefix(name, ".") || (ext != ".md" && ext != ".txt") || fswalk.Hidden(e.Rel) {
			continue
		}
		// Never followed (its target may lie outside the folder), and
		// said, so its author knows it is not shared.
		skipped = append(skipped, Skip{Key: e.Rel, Reason: "not_regular"})
	}
	for _, e := range paths {
		if underDirs(e.Rel, skipDirs) {
			continue
		}
		name := path.Base(e.Rel)
		ext := path.Ext(name)
		if strings.HasPrefix(name, ".") || (ext != ".md" && ext != ".txt") || fswalk.Hidden(e.Rel) {
			continue
		}
		info, err := c.fs.Stat(e.Abs)
		if err != nil {
			if isMissingOrDenied(err) {
				permIssues = permIssues || !errors.Is(err, fs.ErrNotExist)
				continue
			}
			return nil, permIssues, skipped, skipDirs, err
		}
		if info.Size() > wire.MaxEntryBytes {
			skipped = append(skipped, Skip{Key: e.Rel, Reason: "too_large"})
			continue
		}
		if validateKeySyntax(e.Rel) != nil {
			skipped = append(skipped, Skip{Key: e.Rel, Reason: "invalid_key"})
			continue
		}
		if !norm.NFC.IsNormalString(e.Rel) {
			// The server refuses a batch that holds such a key: skipped
			// here, the rest of the push goes through.
			skipped = append(skipped, Skip{Key: e.Rel, Reason: SkipNotNFC})
			continue
		}
		data, err := afero.ReadFile(c.fs, e.Abs)
		if err != nil {
			if isMissingOrDenied(err) {
				permIssues = permIssues || !errors.Is(err, fs.ErrNotExist)
				continue
			}
			return nil, permIssues, skipped, skipDirs, err
		}
		var te *synctext.Error
		if errors.As(synctext.CheckContent(data), &te) {
			// JSON would carry other bytes than the file's: never pushed,
			// and (unplanned) never overwritten by a pull.
			reason := SkipNotUTF8
			if te.Reason == synctext.ReasonNUL {
				reason = SkipNULByte
			}
			c.log.Warn("teammem: file skipped: its bytes cannot be synced exactly", "event", "teammem_text_skipped", "reason", reason)
			skipped = append(skipped, Skip{Key: e.Rel, Reason: reason})
			continue
		}
		var se *screen.Error
		if errors.As(screen.CheckShared(e.Rel, string(data)), &se) {
			// Every server refuses it, and with it the whole batch:
			// skipped here, the rest of the push goes through.
			c.log.Warn("teammem: file skipped: the server's screens refuse it", "event", "teammem_screened_skipped", "rule", se.RuleID)
			skipped = append(skipped, Skip{Key: e.Rel, Reason: SkipScreened, RuleID: se.RuleID, Label: se.Error()})
			continue
		}
		if m, ok := c.scanner.First(string(data)); ok {
			c.log.Warn("teammem: file skipped: it contains a secret", "event", "teammem_secret_skipped", "rule", m.RuleID)
			skipped = append(skipped, Skip{Key: e.Rel, Reason: "secret", RuleID: m.RuleID, Label: m.Label})
			continue
		}
		files = append(files, localFile{key: e.Rel, content: string(data), sum: wire.EntryChecksum(string(data)), mtime: info.ModTime()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].key < files[j].key })
	return files, permIssues, skipped, skipDirs, nil
}

func isMissingOrDenied(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
