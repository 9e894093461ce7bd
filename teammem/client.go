package teammem

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// AllowMassDelete lets a round delete more than MassDeleteThreshold
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
	// Reason is "secret", "too_large", "invalid_key", "not_utf8" (the
	// file's bytes are not valid UTF-8: JSON could not carry them exactly),
	// "nul_byte" (the file holds a NUL, which not every store can keep),
	// "not_nfc" (the file's name is not in Unicode NFC form, which the
	// server refuses), "screened" (SkipScreened: every server's screens
	// refuse the content), all four left as they are and never
	// overwritten by a pull, or, on pull,
	// "write_failed" (the file could not be written, such as a key below
	// a name that is a file here; the other keys are still written) or
	// "checkpoint_failed" (ClientOptions.History could not save the file's
	// previous version, so it was left as it is; the next pull retries).
	Reason string
	// RuleID and Label name the secret found (Reason "secret"), or the
	// screen's rule and what to fix (Reason "screened"); Label is the
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
	Err        error
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
	fs      afero.Fs
	teamDir string           // cleaned
	scanner *secrets.Scanner // the team directory's
	cfg     ClientOptions
	gate    *memdir.WriteGate // writes into the team directory
	team    *memdir.Dir       // the team directory: how its files were written
	aside   *memdir.WriteGate // writes conflict copies beside it
	// defaultHTTP is the client made when the config gave none.
	defaultHTTP *http.Client
	// replyCap bounds a reply's size: defaultReplyCap until the server's
	// limits say how large a repo can be.
	replyCap   atomic.Int64
	limitsOnce sync.Once
	endpoint   string
	log        *slog.Logger
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
	switch {
	case cfg.Token == "":
		return nil, ErrNoToken
	case cfg.Repo == "" || strings.Count(cfg.Repo, "/") != 1:
		return nil, ErrNoRepo
	case fsys == nil || teamDir == "":
		return nil, errors.New("teammem: NewClient needs a filesystem and the team directory")
	case cfg.BaseURL == "":
		return nil, errors.New("teammem: ClientOptions needs the server's BaseURL")
	}
	if cfg.Path == "" {
		cfg.Path = wire.DefaultSyncPath
	}
	if cfg.Door == "" {
		cfg.Door = wire.DoorSync
	}
	if _, err := wire.ParseProvenance(cfg.Door, cfg.Session, cfg.Origin); err != nil {
		return nil, fmt.Errorf("teammem: ClientOptions: %w", err)
	}
	var defaultHTTP *http.Client
	if cfg.HTTP == nil {
		defaultHTTP = &http.Client{Timeout: defaultTimeout}
		cfg.HTTP = defaultHTTP
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = defaultMaxRetries
	}
	if cfg.ConflictRetries <= 0 {
		cfg.ConflictRetries = defaultConflictRetries
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = defaultBaseDelay
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = defaultMaxDelay
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	endpoint := strings.TrimRight(cfg.BaseURL, "/") + cfg.Path + "?repo=" + url.QueryEscape(cfg.Repo)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	team = team.WithHistory(cfg.History)
	c := &Client{fs: fsys, teamDir: filepath.Clean(teamDir), scanner: team.Scanner(), cfg: cfg, endpoint: endpoint, log: log, gate: team.Gate(), team: team, defaultHTTP: defaultHTTP}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = defaultReplyCap
	}
	c.cfg.MaxReplyBytes = cfg.MaxReplyBytes
	c.replyCap.Store(cfg.MaxReplyBytes)
	aside, err := team.WithPath(c.conflictsDir())
	if err != nil {
		return nil, fmt.Errorf("teammem: %w", err)
	}
	c.aside = aside.Gate() // a conflict copy adds a file and replaces none: nothing to undo
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// localFile is a team file read for a sync.
type localFile struct {
	key, content, sum string
	mtime             time.Time
}

