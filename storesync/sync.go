package storesync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/screen"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/agentmem-sdk/agentmem/teammem/wire"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// Delete modes: what a file missing from the folder does to the store.
const (
	// DeleteCorroborate deletes from the store once the file has been
	// missing on two walks at least 30 s apart (Claude Code's default).
	DeleteCorroborate = "corroborate"
	// DeleteImmediate deletes on the first walk that misses the file.
	DeleteImmediate = "immediate"
	// DeleteNever never deletes from the store.
	DeleteNever = "never"
)

// MaxContentBytes is the largest file a store takes; larger ones are
// skipped.
const MaxContentBytes = 102_400

// corroborateAge is how long a file must have been missing, over two
// walks at least, before corroborate mode deletes it from the store.
const corroborateAge = 30 * time.Second

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
	// DeleteMode is DeleteCorroborate (default), DeleteImmediate or
	// DeleteNever.
	DeleteMode string
	// AllowMassDelete lets a round delete more than max(50, 10 %) of the
	// tracked memories on one side.
	AllowMassDelete bool
	// Retries is how often a network error, a 429 or a 5xx is retried,
	// honouring Retry-After (default 3; negative: none).
	Retries int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Door, Session and Origin say how this client's writes reach the
	// store (wire.DoorHeader, SessionHeader, OriginHeader): agentmem's
	// server records them on every version. Door defaults to
	// wire.DoorSync; Session and Origin are sent when set.
	Door, Session, Origin string
}

// Client syncs one mount folder with its store.
type Client struct {
	round sync.Mutex // one round at a time
	fs    afero.Fs
	dir   string
	cfg   Options
	conn  *conn
	gate  *memdir.WriteGate
	mount *memdir.Dir // the mount folder: how its files were written
	// scanner checks pushed content: the folder's.
	scanner *secrets.Scanner
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
		cfg.DeleteMode = DeleteCorroborate
	case DeleteCorroborate, DeleteImmediate, DeleteNever:
	default:
		return nil, fmt.Errorf("storesync: delete mode %q is not corroborate, immediate or never", cfg.DeleteMode)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Door == "" {
		cfg.Door = wire.DoorSync
	}
	prov, err := wire.ParseProvenance(cfg.Door, cfg.Session, cfg.Origin)
	if err != nil {
		return nil, fmt.Errorf("storesync: Options: %w", err)
	}
	prov.Door = cfg.Door
	dir = filepath.Clean(dir)
	gate := d.Gate()
	base := strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/")
	return &Client{fs: fsys, dir: dir, cfg: cfg, gate: gate, mount: d, scanner: d.Scanner(),
		conn: &conn{http: cfg.HTTP, base: base, path: cfg.Mount.Path, token: cfg.Token,
			public: strings.HasPrefix(cfg.Mount.Path, "/v1/memory_stores/"), retries: cfg.Retries, prov: prov}}, nil
}

// Dir is the mount folder.
func (c *Client) Dir() string { return c.dir }

// Conflict is a memory both sides changed differently: the store's
// version took the file, and the local one was kept at SavedAs. After a
// BasisReset it is the other way round (LocalKept): the local file was
// pushed and the store's older version kept at SavedAs.
type Conflict struct {
	Path      string
	SavedAs   string
	LocalKept bool
}

// Skip is a file a round left alone, and why: "secret", "oversized",
// "read-only", "changed-during-sync", "refused: <the store's message>",
// or one of the refusals below (Refused reports those).
type Skip struct {
	Path   string
	Reason string
}

// Reasons a file is refused and left exactly as it is, on both sides: its
// bytes or its name cannot travel exactly, or its path cannot exist on a
// disk beside another memory's.
const (
	// SkipNotUTF8: the file's bytes are not valid UTF-8 (JSON would carry
	// other bytes).
	SkipNotUTF8 = "not-utf8: the file is not valid UTF-8 text, which the store protocol cannot carry exactly"
	// SkipNULByte: the file holds a NUL byte, which not every store keeps.
	SkipNULByte = "nul-byte: the file holds a NUL byte, which not every store can keep"
	// SkipBadName: the file's name is not valid UTF-8 in NFC form, or
	// holds a control or format character.
	SkipBadName = "bad-name: the name is not NFC UTF-8 or holds a control character; rename the file"
	// SkipPathClash starts the reason of a path that is a folder of
	// another memory's path, or lies below one ("/a.md" beside
	// "/a.md/b.md"): both cannot be files on a disk. The other path
	// follows the colon.
	SkipPathClash = "path-clash"
	// SkipScreened starts the reason of a file a screen every server
	// applies refuses (an invisible character, a high-confidence
	// injection, a foreign link in MEMORY.md; package screen). What to
	// fix follows the colon.
	SkipScreened = "screened"
	// SkipRejected starts the reason of a file whose very change a person
	// reviewing the store already rejected; the reason given follows the
	// colon. The file is left as it is.
	SkipRejected = "rejected-in-review"
)

