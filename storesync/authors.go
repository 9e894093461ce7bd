package storesync

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// AuthorsName is agentmem's file beside the manifests that says who wrote
// each memory of the folder as it is and when, as the store's versions
// said after the last round (a dot file: neither agentmem nor Claude Code
// syncs it). Attributions reads it for the prompt.
const AuthorsName = ".memory-sync-authors.json"

// maxAuthorLookups bounds the version lookups of one round; the memories
// left over are looked up by the next rounds.
const maxAuthorLookups = 50

type authorsFile struct {
	V int `json:"v"`
	// Files maps a store path ("/deploy.md") to the author of the
	// content with that sha256.
	Files map[string]authorEntry `json:"files"`
}

type authorEntry struct {
	SHA256 string    `json:"sha256"`
	Author string    `json:"author"`
	Time   time.Time `json:"time"`
}

// Attributions returns who wrote each memory of the mount folder dir as
// it is and when, keyed by its path in the folder ("/"-separated, no
// leading "/"), as the store's versions said at the last round
// (AuthorsName): for a team store at <memory>/team/<mount>, prefix the
// keys with "<mount>/" to have them in memdir.PromptOptions.TeamAuthors.
// A missing or unreadable file says nothing.
func Attributions(fsys afero.Fs, dir string) map[string]memdir.Attribution {
	raw, err := afero.ReadFile(fsys, filepath.Join(dir, AuthorsName))
	var f authorsFile
	if err != nil || json.Unmarshal(raw, &f) != nil {
		return nil
	}
	out := map[string]memdir.Attribution{}
	for p, e := range f.Files {
		if e.Author != "" {
			out[strings.TrimPrefix(p, "/")] = memdir.Attribution{Author: e.Author, Time: e.Time}
		}
	}
	return out
}

// saveAuthors brings AuthorsName up to the memories the round ended with
// (the basis): an entry whose content is unchanged is kept, the author of
// a new or changed one is the creator of its memory's newest version
// (GET memory_versions?memory_id=...&limit=1 of store storeID). It is
// best effort: a lookup that fails leaves the memory unattributed until
// a later round, and the round's result does not depend on it. It
// reports whether every memory was looked up (false: a later round
// should try again).
func (c *Client) saveAuthors(ctx context.Context, b basis, storeID string) (complete bool) {
	var f authorsFile
	if raw, err := afero.ReadFile(c.fs, filepath.Join(c.dir, AuthorsName)); err == nil {
		_ = json.Unmarshal(raw, &f) // an unreadable file starts again
	}
	old := f.Files
	f.V, f.Files = 1, map[string]authorEntry{}
	changed := len(old) != len(b.Entries)
	versions := c.versionsConn(storeID)
	lookups := 0
	complete = true
	for _, p := range sortedKeys(b.Entries) {
		e := b.Entries[p]
		if prev, ok := old[p]; ok && prev.SHA256 == e.SHA256 {
			f.Files[p] = prev
			continue
		}
		changed = true
		if versions == nil || lookups >= maxAuthorLookups || ctx.Err() != nil {
			complete = complete && versions == nil && ctx.Err() == nil // nil: no versions to ask
			continue
		}
		lookups++
		a, ok, gone := versions.author(ctx, e.ID)
		if gone {
			versions = nil // this server keeps no versions: no more lookups this round
		}
		if ok {
			a.SHA256 = e.SHA256
			f.Files[p] = a
		}
	}
	if !changed {
		return complete
	}
	raw, err := json.Marshal(f)
	if err == nil {
		_, err = c.gate.WriteFile(ctx, filepath.Join(c.dir, AuthorsName), raw, 0o644)
	}
	return complete && err == nil
}

// versionsConn returns the connection to store storeID's versions, or nil
// when the store's ID is not known.
func (c *Client) versionsConn(storeID string) *conn {
	cn := *c.conn
	if !cn.public {
		if storeID == "" || strings.ContainsAny(storeID, "/?#") {
			return nil
		}
		cn.path = "/v1/memory_stores/" + url.PathEscape(storeID)
	}
	return &cn
}

// author reads the creator of memory id's newest version; gone reports
// a server without the versions API.
func (c *conn) author(ctx context.Context, id string) (e authorEntry, ok, gone bool) {
	_, body, err := c.do(ctx, http.MethodGet, "/memory_versions?"+url.Values{"memory_id": {id}, "limit": {"1"}}.Encode(), nil)
	if err != nil {
		var apiErr *APIError
		return e, false, errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed)
	}
	var reply struct {
		Data []struct {
			CreatedAt string `json:"created_at"`
			CreatedBy struct {
				UserID    string `json:"user_id"`
				APIKeyID  string `json:"api_key_id"`
				SessionID string `json:"session_id"`
			} `json:"created_by"`
			Provenance struct {
				Author string `json:"author"`
			} `json:"provenance"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &reply) != nil || len(reply.Data) == 0 {
		return e, false, false
	}
	v := reply.Data[0]
	for _, name := range []string{v.Provenance.Author, v.CreatedBy.UserID, v.CreatedBy.APIKeyID, v.CreatedBy.SessionID} {
		if name != "" {
			e.Author = name
			break
		}
	}
	e.Time, _ = time.Parse(time.RFC3339Nano, v.CreatedAt)
	return e, e.Author != "", false
}
