package storesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// MaxContentBytes is the largest file a store takes; larger ones are
// skipped.
const MaxContentBytes = 102_400

// ConflictsDirName is the folder, inside the mount, where the local side
// of a conflict is kept (a dot folder: never synced).
const ConflictsDirName = ".memory-sync-conflicts"

// Options configures a Client. BaseURL, Token and Mount are required.
type Options struct {
	// BaseURL is the store host: agentmem's server or Anthropic's API.
	BaseURL string
	// Token is the bearer token (for a /v1/code/memory path) or the API
	// key (for a /v1/memory_stores path).
	Token string
	Mount Mount
	// HTTP is the client (default: 30 s timeout).
	HTTP *http.Client
	// DeleteMode is foldersync.DeleteCorroborate (default),
	// DeleteImmediate or DeleteNever.
	DeleteMode string
	// AllowMassDelete lets a round delete more than max(50, 10 %) of the
	// tracked memories on one side.
	AllowMassDelete bool
	// Retries is how often a network error, a timeout, a 429 or a 5xx
	// other than 507 is sent again, honouring Retry-After (default 3;
	// negative: none).
	Retries int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Door, Session and Origin say how this client's writes reach the
	// store (teamwire.DoorHeader, SessionHeader, OriginHeader): agentmem's
	// server records them on every version. Door defaults to
	// teamwire.DoorSync; Session and Origin are sent when set.
	Door, Session, Origin string
	// History, when set, makes every round that writes or deletes a file
	// of the folder undoable: a checkpoint (Result.Checkpoint, named
	// CheckpointPrefix and the time) is taken before its first such
	// write. Without it a pulled version replaces the file for good.
	History foldersync.History
}

// CheckpointPrefix starts the name of the checkpoint a round takes
// (Options.History).
const CheckpointPrefix = "store-sync"

// Client syncs one mount folder with its store: the sync engine
// (package foldersync) through the Memory Stores driver (Remote), with
// Claude Code's manifests kept beside it.
type Client struct {
	fs     afero.Fs
	dir    string
	cfg    Options
	conn   *conn
	gate   *memdir.WriteGate
	remote *Remote
	engine *foldersync.Engine
	// rounds makes Sync's rounds and the watcher's one at a time, each
	// with its authors (round).
	rounds sync.Mutex
	// authorsDue: the authors file may lag the folder (a new client, or
	// lookups left for a later round), so the next round brings it up to
	// date even when it changes nothing.
	authorsDue bool
	// deepAuthors are memories whose newest version a round's listing of
	// versions did not reach: later rounds look them up one by one
	// instead of listing the same pages again (learnAuthors).
	deepAuthors map[string]bool
	// agreed and agreedStore are what the mirror last saved (nil before
	// any save by this client): the authors file follows them without
	// reading the basis back from disk.
	agreed      *basis
	agreedStore string
}