// Refused reports whether the skip is one of the refusals that leave the
// file as it is until someone renames or fixes it (SkipNotUTF8,
// SkipNULByte, SkipBadName, SkipPathClash, SkipScreened).
func (s Skip) Refused() bool {
	return s.Reason == SkipNotUTF8 || s.Reason == SkipNULByte || s.Reason == SkipBadName || strings.HasPrefix(s.Reason, SkipPathClash) || strings.HasPrefix(s.Reason, SkipScreened)
}

// MassDeleteHold reports deletions held back on one side ("local" or
// "store"): more than max(50, 10 %) of the tracked memories at once.
// They stay tracked and are held again next round until confirmed
// (Options.AllowMassDelete) or the files come back.
type MassDeleteHold struct {
	Side      string
	Paths     []string
	Tracked   int
	Threshold int
}

// massDeleteThreshold is the most deletions one round makes on one side
// without confirmation: max(50, 10 % of the tracked memories).
func massDeleteThreshold(tracked int) int { return max(50, tracked/10) }

// Result says what a round did. Paths are store paths ("/deploy.md").
type Result struct {
	Pulled, Pushed               []string
	DeletedLocal, DeletedInStore []string
	Conflicts                    []Conflict
	Skipped                      []Skip
	// Pending are local deletions waiting for corroboration.
	Pending []string
	// InReview are the paths whose write or deletion the store kept for
	// a person's review (its policy is "review" and the token is an
	// agent's): not yet in the store, served to nobody else. The local
	// files stay as they are and no round deletes them while they wait;
	// each round sends them again (the server keeps one proposal) and
	// reports them here until they are approved or rejected.
	InReview []string
	Held     []MassDeleteHold
	// BasisReset reports that the store did not know what this folder
	// last agreed with it (a replaced store, or one restored from a
	// backup): the round deleted nothing on either side and pushed what
	// the store lacked.
	BasisReset bool
}

// Changed reports whether the round changed anything on either side.
func (r Result) Changed() bool {
	return len(r.Pulled)+len(r.Pushed)+len(r.DeletedLocal)+len(r.DeletedInStore)+len(r.Conflicts) > 0
}

var errLocalChanged = errors.New("storesync: the file changed during the sync")