// upload sends uploads and deletes in batches (deletions ride with the
// first), each conditional on the server state the plan was made from;
// every accepted batch moves view and base forward.
func (c *Client) upload(ctx context.Context, view *serverView, res *Result, uploads []localFile, deletes []string, base map[string]string) error {
	// Files go with the door, session and origin that wrote them.
	bs, provs := c.provenanceBatches(uploads, len(deletes) > 0, wire.MaxPutBodyBytes)
	if len(bs) == 0 {
		bs, provs = [][]localFile{nil}, []map[string]string{nil} // deletions alone still need a request
	}
	if view.sums == nil {
		view.sums = map[string]string{}
	}
	ifMatch := view.etag
	for i, batch := range bs {
		body := wire.PutBody{Entries: map[string]string{}}
		for _, f := range batch {
			body.Entries[f.key] = f.content
		}
		if i == 0 {
			body.SoftDeleteKeys = deletes
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		headers := map[string]string{"Content-Type": "application/json"}
		for k, v := range provs[i] {
			headers[k] = v
		}
		if ifMatch != "" {
			headers["If-Match"] = `"` + ifMatch + `"`
		}
		resp, respBody, err := c.send(ctx, res, http.MethodPut, c.endpoint, raw, headers)
		if err != nil {
			return err
		}
		var pr wire.PutResult
		if err := json.Unmarshal(respBody, &pr); err != nil || pr.Checksum == "" {
			return &SyncError{Class: ClassParse, Status: resp.StatusCode, Err: errors.New("the server's reply to a push is not valid")}
		}
		inReview := map[string]bool{}
		for _, k := range pr.InReview {
			inReview[k] = true
		}
		res.InReview = append(res.InReview, pr.InReview...)
		for _, k := range pr.Rejected {
			inReview[k] = true // as for one in review: nothing changed on the server
			res.Skipped = appendSkips(res.Skipped, Skip{Key: k, Reason: SkipReviewRejected, Label: printable(pr.RejectedReasons[k], 300)})
		}
		for _, f := range batch {
			if inReview[f.key] {
				continue // not on the server: the base stays, the file too
			}
			view.sums[f.key] = f.sum
			base[f.key] = f.sum
			res.Uploaded = append(res.Uploaded, f.key)
		}
		if i == 0 {
			for _, k := range deletes {
				if inReview[k] {
					continue // still on the server: nothing changes here
				}
				delete(view.sums, k)
				delete(base, k)
				if view.tombs == nil {
					view.tombs = map[string]int64{}
				}
				view.tombs[k] = c.now().UnixMilli()
			}
			for _, k := range deletes {
				if !inReview[k] {
					res.SoftDeleted = append(res.SoftDeleted, k)
				}
			}
		}
		ifMatch, view.etag = pr.Checksum, pr.Checksum
		view.version = pr.Version
		if id := resp.Header.Get(wire.StoreIDHeader); id != "" {
			view.storeID = id
		}
		if wire.RepoChecksum(view.sums) != pr.Checksum {
			// The server holds more than we know: a PUT without If-Match
			// (the repo was empty when read) met a teammate's write. The
			// tag no longer describes our view, so the next read must be
			// a full one, not a conditional one answered 304.
			view.etag = ""
		}
	}
	return nil
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
	var paths []fswalk.Entry
	var manifests []string
	err = fswalk.Walk(ctx, c.fs, c.teamDir, func(e fswalk.Entry) error {
		if path.Base(e.Rel) == memdir.StoreManifestName && !e.Type.IsDir() {
			manifests = append(manifests, path.Dir(e.Rel))
		}
		if e.Type.IsRegular() {
			paths = append(paths, e)
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

// batches packs files, sorted by key, greedily into groups whose PUT body
// stays within limit bytes: 14 bytes of envelope plus, per entry, its
// JSON-encoded key and value and 2. An entry that alone exceeds the limit
// travels in a batch of its own.
func batches(files []localFile, limit int) [][]localFile {
	const envelope = len(`{"entries":{}}`)
	var out [][]localFile
	var cur []localFile
	size := envelope
	for _, f := range files {
		cost := jsonLen(f.key) + jsonLen(f.content) + 2
		if len(cur) > 0 && size+cost > limit {
			out = append(out, cur)
			cur, size = nil, envelope
		}
		cur = append(cur, f)
		size += cost
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// sendOnce performs one request, without retries, with its own timeout
// (a long-poll outlasts the client's usual one when the HTTP client is
// the default).
func (c *Client) sendOnce(ctx context.Context, res *Result, method, u string, headers map[string]string, timeout time.Duration) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	req.Header.Set("Accept", "application/json")
	c.provenance(req)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res.Requests++
	doer := c.cfg.HTTP
	if hc, ok := doer.(*http.Client); ok && hc == c.defaultHTTP {
		doer = &http.Client{Transport: hc.Transport} // the context bounds it
	}
	resp, err := doer.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if why := tlsProblem(err); why != "" {
			return nil, nil, &SyncError{Class: ClassTLS, Attempts: 1, Err: errors.New(why)}
		}
		return nil, nil, &SyncError{Class: ClassNetwork, Attempts: 1, Err: errors.New("the server could not be reached")}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, &SyncError{Class: ClassNetwork, Attempts: 1, Err: errors.New("the reply was cut off")}
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300, resp.StatusCode == http.StatusNotModified, resp.StatusCode == http.StatusNotFound:
		return resp, body, nil
	}
	return nil, nil, c.statusError(resp, body, 1)
}

// send performs one request with retries and returns the response (body
// read) when its status is one the caller handles: 2xx, 304 and, for GET,
// 404. Other statuses become a *SyncError.
func (c *Client) send(ctx context.Context, res *Result, method, u string, body []byte, headers map[string]string) (*http.Response, []byte, error) {
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		req.Header.Set("Accept", "application/json")
		c.provenance(req)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res.Requests++
		res.BytesSent += int64(len(body))
		resp, err := c.cfg.HTTP.Do(req)
		var respBody []byte
		if err == nil {
			respBody, err = io.ReadAll(io.LimitReader(resp.Body, c.replyCap.Load()))
			resp.Body.Close()
		}
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, nil, ctxErr
			}
			if why := tlsProblem(err); why != "" {
				return nil, nil, &SyncError{Class: ClassTLS, Attempts: attempt, Err: errors.New(why)}
			}
			class := ClassNetwork
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				class = ClassTimeout
			}
			if attempt > c.cfg.MaxRetries {
				return nil, nil, &SyncError{Class: class, Attempts: attempt, Err: errors.New("the server could not be reached")}
			}
			if err := c.cfg.Sleep(ctx, c.backoff(attempt, "")); err != nil {
				return nil, nil, err
			}
			continue
		}
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300, resp.StatusCode == http.StatusNotModified,
			resp.StatusCode == http.StatusNotFound && method == http.MethodGet:
			return resp, respBody, nil
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			if attempt > c.cfg.MaxRetries {
				return nil, nil, c.statusError(resp, respBody, attempt)
			}
			if err := c.cfg.Sleep(ctx, c.backoff(attempt, resp.Header.Get("Retry-After"))); err != nil {
				return nil, nil, err
			}
			continue
		}
		return nil, nil, c.statusError(resp, respBody, attempt)
	}
}

