package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/teammem"
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
		out := make([]lsEntry, len(headers))
		for i, h := range headers {
			out[i] = lsEntry{File: h.Filename, Type: string(h.Type), Name: h.Name, Description: h.Description,
				Modified: h.ModTime.UTC(), AgeDays: memdir.MemoryAgeDays(h.ModTime, now), Links: h.Links}
			if key, ok := strings.CutPrefix(filepath.ToSlash(h.Filename), memdir.TeamDirName+"/"); ok && inReview[key] {
				out[i].Review = "in_review"
			}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(out)
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