// Sync runs one round: list the store, walk the folder, reconcile them
// against the basis, then record the new basis. Rounds of one Client run
// one at a time. A failed listing changes
// nothing; a failed push or pull leaves that file for the next round.
func (c *Client) Sync(ctx context.Context) (Result, error) {
	c.round.Lock()
	defer c.round.Unlock()
	var res Result
	user := c.cfg.Mount.Scope == "user"
	if err := checkMountDir(c.fs, c.dir, c.cfg.Mount.Path, user); err != nil {
		return res, err
	}
	remote, head, err := c.conn.list(ctx)
	if err != nil {
		return res, err
	}
	basis := readBasis(c.fs, c.dir, c.cfg.Mount.Path)
	local, untouchable, walkOK, err := c.walk(ctx, &res)
	if err != nil {
		return res, err
	}
	// The store's paths that this folder never syncs (dot names, a user
	// store's team/ and logs/, other extensions) are left alone: a server
	// cannot write the manifests or reach outside the synced files.
	for p := range remote {
		if !c.cfg.Mount.syncable(strings.TrimPrefix(p, "/")) {
			delete(remote, p)
		}
	}
	// A store is taken as replaced or restored on its own word only: its
	// ID changed, or its generation went back. A memory deleted and made
	// again (a new ID at a known path) is a delete and a create. Only a
	// store that names neither is judged by the basis.
	seen := readIdentity(c.fs, c.dir)
	trusted := seen.sameStore(head)
	if seen.StoreID == "" || head.ID == "" {
		trusted = trusted && c.basisTrusted(basis, remote)
	}
	if !trusted {
		res.BasisReset = true
		basis.Entries = map[string]basisEntry{}
		basis.Deletes = map[string]pendingDelete{}
	}
	now := c.cfg.Now()
	paths := map[string]bool{}
	for p := range local {
		paths[p] = true
	}
	for p := range remote {
		paths[p] = true
	}
	for p := range basis.Entries {
		paths[p] = true
	}
	// Decide first, so the deletions of each side can be counted against
	// the mass-delete threshold before any happens.
	type step struct {
		path string
		act  action
	}
	var steps []step
	var storeDeletes, localDeletes []string
	// Two paths of which one is a folder of the other cannot both be
	// files here: each one this folder does not already hold as a file is
	// left alone and reported; the rest of the round goes on.
	for p, other := range folderClashes(paths, local) {
		untouchable[p] = true
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipPathClash + ": " + other + " is in the way"})
	}
	for _, p := range sortedKeys(paths) {
		if untouchable[p] {
			continue // there, but not synced this round
		}
		a := decide(basis.Entries[p], hasEntry(basis, p), local[p], remote[p])
		switch a {
		case deleteInStore:
			if !walkOK || c.cfg.Mount.ReadOnly() {
				a = keep
			} else if !c.corroborated(&basis, p, now, &res) {
				a = keep
			} else {
				storeDeletes = append(storeDeletes, p)
			}
		case deleteLocal:
			localDeletes = append(localDeletes, p)
		}
		steps = append(steps, step{p, a})
	}
	tracked := len(basis.Entries)
	holdStore := c.hold(&res, "store", storeDeletes, tracked)
	holdLocal := c.hold(&res, "local", localDeletes, tracked)
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		a := s.act
		if (a == deleteInStore && holdStore) || (a == deleteLocal && holdLocal) {
			continue
		}
		if c.cfg.Mount.ReadOnly() && (a == push || a == deleteInStore) {
			res.Skipped = append(res.Skipped, Skip{Path: s.path, Reason: "read-only"})
			continue
		}
		if err := c.apply(ctx, a, s.path, local[s.path], remote[s.path], &basis, &res); err != nil {
			return res, err
		}
	}
	for p := range basis.Deletes {
		if _, ok := basis.Entries[p]; !ok {
			delete(basis.Deletes, p)
		}
	}
	if err := c.saveBasis(ctx, basis); err != nil {
		return res, err
	}
	c.saveAuthors(ctx, basis, head.ID) // who wrote each memory, for the prompt
	// The store's generation moved on by one for each write of ours, so it
	// is at least this now; a store found below it later went back.
	if head.Generation != nil {
		g := *head.Generation + int64(len(res.Pushed)+len(res.DeletedInStore))
		head.Generation = &g
	}
	return res, c.saveIdentity(ctx, head)
}

// localFile is one synced file of the folder.
type localFile struct {
	abs     string
	content string
	sha     string
}

// walk reads the folder's synced files by store path. untouchable holds
// the paths of files that are there but not synced this round (too large,
// not a regular file, unreadable): they count as present, so nothing is
// deleted for them. ok is false when a folder could not be read: that
// round deletes nothing in the store.
func (c *Client) walk(ctx context.Context, res *Result) (files map[string]*localFile, untouchable map[string]bool, ok bool, err error) {
	files, untouchable, ok = map[string]*localFile{}, map[string]bool{}, true
	err = fswalk.Walk(ctx, c.fs, c.dir, func(e fswalk.Entry) error {
		if e.Type.IsDir() || !c.cfg.Mount.syncable(e.Rel) {
			return nil
		}
		p := "/" + e.Rel
		if !e.Type.IsRegular() {
			untouchable[p] = true
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: "not a regular file"})
			return nil
		}
		info, err := c.fs.Stat(e.Abs)
		if err != nil {
			untouchable[p], ok = true, false
			return nil
		}
		if info.Size() > MaxContentBytes {
			untouchable[p] = true
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: "oversized"})
			return nil
		}
		if synctext.CheckName(p) != nil || !norm.NFC.IsNormalString(p) {
			untouchable[p] = true
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipBadName})
			return nil
		}
		raw, err := afero.ReadFile(c.fs, e.Abs)
		if err != nil {
			untouchable[p], ok = true, false
			return nil
		}
		var te *synctext.Error
		if errors.As(synctext.CheckContent(raw), &te) {
			// JSON would carry other bytes than the file's: never pushed,
			// and never overwritten by a pull.
			reason := SkipNotUTF8
			if te.Reason == synctext.ReasonNUL {
				reason = SkipNULByte
			}
			untouchable[p] = true
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: reason})
			return nil
		}
		if err := screen.CheckShared(p, string(raw)); err != nil {
			// Every server refuses it: never pushed, never overwritten.
			untouchable[p] = true
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipScreened + ": " + err.Error()})
			return nil
		}
		files[p] = &localFile{abs: e.Abs, content: string(raw), sha: sha256Hex(string(raw))}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return files, untouchable, true, nil
	}
	return files, untouchable, ok, err
}