// provenance sets the provenance headers of a request.
func (c *Client) provenance(req *http.Request) {
	req.Header.Set(wire.DoorHeader, c.cfg.Door)
	if c.cfg.Session != "" {
		req.Header.Set(wire.SessionHeader, c.cfg.Session)
	}
	if c.cfg.Origin != "" {
		req.Header.Set(wire.OriginHeader, c.cfg.Origin)
	}
}

// tlsProblem says what is wrong with the server's certificate when err is
// a TLS failure, and "" otherwise.
func tlsProblem(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "the server's TLS certificate is signed by an authority this machine does not trust (add the CA to the system's trust store, or point SSL_CERT_FILE at its PEM file)"
	case errors.As(err, &host):
		return "the server's TLS certificate is not valid for " + host.Host + " (use the name the certificate was issued for)"
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "the server's TLS certificate has expired or is not valid yet (check the server's certificate and this machine's clock)"
		}
		return "the server's TLS certificate is not valid: " + invalid.Error()
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the server did not answer in TLS (is it served over http:// rather than https://?)"
	case errors.As(err, &verify):
		return "the server's TLS certificate could not be verified: " + verify.Err.Error()
	}
	return ""
}

// backoff is min(base*2^(n-1), max) plus up to 25 % jitter, or the
// server's Retry-After when it gives one.
func (c *Client) backoff(attempt int, retryAfter string) time.Duration {
	if retryAfter != "" {
		if secs, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && secs >= 0 {
			return min(time.Duration(secs)*time.Second, c.cfg.MaxDelay)
		}
		if t, err := http.ParseTime(retryAfter); err == nil {
			return min(max(time.Until(t), 0), c.cfg.MaxDelay)
		}
	}
	d := c.cfg.BaseDelay << (attempt - 1)
	if d > c.cfg.MaxDelay || d <= 0 {
		d = c.cfg.MaxDelay
	}
	return d + time.Duration(float64(d)*0.25*c.cfg.Jitter())
}

