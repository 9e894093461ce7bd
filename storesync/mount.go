// Package storesync keeps a memory directory in step with one memory
// store, in the layout and manifests Claude Code 2.1.328 uses: a team
// store at <auto memory>/team/<mount>/, a user store over the auto-memory
// directory itself, ".memory-sync" naming the store and
// ".memory-sync-basis" recording what both sides last agreed on.
//
// A round (Client.Sync) is the sync engine's (package foldersync) through
// this package's Memory Stores driver (Remote): it lists the store by its
// export's basic view (or the paged list where a server has no export),
// fetches only what changed, and pushes with content_sha256 and
// not_exists preconditions. The engine's three-way rules, deletion on
// evidence, store identity, mass-delete holds, conflicts and checkpoints
// apply; the store's ID and generation tell a replaced or restored store
// from deletions. Claude Code's ".memory-sync-basis" is kept in step with
// the engine's basis, and every write to disk goes through the memory
// directory's write gate.
package storesync

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Mount is one store a directory follows, as an element of
// CLAUDE_MEMORY_STORES describes it.
type Mount struct {
	// Path is the store's path on its host, such as
	// "/v1/code/memory/team-store" or "/v1/memory_stores/memstore_...".
	Path string `json:"path"`
	// Mode is "rw" (default) or "ro": a read-only store is only pulled.
	Mode string `json:"mode,omitempty"`
	// Scope is "team" (default) or "user".
	Scope string `json:"scope,omitempty"`
	// Name is the mount: the folder of a team store under team/ (default:
	// the path's last segment, sanitised).
	Name string `json:"mount,omitempty"`
	// PromptIndex is the store's index document, relative ("MEMORY.md").
	PromptIndex string `json:"promptIndex,omitempty"`
	// SkillsDirs and PromptIndexMaxBytes are kept as Claude Code reads
	// them.
	SkillsDirs          []string `json:"skillsDirs,omitempty"`
	PromptIndexMaxBytes int      `json:"promptIndexMaxBytes,omitempty"`
}

// ReadOnly reports whether the store is pulled only.
func (m Mount) ReadOnly() bool { return m.Mode == "ro" }

var (
	mountRe   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	segmentRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	unsafeRe  = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// ParseMounts reads CLAUDE_MEMORY_STORES: a JSON array whose elements are
// a store path (a read-write team store) or a Mount object. It refuses
// what Claude Code refuses: invalid JSON, a path that is not absolute, a
// bad mode, scope, mount or promptIndex, a duplicate mount, and more than
// one user store. Defaults are filled in.
func ParseMounts(value string) ([]Mount, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return nil, fmt.Errorf("storesync: CLAUDE_MEMORY_STORES is not a JSON array: %w", err)
	}
	var out []Mount
	seen := map[string]bool{}
	users := 0
	for i, r := range raw {
		var m Mount
		var p string
		if json.Unmarshal(r, &p) == nil {
			m.Path = p
		} else {
			dec := json.NewDecoder(strings.NewReader(string(r)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&m); err != nil {
				return nil, fmt.Errorf("storesync: CLAUDE_MEMORY_STORES element %d: %w", i+1, err)
			}
		}
		if err := m.fill(); err != nil {
			return nil, fmt.Errorf("storesync: CLAUDE_MEMORY_STORES element %d: %w", i+1, err)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("storesync: CLAUDE_MEMORY_STORES has the mount %q twice", m.Name)
		}
		seen[m.Name] = true
		if m.Scope == "user" {
			if users++; users > 1 {
				return nil, fmt.Errorf("storesync: CLAUDE_MEMORY_STORES has more than one user store")
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// fill checks a mount and fills in its defaults.
func (m *Mount) fill() error {
	if !strings.HasPrefix(m.Path, "/") || strings.Contains(m.Path, "://") {
		return fmt.Errorf("path %q must be an absolute path on the store's host", m.Path)
	}
	m.Path = "/" + strings.Trim(path.Clean(m.Path), "/")
	if err := oneOf("mode", &m.Mode, "rw", "ro"); err != nil {
		return err
	}
	if err := oneOf("scope", &m.Scope, "team", "user"); err != nil {
		return err
	}
	if m.Name == "" {
		m.Name = strings.Trim(unsafeRe.ReplaceAllString(path.Base(m.Path), "-"), "-")
	}
	if !mountRe.MatchString(m.Name) {
		return fmt.Errorf("mount %q must be letters, digits, _ and -", m.Name)
	}
	if m.PromptIndex != "" {
		for _, seg := range strings.Split(m.PromptIndex, "/") {
			if seg == "." || seg == ".." || !segmentRe.MatchString(seg) {
				return fmt.Errorf("promptIndex %q must be a relative path of letters, digits, ., _ and -", m.PromptIndex)
			}
		}
	}
	return nil
}

// Dir is where the mount lives below an auto-memory directory: a team
// store at <auto>/team/<mount>/, the user store at <auto> itself.
func (m Mount) Dir(autoDir string) string {
	if m.Scope == "user" {
		return filepath.Clean(autoDir)
	}
	return filepath.Join(autoDir, "team", m.Name)
}

// userSkipped are the top folders of the auto-memory directory a user
// store never syncs (reference §6.3).
var userSkipped = map[string]bool{"team": true, "logs": true, "sessions": true, "proposals": true}

// syncable reports whether a file at rel (relative to the mount, "/"
// separators) is synced: a regular file whose name and folders do not
// start with ".", ending in .md, .txt, .json or .jsonl, outside the
// folders a user store skips.
func (m Mount) syncable(rel string) bool {
	for i, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, ".") || (i == 0 && m.Scope == "user" && userSkipped[seg] && strings.Contains(rel, "/")) {
			return false
		}
	}
	switch path.Ext(rel) {
	case ".md", ".txt", ".json", ".jsonl":
		return true
	}
	return false
}

// oneOf sets an empty *v to the first of the allowed values, and says
// when it is none of them.
func oneOf(name string, v *string, allowed ...string) error {
	if *v == "" {
		*v = allowed[0]
	}
	if !slices.Contains(allowed, *v) {
		return fmt.Errorf("%s %q must be %s", name, *v, strings.Join(allowed, " or "))
	}
	return nil
}