// basisTrusted reports, for a store that does not name its identity,
// whether it is the one the basis was made with: it still has one memory
// of the basis at least, at its path with its ID (a store that has none
// of them is taken as replaced: nothing is deleted here, and the files
// are pushed back). A path whose memory has another ID than the basis
// recorded was deleted and made again, and proves nothing.
func (c *Client) basisTrusted(b basis, remote map[string]remoteMemory) bool {
	if len(b.Entries) == 0 {
		return true
	}
	for p, e := range b.Entries {
		if r, ok := remote[p]; ok && r.ID == e.ID {
			return true
		}
	}
	return false
}

// folderClashes finds the paths that cannot be files beside another path
// of the set, one being a folder of the other ("/a.md" and "/a.md/b.md"),
// mapped to a path in their way. A path the folder holds as a file stays
// (the other is the one that cannot be written here); of two that are
// only in the store, both are left alone.
func folderClashes(paths map[string]bool, local map[string]*localFile) map[string]string {
	out := map[string]string{}
	for p := range paths {
		for i := len(p) - 1; i > 0; i-- {
			if p[i] != '/' || !paths[p[:i]] {
				continue
			}
			folder := p[:i] // a path of the set that p needs as a folder
			_, fileHere := local[folder]
			_, belowHere := local[p]
			if !belowHere {
				out[p] = folder
			}
			if !fileHere {
				out[folder] = p
			}
		}
	}
	return out
}

func hasEntry(b basis, p string) bool { _, ok := b.Entries[p]; return ok }

// action is what a round does for one path.
type action int

const (
	keep action = iota
	agree
	push
	pull
	conflict
	deleteInStore
	deleteLocal
	forget
)

// decide applies the three-way rules to one path.
func decide(b basisEntry, inBasis bool, l *localFile, r remoteMemory) action {
	hasR := r.ID != ""
	switch {
	case l != nil && hasR && l.sha == r.SHA256:
		return agree
	case l == nil && !hasR:
		return forget
	case !inBasis:
		switch {
		case l != nil && !hasR:
			return push
		case l == nil:
			return pull
		default:
			return conflict
		}
	}
	lChanged := l == nil || l.sha != b.SHA256
	rChanged := !hasR || r.SHA256 != b.SHA256 || r.ID != b.ID
	switch {
	case lChanged && !rChanged:
		if l == nil {
			return deleteInStore
		}
		return push
	case rChanged && !lChanged:
		if !hasR {
			return deleteLocal
		}
		return pull
	case l == nil: // deleted here, edited there: the edit wins
		return pull
	case !hasR: // edited here, deleted there: the edit wins
		return push
	default:
		return conflict
	}
}

// corroborated records a local deletion and reports whether the delete
// mode lets it reach the store now.
func (c *Client) corroborated(b *basis, p string, now time.Time, res *Result) bool {
	switch c.cfg.DeleteMode {
	case DeleteImmediate:
		return true
	case DeleteNever:
		return false
	}
	d, ok := b.Deletes[p]
	if !ok {
		d = pendingDelete{FirstMissedMS: now.UnixMilli()}
	}
	d.Walks++
	b.Deletes[p] = d
	if d.Walks >= 2 && now.Sub(time.UnixMilli(d.FirstMissedMS)) >= corroborateAge {
		return true
	}
	res.Pending = append(res.Pending, p)
	return false
}

