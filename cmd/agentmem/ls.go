package main

import (
	"context"
	"flag"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/spf13/afero"
)

func lsFlags(fs *flag.FlagSet) runner {
	asJSON := fs.Bool("json", false, "print JSON")
	return func(e env, c *common, args []string) (int, error) { return runLs(e, c, args, *asJSON) }
}

// lsEntry is one line of ls --json.
type lsEntry struct {
	File        string    `json:"file"`
	Type        string    `json:"type,omitempty"`
	Name        string    `json:"name,omitempty"`
	Description string    `json:"description,omitempty"`
	Modified    time.Time `json:"modified"`
	AgeDays     int       `json:"age_days"`
	Links       []string  `json:"links,omitempty"` // [[name]] links in the file's header lines
	// Review is "in_review" for a team memory the last sync pushed and the
	// server keeps waiting for a person's review (not yet shared).
	Review string `json:"review,omitempty"`
	// Author and Written say who wrote a shared memory (team or store) as
	// it is, and when, as the server said at the last sync.
	Author  string     `json:"author,omitempty"`
	Written *time.Time `json:"written,omitempty"`
}

// sharedAuthors returns who wrote each shared memory of the memory
// directory dir, keyed by its path in dir: team memories as the team
// sync's state says, store memories as each store folder's authors file
// (a store folder is one holding Claude Code's store manifest: the user
// store in dir itself, team stores in team/<mount>/).
func sharedAuthors(fsys afero.Fs, dir string) map[string]memdir.Attribution {
	out := map[string]memdir.Attribution{}
	for k, a := range teammem.Attributions(fsys, memdir.TeamMemPath(dir)) {
		out[memdir.TeamDirName+"/"+k] = a
	}
	folders := []string{dir}
	if ms, err := afero.Glob(fsys, filepath.Join(dir, memdir.TeamDirName, "*", memdir.StoreManifestName)); err == nil {
		for _, m := range ms {
			folders = append(folders, filepath.Dir(m))
		}
	}
	for _, f := range folders {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			continue
		}
		for k, a := range storesync.Attributions(fsys, f) {
			out[path.Join(filepath.ToSlash(rel), k)] = a
		}
	}
	return out
}

func runLs(e env, c *common, args []string, asJSON bool) (int, error) {
	if len(args) > 0 {
		return exitError, fmt.Errorf("unexpected argument %q", args[0])
	}
	r, err := existingMemory(e, c)
	if err != nil {
		return exitError, err
	}
	now, err := c.clock()
	if err != nil {
		return exitError, err
	}
	headers, err := memdir.ScanMemoryFiles(context.Background(), e.fs, r.path.Dir, memdir.ScanOptions{MaxFiles: 1 << 20})
	if err != nil {
		return exitError, err
	}
	if asJSON {
		inReview := teammem.InReview(e.fs, memdir.TeamMemPath(r.path.Dir))
		authors := sharedAuthors(e.fs, r.path.Dir)
		out := make([]lsEntry, len(headers))
		for i, h := range headers {
			out[i] = lsEntry{File: h.Filename, Type: string(h.Type), Name: h.Name, Description: h.Description,
				Modified: h.ModTime.UTC(), AgeDays: memdir.MemoryAgeDays(h.ModTime, now), Links: h.Links}
			if key, ok := strings.CutPrefix(filepath.ToSlash(h.Filename), memdir.TeamDirName+"/"); ok && inReview[key] {
				out[i].Review = "in_review"
			}
			if a, ok := authors[filepath.ToSlash(h.Filename)]; ok && a.Author != "" {
				out[i].Author = a.Author
				if !a.Time.IsZero() {
					t := a.Time.UTC()
					out[i].Written = &t
				}
			}
		}
		return printJSON(e.stdout, out)
	}
	if len(headers) == 0 {
		fmt.Fprintln(e.stdout, "no memory files in "+r.path.Dir)
		return exitOK, nil
	}
	for _, h := range headers {
		typ := "-"
		if h.Type != "" {
			typ = string(h.Type)
		}
		fmt.Fprintf(e.stdout, "%-9s %-32s %-12s %s\n", typ, h.Filename, memdir.MemoryAge(h.ModTime, now), h.Description)
	}
	return exitOK, nil
}