// New returns a client for the mount folder d: the view of the memory
// directory on Mount.Dir (memdir.Dir.Sub), or a folder on its own
// (memdir.NewDir). Every pull writes through it, with its scanner, synced
// flag and lock; pushed content is checked with its scanner.
func New(d *memdir.Dir, cfg Options) (*Client, error) {
	if d == nil {
		return nil, errors.New("storesync: a client needs the mount folder (a memdir.Dir)")
	}
	fsys, dir := d.FS(), d.Path()
	cn, err := newConn(&cfg)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	c := &Client{authorsDue: true, fs: fsys, dir: dir, cfg: cfg, gate: d.Gate(), conn: cn, remote: &Remote{conn: cn, ids: map[string]string{}}}
	c.engine, err = foldersync.New(d, dir, c.remote, foldersync.Options{
		Include:          cfg.Mount.syncable,
		BasisPath:        filepath.Join(dir, engineBasisName),
		ConflictsDir:     filepath.Join(dir, ConflictsDirName),
		DeleteMode:       cfg.DeleteMode,
		AllowMassDelete:  cfg.AllowMassDelete,
		ReadOnly:         cfg.Mount.ReadOnly(),
		MaxBytes:         MaxContentBytes,
		Now:              cfg.Now,
		Prepare:          c.prepare,
		Mirror:           claudeBasis{c},
		History:          cfg.History,
		CheckpointPrefix: CheckpointPrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("storesync: %w", err)
	}
	return c, nil
}

// engineBasisName is the engine's basis in the mount folder (a dot file:
// never synced); Claude Code's ".memory-sync-basis" is kept in step
// with it.
const engineBasisName = ".agentmem-sync-basis"

// newConn checks cfg, fills in its defaults and returns the connection
// to its store.
func newConn(cfg *Options) (*conn, error) {
	if cfg.BaseURL == "" || cfg.Token == "" {
		return nil, errors.New("storesync: a client needs the store's base URL and a token")
	}
	if err := cfg.Mount.fill(); err != nil {
		return nil, fmt.Errorf("storesync: %w", err)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("storesync: the base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	switch cfg.DeleteMode {
	case "":
		cfg.DeleteMode = foldersync.DeleteCorroborate
	case foldersync.DeleteCorroborate, foldersync.DeleteImmediate, foldersync.DeleteNever:
	default:
		return nil, fmt.Errorf("storesync: delete mode %q is not corroborate, immediate or never", cfg.DeleteMode)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Door == "" {
		cfg.Door = teamwire.DoorSync
	}
	prov, err := teamwire.ParseProvenance(cfg.Door, cfg.Session, cfg.Origin)
	if err != nil {
		return nil, fmt.Errorf("storesync: Options: %w", err)
	}
	prov.Door = cfg.Door
	base := strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/")
	return &conn{http: cfg.HTTP, base: base, path: cfg.Mount.Path, token: cfg.Token,
		public: strings.HasPrefix(cfg.Mount.Path, "/v1/memory_stores/"), retries: cfg.Retries, prov: prov}, nil
}

// Dir is the mount folder.
func (c *Client) Dir() string { return c.dir }

// Remote is the driver the client's engine syncs through.
func (c *Client) Remote() *Remote { return c.remote }

// Sync runs one round: list the store, walk the folder, reconcile them
// against the basis (foldersync's rules), and record the new basis as it
// goes. Rounds of one Client run one at a time. A failed listing changes
// nothing; a failed push or pull leaves that file for the next round.
// The result gives store paths ("/deploy.md") and names the store's
// side of a hold "store".
func (c *Client) Sync(ctx context.Context) (foldersync.Result, error) {
	res, err := c.round(ctx)
	return fromEngine(res), err
}

// round is one engine round, then who wrote each memory, for the prompt
// (best effort): Sync's work, and the watcher's, in the engine's paths.
func (c *Client) round(ctx context.Context) (foldersync.Result, error) {
	c.rounds.Lock()
	defer c.rounds.Unlock()
	res, err := c.engine.Round(ctx)
	if err == nil && (res.Changed() || c.authorsDue) {
		b, store := c.agreed, c.agreedStore
		if b == nil { // nothing saved by this client yet: what the folder's files say
			read := readBasis(c.fs, c.dir, c.cfg.Mount.Path)
			b = &read
		}
		if store == "" { // the last save named no store: the identity file may
			store = readIdentity(c.fs, c.dir).StoreID
		}
		c.authorsDue = !c.saveAuthors(ctx, *b, store)
	}
	return res, err
}

// prepare refuses a folder that belongs to another store, and writes the
// manifest naming this one.
func (c *Client) prepare(ctx context.Context) error {
	user := c.cfg.Mount.Scope == "user"
	if err := checkMountDir(c.fs, c.dir, c.cfg.Mount.Path, user); err != nil {
		return err
	}
	want := marshalManifest(c.cfg.Mount.Path)
	if raw, err := afero.ReadFile(c.fs, filepath.Join(c.dir, manifestName)); err == nil && string(raw) == string(want) {
		return nil
	}
	if err := c.fs.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	_, err := c.gate.WriteFile(ctx, filepath.Join(c.dir, manifestName), want, 0o644)
	return err
}

// fromEngine gives a round's result in the store's terms: store paths
// ("/deploy.md"), and the store's side of a hold named "store".
func fromEngine(r foldersync.Result) foldersync.Result {
	paths := func(ps []string) []string {
		for i, p := range ps {
			ps[i] = "/" + p
		}
		return ps
	}
	paths(r.Pulled)
	paths(r.Pushed)
	paths(r.DeletedLocal)
	paths(r.DeletedRemote)
	paths(r.Pending)
	paths(r.InReview)
	for i := range r.Conflicts {
		r.Conflicts[i].Path = "/" + r.Conflicts[i].Path
	}
	for i, s := range r.Skipped {
		r.Skipped[i].Path = "/" + s.Path
		if rest, ok := strings.CutPrefix(s.Reason, foldersync.SkipPathClash+": "); ok {
			// The path in the way, as a store path.
			if other, tail, found := strings.Cut(rest, " is in the way"); found && other != "" && !strings.Contains(other, " ") && !strings.HasPrefix(other, "/") {
				r.Skipped[i].Reason = foldersync.SkipPathClash + ": /" + other + " is in the way" + tail
			}
		}
	}
	for i := range r.Held {
		if r.Held[i].Side == "remote" {
			r.Held[i].Side = "store"
		}
		paths(r.Held[i].Paths)
	}
	return r
}

// claudeBasis keeps Claude Code's ".memory-sync-basis" (and agentmem's
// ".memory-sync-store": the store's ID and generation) in step with the
// engine's basis, and seeds a folder synced before the engine from them.
type claudeBasis struct{ c *Client }

func (m claudeBasis) Seed() (foldersync.Agreed, bool) {
	c := m.c
	b := readBasis(c.fs, c.dir, c.cfg.Mount.Path)
	id := readIdentity(c.fs, c.dir)
	if len(b.Entries) == 0 && id.StoreID == "" {
		return foldersync.Agreed{}, false
	}
	a := foldersync.Agreed{Store: id.StoreID, Entries: map[string]foldersync.Entry{}, Pending: map[string]foldersync.PendingDelete{}}
	if id.Generation != nil {
		a.Generation = *id.Generation
	}
	for p, e := range b.Entries {
		a.Entries[strings.TrimPrefix(p, "/")] = foldersync.Entry{Sum: e.SHA256, Ref: e.ID}
	}
	for p, d := range b.Deletes {
		a.Pending[strings.TrimPrefix(p, "/")] = foldersync.PendingDelete{FirstMissed: time.UnixMilli(d.FirstMissedMS), Walks: d.Walks}
	}
	return a, true
}

func (m claudeBasis) Save(ctx context.Context, a foldersync.Agreed) error {
	c := m.c
	b := basis{Partition: c.cfg.Mount.Path, Entries: map[string]basisEntry{}, Deletes: map[string]pendingDelete{}, Held: map[string]string{}}
	for p, e := range a.Entries {
		b.Entries["/"+p] = basisEntry{ID: e.Ref, SHA256: e.Sum}
	}
	for p, d := range a.Pending {
		b.Deletes["/"+p] = pendingDelete{FirstMissedMS: d.FirstMissed.UnixMilli(), Walks: d.Walks}
	}
	if _, err := c.gate.WriteFile(ctx, filepath.Join(c.dir, basisName), b.marshal(), 0o644); err != nil {
		return err
	}
	c.agreed, c.agreedStore = &b, a.Store
	if a.Store == "" && a.Generation == 0 {
		return nil
	}
	g := a.Generation
	raw, _ := json.Marshal(identity{V: 1, StoreID: a.Store, Generation: &g})
	_, err := c.gate.WriteFile(ctx, filepath.Join(c.dir, identityName), raw, 0o644)
	return err
}

// identityName is agentmem's own file beside the manifests: the store ID
// and generation the last round saw, where the server names them (a dot
// file: neither agentmem nor Claude Code syncs it).
const identityName = ".memory-sync-store"

type identity struct {
	V          int    `json:"v"`
	StoreID    string `json:"store_id,omitempty"`
	Generation *int64 `json:"generation,omitempty"`
}

func readIdentity(fsys afero.Fs, dir string) identity {
	var id identity
	raw, err := afero.ReadFile(fsys, filepath.Join(dir, identityName))
	if err == nil {
		_ = json.Unmarshal(raw, &id)
	}
	return id
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
