package teammem

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// StateDirName is the folder, beside the team directory, that holds sync
// state files.
const StateDirName = ".team-sync"

// prevStateSuffix names the copy of a state file kept beside it.
const prevStateSuffix = ".prev"

// ErrCorruptState reports a state file that could not be read; the run
// that met it went on without a base.
var ErrCorruptState = errors.New("teammem: the sync state file is unreadable; syncing without a base (nothing is deleted this run)")

// StatePath returns where the sync state of (server, repo) for teamDir is
// kept: <memory dir>/.team-sync/<hash of server and repo>.json, beside the
// team directory and outside what is synced.
func StatePath(teamDir, baseURL, repo string) string {
	sum := sha256.Sum256([]byte(baseURL + "\n" + repo + "\n" + filepath.Clean(teamDir)))
	return filepath.Join(filepath.Dir(filepath.Clean(teamDir)), StateDirName, hex.EncodeToString(sum[:8])+".json")
}

// ServerHasContent reports whether the last sync recorded in the state
// file found content on the server (SyncState.ServerHasContent): the
// cached input of TeamMemoryActive, refreshed by every sync. A missing or
// unreadable file reports false.
func ServerHasContent(fsys afero.Fs, path string) bool {
	data, err := afero.ReadFile(fsys, path)
	if err != nil {
		return false
	}
	var f stateFile
	return json.Unmarshal(data, &f) == nil && f.ServerHasContent
}

// stateFile is the JSON form of a SyncState on disk.
type stateFile struct {
	Format           int                              `json:"format"`
	Server           string                           `json:"server"`
	Repo             string                           `json:"repo"`
	Saved            time.Time                        `json:"saved"`
	Base             map[string]string                `json:"base"`
	ETag             string                           `json:"etag,omitempty"`
	ServerChecksums  map[string]string                `json:"serverChecksums,omitempty"`
	Tombstones       map[string]int64                 `json:"tombstones,omitempty"`
	MaxEntries       int                              `json:"maxEntries,omitempty"`
	ServerHasContent bool                             `json:"serverHasContent,omitempty"`
	StoreID          string                           `json:"storeId,omitempty"`
	Version          int64                            `json:"version,omitempty"`
	Resetting        bool                             `json:"resetting,omitempty"`
	InReview         map[string]string                `json:"inReview,omitempty"`
	Authors          map[string]teamwire.Attribution  `json:"authors,omitempty"`
	InFlight         map[string]foldersync.InFlight   `json:"inFlight,omitempty"`
	Diverged         map[string]foldersync.Divergence `json:"diverged,omitempty"`
	// Dir is the team directory the state is of.
	Dir string `json:"dir,omitempty"`
}

// Attributions returns who wrote each team memory of teamDir as it is and
// when, as the last full reads of its servers said (SyncState.Authors,
// from every state file beside it; the newest write wins): the
// memdir.PromptOptions.TeamAuthors of the prompt.
func Attributions(fsys afero.Fs, teamDir string) map[string]memdir.Attribution {
	out := map[string]memdir.Attribution{}
	eachStateFile(fsys, filepath.Join(filepath.Dir(filepath.Clean(teamDir)), StateDirName), func(_ string, _ []byte, f stateFile) {
		for k, a := range f.Authors {
			t, _ := time.Parse(time.RFC3339, a.Time)
			if cur, ok := out[k]; !ok || t.After(cur.Time) {
				out[k] = memdir.Attribution{Author: a.Author, Time: t}
			}
		}
	})
	return out
}

// InReview returns the keys of the team directory teamDir that its
// clients' last pushing rounds found waiting for review on a server
// (SyncState.InReview, from every state file beside it). Unreadable
// state files are passed over.
func InReview(fsys afero.Fs, teamDir string) map[string]bool {
	out := map[string]bool{}
	eachStateFile(fsys, filepath.Join(filepath.Dir(filepath.Clean(teamDir)), StateDirName), func(_ string, _ []byte, f stateFile) {
		for k := range f.InReview {
			out[k] = true
		}
	})
	return out
}

// eachStateFile calls fn with the name, bytes and content of every state
// file in dir (*.json); unreadable ones are passed over.
func eachStateFile(fsys afero.Fs, dir string, fn func(name string, data []byte, f stateFile)) {
	names, _ := afero.Glob(fsys, filepath.Join(dir, "*.json"))
	for _, n := range names {
		data, err := afero.ReadFile(fsys, n)
		var f stateFile
		if err == nil && json.Unmarshal(data, &f) == nil {
			fn(n, data, f)
		}
	}
}