// hold reports whether one side's deletions are held.
func (c *Client) hold(res *Result, side string, paths []string, tracked int) bool {
	limit := massDeleteThreshold(tracked)
	if len(paths) <= limit || c.cfg.AllowMassDelete {
		return false
	}
	res.Held = append(res.Held, MassDeleteHold{Side: side, Paths: paths, Tracked: tracked, Threshold: limit})
	return true
}

// apply carries out one decision.
func (c *Client) apply(ctx context.Context, a action, p string, l *localFile, r remoteMemory, b *basis, res *Result) error {
	switch a {
	case agree:
		b.Entries[p] = basisEntry{ID: r.ID, SHA256: r.SHA256}
		delete(b.Deletes, p)
	case forget:
		delete(b.Entries, p)
	case push:
		return c.push(ctx, p, l, r, b, res)
	case conflict:
		if res.BasisReset {
			return c.pushOver(ctx, p, l, r, b, res)
		}
		return c.pull(ctx, p, l, r, true, b, res)
	case pull:
		return c.pull(ctx, p, l, r, false, b, res)
	case deleteInStore:
		entry := b.Entries[p]
		err := c.conn.remove(ctx, r.ID, entry.SHA256)
		if errors.Is(err, errInReview) {
			res.InReview = append(res.InReview, p)
			return nil // still in the store: the basis keeps it
		}
		var rej *rejectedError
		if errors.As(err, &rej) {
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipRejected + ": " + rej.reason})
			return nil
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusConflict) {
			return nil // gone already, or changed there: the next round sees it
		}
		if err != nil {
			return err
		}
		delete(b.Entries, p)
		delete(b.Deletes, p)
		res.DeletedInStore = append(res.DeletedInStore, p)
	case deleteLocal:
		entry := b.Entries[p]
		_, err := c.gate.UpdateFile(ctx, l.abs, func(old []byte, exists bool) ([]byte, error) {
			if !exists || sha256Hex(string(old)) != entry.SHA256 {
				return nil, errLocalChanged
			}
			return old, nil
		}, 0o644)
		if errors.Is(err, errLocalChanged) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := c.gate.Remove(ctx, l.abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		delete(b.Entries, p)
		res.DeletedLocal = append(res.DeletedLocal, p)
	}
	return nil
}

// push sends a local file: a create when the store has no memory at the
// path, else an update conditional on the sha256 both last agreed on.
func (c *Client) push(ctx context.Context, p string, l *localFile, r remoteMemory, b *basis, res *Result) error {
	if len(c.scanner.Scan(l.content)) > 0 {
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: "secret"})
		return nil
	}
	var m remoteMemory
	var err error
	cn := c.connFor(l) // with the door, session and origin that wrote it
	if r.ID == "" {
		m, err = cn.create(ctx, p, l.content)
	} else {
		m, err = cn.update(ctx, r.ID, l.content, b.Entries[p].SHA256)
	}
	if errors.Is(err, errInReview) {
		res.InReview = append(res.InReview, p)
		return nil // not in the store yet: the basis stays, the file too
	}
	var rej *rejectedError
	if errors.As(err, &rej) {
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipRejected + ": " + rej.reason})
		return nil
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.Type == FolderConflictType:
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipPathClash + ": " + orDefault(apiErr.ConflictingPath, "another memory") + " is in the way in the store"})
			return nil
		case apiErr.Status == http.StatusConflict:
			return nil // someone wrote in between: the next round reconciles it
		case apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusRequestEntityTooLarge:
			res.Skipped = append(res.Skipped, Skip{Path: p, Reason: "refused: " + apiErr.Message})
			return nil
		}
	}
	if err != nil {
		return err
	}
	b.Entries[p] = basisEntry{ID: m.ID, SHA256: l.sha}
	delete(b.Deletes, p)
	res.Pushed = append(res.Pushed, p)
	return nil
}

