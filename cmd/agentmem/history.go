package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentmem/agentmem/filehistory"
)

// openHistory opens --session's file history, or says which exist.
func openHistory(e env, c *common, session string) (*filehistory.Tracker, error) {
	home, err := configHome(e, c)
	if err != nil {
		return nil, err
	}
	if session == "" {
		names, _ := filehistory.Sessions(e.fs, home)
		if len(names) == 0 {
			return nil, fmt.Errorf("--session is required, and %s holds no file history", filepath.Join(home, "file-history"))
		}
		return nil, fmt.Errorf("--session is required; histories here: %s", strings.Join(names, ", "))
	}
	return filehistory.Open(e.fs, home, session, filehistory.Options{})
}

type historyEntry struct {
	Checkpoint string        `json:"checkpoint"`
	Time       string        `json:"time"`
	Changed    []string      `json:"changed"`
	Diff       []historyDiff `json:"diff,omitempty"`
}

// historyDiff is one file of history --diff.
type historyDiff struct {
	Path       string `json:"path"`
	Created    bool   `json:"created,omitempty"`
	Deleted    bool   `json:"deleted,omitempty"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
}

func historyFlags(fs *flag.FlagSet) runner {
	session := fs.String("session", "", "the history to show (a session id or a job's history name)")
	asJSON := fs.Bool("json", false, "print JSON")
	withDiff := fs.Bool("diff", false, "show each changed file's line counts, created and deleted files")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) > 0 {
			return exitError, fmt.Errorf("unexpected argument %q", args[0])
		}
		tr, err := openHistory(e, c, *session)
		if err != nil {
			return exitError, err
		}
		var out []historyEntry
		for _, s := range tr.Snapshots() {
			h := historyEntry{Checkpoint: s.MessageID, Time: s.Timestamp.UTC().Format("2006-01-02T15:04:05Z"), Changed: []string{}}
			if *withDiff {
				diffs, err := tr.Diff(s.MessageID)
				if err != nil {
					return exitError, err
				}
				for _, d := range diffs {
					h.Changed = append(h.Changed, d.Path)
					h.Diff = append(h.Diff, historyDiff{Path: d.Path, Created: d.Created, Deleted: d.Deleted, Insertions: d.Insertions, Deletions: d.Deletions})
				}
			} else {
				changed, err := tr.Touched(s.MessageID)
				if err != nil {
					return exitError, err
				}
				h.Changed = append(h.Changed, changed...)
			}
			out = append(out, h)
		}
		if *asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return exitOK, enc.Encode(out)
		}
		if len(out) == 0 {
			fmt.Fprintln(e.stdout, "no checkpoints")
		}
		for _, h := range out {
			fmt.Fprintf(e.stdout, "%s  %s  %d file(s) changed after it\n", h.Time, h.Checkpoint, len(h.Changed))
			if h.Diff == nil {
				for _, p := range h.Changed {
					fmt.Fprintf(e.stdout, "    %s\n", p)
				}
			}
			for _, d := range h.Diff {
				note := ""
				switch {
				case d.Created:
					note = " (created)"
				case d.Deleted:
					note = " (deleted)"
				}
				fmt.Fprintf(e.stdout, "    %s  +%d -%d%s\n", d.Path, d.Insertions, d.Deletions, note)
			}
		}
		return exitOK, nil
	}
}

func rewindFlags(fs *flag.FlagSet) runner {
	session := fs.String("session", "", "the history the checkpoint belongs to")
	dryRun := fs.Bool("dry-run", false, "show what would change and change nothing")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) == 0 {
			return exitError, errors.New("which checkpoint? (see agentmem history --session NAME)")
		}
		if len(args) > 1 {
			return exitError, fmt.Errorf("unexpected argument %q", args[1])
		}
		tr, err := openHistory(e, c, *session)
		if err != nil {
			return exitError, err
		}
		st, err := tr.Rewind(context.Background(), args[0], filehistory.RewindOptions{DryRun: *dryRun})
		if errors.Is(err, filehistory.ErrUnknownSnapshot) {
			return exitError, fmt.Errorf("no checkpoint %q in history %q (see agentmem history --session %s)", args[0], *session, *session)
		}
		verb := "restored"
		if *dryRun {
			verb = "would restore"
		}
		for _, p := range st.FilesChanged {
			if _, serr := e.fs.Stat(p); *dryRun || serr == nil {
				fmt.Fprintf(e.stdout, "%s %s\n", verb, p)
			} else {
				fmt.Fprintf(e.stdout, "removed %s\n", p)
			}
		}
		fmt.Fprintf(e.stdout, "%d file(s), +%d -%d lines\n", len(st.FilesChanged), st.Insertions, st.Deletions)
		if err != nil {
			return exitError, err
		}
		return exitOK, nil
	}
}