// loadState fills an empty st from the state file, once. A missing file is
// a fresh start; an unreadable one too, reported in st.FileError.
func (c *Client) loadState(st *SyncState) {
	if c.cfg.StateFile == "" || st.loaded || st.Base != nil || st.ETag != "" {
		st.loaded = true
		return
	}
	st.loaded = true
	data, err := afero.ReadFile(c.fs, c.cfg.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		if data, err = c.adoptState(); data == nil {
			return
		}
	}
	var f stateFile
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		// Torn or damaged: its copy (saveState).
		var prev stateFile
		if raw, perr := afero.ReadFile(c.fs, c.cfg.StateFile+prevStateSuffix); perr == nil && json.Unmarshal(raw, &prev) == nil {
			c.log.Warn("teammem: sync state unreadable; going on from its copy", "event", "teammem_state_previous", "error", err)
			f, err = prev, nil
		}
	}
	if err == nil && f.Server != c.cfg.BaseURL && f.Repo == c.cfg.Repo && f.StoreID != "" {
		f.Server = c.cfg.BaseURL // adopted (adoptState): the round checks the server's identity
	}
	if err == nil && (f.Format != 1 || f.Server != c.cfg.BaseURL || f.Repo != c.cfg.Repo) {
		err = errors.New("it belongs to another server or repo")
	}
	if err != nil {
		st.FileError = fmt.Errorf("%w: %v", ErrCorruptState, err)
		c.log.Warn("teammem: sync state unreadable; no base this run", "event", "teammem_state_unreadable", "error", err)
		return
	}
	st.Base, st.ETag, st.ServerChecksums, st.Tombstones = f.Base, f.ETag, f.ServerChecksums, f.Tombstones
	st.MaxEntries, st.ServerHasContent = f.MaxEntries, f.ServerHasContent
	st.StoreID, st.Version, st.Resetting = f.StoreID, f.Version, f.Resetting
	st.InReview, st.Authors = f.InReview, f.Authors
	st.InFlight, st.Diverged = f.InFlight, f.Diverged
}

// adoptState takes over the state this team directory kept for the same
// repo under another spelling of the server's URL ("localhost" for
// "127.0.0.1", a proxy's name): the newest such state that names the
// store it agreed with is moved to this client's state file and its
// bytes returned (nil when there is none). A state is kept per URL text,
// but it is the store's identity that counts: the round compares the
// server's with the one the state names, and a store that is not the one
// is a reset (nothing deleted, local files kept), as without any state.
// Moved, not copied: two states of one store would each go stale.
func (c *Client) adoptState() ([]byte, error) {
	var best string
	var bestData []byte
	var bestSaved time.Time
	eachStateFile(c.fs, filepath.Dir(c.cfg.StateFile), func(n string, data []byte, f stateFile) {
		if f.Format != 1 || f.Repo != c.cfg.Repo || f.StoreID == "" || f.Server == c.cfg.BaseURL || (f.Dir != "" && f.Dir != c.teamDir) {
			return
		}
		if best == "" || f.Saved.After(bestSaved) {
			best, bestData, bestSaved = n, data, f.Saved
		}
	})
	if best == "" {
		return nil, nil
	}
	if err := c.fs.Rename(best, c.cfg.StateFile); err != nil {
		return nil, nil // left where it is: this run starts without a base
	}
	c.log.Warn("teammem: took over the sync state kept for another URL of this repo's server; the server's identity is checked",
		"event", "teammem_state_adopted", "from", filepath.Base(best))
	return bestData, nil
}

// saveState writes st to the state file atomically (temp file, fsync,
// rename), so a crash leaves the old state or the new one.
func (c *Client) saveState(st *SyncState) error {
	if c.cfg.StateFile == "" {
		return nil
	}
	data, err := json.Marshal(stateFile{Format: 1, Server: c.cfg.BaseURL, Repo: c.cfg.Repo, Saved: c.cfg.Now().UTC(),
		Base: st.Base, ETag: st.ETag, ServerChecksums: st.ServerChecksums, Tombstones: st.Tombstones,
		MaxEntries: st.MaxEntries, ServerHasContent: st.ServerHasContent,
		StoreID: st.StoreID, Version: st.Version, Resetting: st.Resetting, InReview: st.InReview, Authors: st.Authors,
		InFlight: st.InFlight, Diverged: st.Diverged, Dir: c.teamDir})
	if err != nil {
		return err
	}
	if err := c.fs.MkdirAll(filepath.Dir(c.cfg.StateFile), 0o755); err != nil {
		return fmt.Errorf("teammem: save the sync state: %w", err)
	}
	// A copy stays beside it: the fallback of a state file damaged later
	// (loadState). A copy, not the save before: that one lacks the
	// changes this save says are in flight.
	for _, p := range []string{c.cfg.StateFile, c.cfg.StateFile + prevStateSuffix} {
		if err := atomicfile.WriteFile(c.fs, p, data, 0o600); err != nil {
			return fmt.Errorf("teammem: save the sync state: %w", err)
		}
	}
	return nil
}