func (c *Client) statusError(resp *http.Response, body []byte, attempts int) error {
	var eb wire.ErrorBody
	_ = json.Unmarshal(body, &eb)
	e := &SyncError{Status: resp.StatusCode, Code: eb.Error.Details.ErrorCode, Attempts: attempts}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		e.Class = ClassAuth
	case resp.StatusCode == http.StatusForbidden && e.Code == wire.CodeReadOnly:
		// Not the token's fault: the repo's review policy refuses writes.
		e.Class = ClassUnknown
		e.Err = fmt.Errorf("repo %s is read-only (its review policy): nothing was written; a person can change it with agentmem team policy", c.cfg.Repo)
	case resp.StatusCode == http.StatusForbidden:
		e.Class = ClassForbidden
		e.Err = fmt.Errorf("the token may not use repo %s: ask for a token whose grant names it (agentmem team token --repo)", c.cfg.Repo)
	case resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte("HTTP request to an HTTPS server")):
		e.Err = errors.New("the server speaks HTTPS: use an https:// URL")
	case resp.StatusCode == http.StatusPreconditionFailed:
		e.Class = ClassConflict
	case resp.StatusCode == http.StatusRequestEntityTooLarge && e.Code == wire.CodeTooManyEntries:
		e.Class = ClassTooManyEntries
		e.MaxEntries = eb.Error.Details.MaxEntries
		e.Err = fmt.Errorf("the server holds at most %d entries for this repo", eb.Error.Details.MaxEntries)
	default:
		e.Class = ClassUnknown
	}
	if e.Class == "" {
		e.Class = ClassUnknown
	}
	if e.Err == nil && eb.Error.Message != "" {
		e.Err = errors.New(printable(eb.Error.Message, 300)) // the server's own words
	}
	return e
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// gateSkip turns a refused or failed pull write into a Skip: a path that
// a link swapped in after validation would have led out ("invalid_key"),
// a secret ("secret"), or a filesystem failure for this one key
// ("write_failed"). Errors that are not about the key (a cancelled
// context) are not skips.
func gateSkip(key string, err error) (Skip, bool) {
	var pte *PathTraversalError
	var se *secrets.Error
	var he *memdir.HistoryError
	switch {
	case errors.As(err, &he):
		return Skip{Key: key, Reason: "checkpoint_failed"}, true
	case errors.As(err, &pte):
		return Skip{Key: key, Reason: "invalid_key"}, true
	case errors.As(err, &se):
		return Skip{Key: key, Reason: "secret", RuleID: se.RuleID, Label: se.Label}, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Skip{}, false
	}
	return Skip{Key: key, Reason: "write_failed"}, true
}

// learnLimits asks the server for its limits (once, when a reply first
// reaches the cap) and sizes the cap so that any repo the server accepts
// can be pulled: every entry at its largest, JSON-escaped, with its
// checksum. It reports whether the cap grew; a server without the limits
// view leaves defaultReplyCap.
func (c *Client) learnLimits(ctx context.Context, res *Result) bool {
	before := c.replyCap.Load()
	c.limitsOnce.Do(func() {
		resp, body, err := c.sendOnce(ctx, res, http.MethodGet, c.endpoint+"&view=limits", nil, defaultTimeout)
		if err != nil || resp.StatusCode != http.StatusOK {
			return
		}
		var lv wire.LimitsView
		if json.Unmarshal(body, &lv) != nil || lv.MaxRepoBytes <= 0 {
			return
		}
		need := 2*lv.MaxRepoBytes + int64(lv.MaxEntries)*256 + 1<<20
		c.replyCap.Store(max(need, c.cfg.MaxReplyBytes))
	})
	return c.replyCap.Load() > before
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