// pull writes the store's version into the folder, only over the version
// the decision was made on; on a conflict the local one is kept first.
func (c *Client) pull(ctx context.Context, p string, l *localFile, r remoteMemory, isConflict bool, b *basis, res *Result) error {
	m, err := c.conn.get(ctx, r.ID)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return nil // deleted since the listing
	}
	if err != nil {
		return err
	}
	if sha256Hex(m.Content) != m.SHA256 {
		return fmt.Errorf("storesync: %s arrived with content that does not match its sha256; nothing was written", p)
	}
	abs := filepath.Join(c.dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
	if isConflict && l != nil {
		saved, err := c.keepAside(ctx, p, l.content)
		if err != nil {
			return err
		}
		res.Conflicts = append(res.Conflicts, Conflict{Path: p, SavedAs: saved})
	}
	_, err = c.gate.UpdateFile(ctx, abs, func(old []byte, exists bool) ([]byte, error) {
		if (l == nil && exists) || (l != nil && (!exists || sha256Hex(string(old)) != l.sha)) {
			return nil, errLocalChanged
		}
		return []byte(m.Content), nil
	}, 0o644)
	if errors.Is(err, errLocalChanged) {
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: "changed-during-sync"})
		return nil
	}
	var pte *memdir.PathTraversalError
	if errors.As(err, &pte) {
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: "refused: " + err.Error()})
		return nil
	}
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EEXIST) {
		// A file where a folder must be, or a folder where the file must
		// be: this path alone is left, the round goes on.
		res.Skipped = append(res.Skipped, Skip{Path: p, Reason: SkipPathClash + ": a file or folder here is in the way"})
		return nil
	}
	if err != nil {
		return err
	}
	b.Entries[p] = basisEntry{ID: m.ID, SHA256: m.SHA256}
	delete(b.Deletes, p)
	res.Pulled = append(res.Pulled, p)
	return nil
}

// pushOver resolves a conflict with a store that was replaced or restored
// from a backup: its copy is the older one, so the local file stays and
// is pushed, and the store's version is kept aside (and reported).
func (c *Client) pushOver(ctx context.Context, p string, l *localFile, r remoteMemory, b *basis, res *Result) error {
	if c.cfg.Mount.ReadOnly() {
		return c.pull(ctx, p, l, r, true, b, res)
	}
	m, err := c.conn.get(ctx, r.ID)
	if err != nil {
		return err
	}
	saved, err := c.keepAside(ctx, p, m.Content)
	if err != nil {
		return err
	}
	res.Conflicts = append(res.Conflicts, Conflict{Path: p, SavedAs: saved, LocalKept: true})
	b.Entries[p] = basisEntry{ID: r.ID, SHA256: m.SHA256}
	return c.push(ctx, p, l, r, b, res)
}

// keepAside saves the local side of a conflict under ConflictsDirName.
func (c *Client) keepAside(ctx context.Context, p, content string) (string, error) {
	stamp := c.cfg.Now().UTC().Format("20060102T150405.000Z")
	rel := strings.TrimPrefix(p, "/")
	ext := filepath.Ext(rel)
	saved := filepath.Join(c.dir, ConflictsDirName, filepath.FromSlash(strings.TrimSuffix(rel, ext)+"."+stamp+ext))
	if _, err := c.gate.WriteFile(ctx, saved, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("storesync: keep the local side of %s: %w (nothing was overwritten)", p, err)
	}
	return saved, nil
}

// saveBasis writes the manifest and the basis.
func (c *Client) saveBasis(ctx context.Context, b basis) error {
	if err := c.fs.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	if _, err := c.gate.WriteFile(ctx, filepath.Join(c.dir, manifestName), marshalManifest(c.cfg.Mount.Path), 0o644); err != nil {
		return err
	}
	_, err := c.gate.WriteFile(ctx, filepath.Join(c.dir, basisName), b.marshal(), 0o644)
	return err
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
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

// sameStore reports whether head can be the store seen last: the same ID,
// and a generation that did not go back (a restored backup's does).
func (id identity) sameStore(head storeHead) bool {
	if id.StoreID != "" && head.ID != "" && id.StoreID != head.ID {
		return false
	}
	return id.Generation == nil || head.Generation == nil || *head.Generation >= *id.Generation
}

func (c *Client) saveIdentity(ctx context.Context, head storeHead) error {
	if head.ID == "" && head.Generation == nil {
		return nil
	}
	raw, _ := json.Marshal(identity{V: 1, StoreID: head.ID, Generation: head.Generation})
	_, err := c.gate.WriteFile(ctx, filepath.Join(c.dir, identityName), raw, 0o644)
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
