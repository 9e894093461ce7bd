package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/memdir"
)

// historyNames returns the histories to show: --session's, or every one
// under the config home.
func historyNames(e env, home, session string) ([]string, error) {
	if session != "" {
		return []string{session}, nil
	}
	names, _ := filehistory.Sessions(e.fs, home)
	if len(names) == 0 {
		return nil, fmt.Errorf("%s holds no file history", filepath.Join(home, "file-history"))
	}
	return names, nil
}

// findHistory opens the history that holds checkpoint: --session's, or
// the one history under the config home that has it.
func findHistory(e env, home, session, checkpoint string) (*filehistory.Tracker, string, error) {
	names, err := historyNames(e, home, session)
	if err != nil {
		return nil, "", err
	}
	var found []string
	var tr *filehistory.Tracker
	for _, n := range names {
		t, err := filehistory.Open(e.fs, home, n, filehistory.Options{})
		if err != nil {
			return nil, "", err
		}
		for _, s := range t.Snapshots() {
			if s.MessageID == checkpoint {
				found, tr = append(found, n), t
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, "", fmt.Errorf("no checkpoint %q in %s (see agentmem history)", checkpoint, strings.Join(names, ", "))
	case 1:
		return tr, found[0], nil
	}
	return nil, "", fmt.Errorf("checkpoint %q is in several histories (%s): pick one with --session", checkpoint, strings.Join(found, ", "))
}

type historyEntry struct {
	History    string        `json:"history"`
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
	session := fs.String("session", "", "the history to show (a session id or a job's history name; default every history)")
	asJSON := fs.Bool("json", false, "print JSON")
	withDiff := fs.Bool("diff", false, "show each changed file's line counts, created and deleted files")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) > 0 {
			return exitError, fmt.Errorf("unexpected argument %q", args[0])
		}
		home, err := configHome(e, c)
		if err != nil {
			return exitError, err
		}
		names, err := historyNames(e, home, *session)
		if err != nil {
			return exitError, err
		}
		out := []historyEntry{}
		for _, name := range names {
			tr, err := filehistory.Open(e.fs, home, name, filehistory.Options{})
			if err != nil {
				return exitError, err
			}
			entries, err := historyOf(tr, name, *withDiff)
			if err != nil {
				return exitError, err
			}
			out = append(out, entries...)
		}
		if *asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return exitOK, enc.Encode(out)
		}
		if len(out) == 0 {
			fmt.Fprintln(e.stdout, "no checkpoints")
		}
		shown := ""
		for _, h := range out {
			if len(names) > 1 && h.History != shown {
				fmt.Fprintf(e.stdout, "history %s\n", h.History)
				shown = h.History
			}
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

// historyOf lists one history's checkpoints, oldest first, with the files
// changed after each (and their line counts with diff).
func historyOf(tr *filehistory.Tracker, name string, diff bool) ([]historyEntry, error) {
	var out []historyEntry
	for _, s := range tr.Snapshots() {
		h := historyEntry{History: name, Checkpoint: s.MessageID, Time: s.Timestamp.UTC().Format("2006-01-02T15:04:05Z"), Changed: []string{}}
		if diff {
			diffs, err := tr.Diff(s.MessageID)
			if err != nil {
				return nil, err
			}
			for _, d := range diffs {
				h.Changed = append(h.Changed, d.Path)
				h.Diff = append(h.Diff, historyDiff{Path: d.Path, Created: d.Created, Deleted: d.Deleted, Insertions: d.Insertions, Deletions: d.Deletions})
			}
		} else {
			changed, err := tr.Touched(s.MessageID)
			if err != nil {
				return nil, err
			}
			h.Changed = append(h.Changed, changed...)
		}
		out = append(out, h)
	}
	return out, nil
}

func rewindFlags(fs *flag.FlagSet) runner {
	session := fs.String("session", "", "the history the checkpoint belongs to (default: the one that has it)")
	dryRun := fs.Bool("dry-run", false, "show what would change and change nothing")
	force := fs.Bool("force", false, "undo a CLI edit even where its files changed since (the current versions are kept: the rewind can itself be rewound)")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) == 0 {
			return exitError, errors.New("which checkpoint? (see agentmem history)")
		}
		if len(args) > 1 {
			return exitError, fmt.Errorf("unexpected argument %q", args[1])
		}
		home, err := configHome(e, c)
		if err != nil {
			return exitError, err
		}
		tr, name, err := findHistory(e, home, *session, args[0])
		if err != nil {
			return exitError, err
		}
		ctx := context.Background()
		opts := filehistory.RewindOptions{DryRun: true}
		if done := args[0] + doneSuffix; !*force && tr.CanRewind(done) {
			// A CLI edit recorded what it left: never overwrite a change
			// made since.
			opts.IfUnchangedSince = done
		}
		st, err := tr.Rewind(ctx, args[0], opts)
		var changed *filehistory.ChangedSinceError
		if errors.As(err, &changed) {
			return exitError, fmt.Errorf("%s changed since %s: undoing it would overwrite that change, so nothing was changed; look at the file(s), then run the same command with --force to undo anyway (the current versions are kept and can be restored)",
				strings.Join(changed.Paths, ", "), args[0])
		}
		if err == nil && !*dryRun && len(st.FilesChanged) > 0 {
			// The rewind is itself undoable: the current versions first.
			undo := filehistory.CheckpointID("rewind", time.Now())
			if err := tr.MakeSnapshot(ctx, undo); err != nil {
				return exitError, fmt.Errorf("record the current versions before the rewind (nothing was changed): %w", err)
			}
			// Through the folder the files lie in: under its lock, confined
			// to it, and checked again under the lock of each write.
			dir, derr := rewindDir(e, tr)
			if derr != nil {
				return exitError, derr
			}
			st, err = tr.Rewind(ctx, args[0], filehistory.RewindOptions{IfUnchangedSince: opts.IfUnchangedSince, Dir: dir})
			if errors.As(err, &changed) {
				return exitError, fmt.Errorf("%s changed while the rewind ran: that change stands and the other files were put back; run the same command again to see what is left (the versions from before the rewind: %s)",
					strings.Join(changed.Paths, ", "), rewindCommand(c, undo, name))
			}
			defer fmt.Fprintf(e.stdout, "undo this rewind with: %s\n", rewindCommand(c, undo, name))
		}
		verb, removed := "restored", "removed"
		if *dryRun {
			verb, removed = "would restore", "would remove"
		}
		gone := map[string]bool{}
		for _, p := range st.Removed {
			gone[p] = true
		}
		for _, p := range st.FilesChanged {
			if gone[p] {
				fmt.Fprintf(e.stdout, "%s %s\n", removed, p)
			} else {
				fmt.Fprintf(e.stdout, "%s %s\n", verb, p)
			}
		}
		fmt.Fprintf(e.stdout, "%d file(s), +%d -%d lines\n", len(st.FilesChanged), st.Insertions, st.Deletions)
		if err != nil {
			return exitError, err
		}
		return exitOK, nil
	}
}

// rewindCommand is the agentmem rewind command that goes back to
// checkpoint of history ("" lets rewind find the history that has it),
// with the --config-dir this run was given.
func rewindCommand(c *common, checkpoint, history string) string {
	cmd := "agentmem rewind " + checkpoint
	if history != "" {
		cmd += " --session " + history
	}
	if c.configDir != "" {
		cmd += " --config-dir " + shellQuote(c.configDir)
	}
	return cmd
}

// rewindDir is the memory directory a history's files lie in: the
// deepest folder that holds every tracked file (nil when they share
// none but the filesystem's root: written directly then).
func rewindDir(e env, tr *filehistory.Tracker) (*memdir.Dir, error) {
	common := ""
	for _, p := range tr.Tracked() {
		dir := filepath.Dir(p)
		if common == "" {
			common = dir
			continue
		}
		for common != dir && !strings.HasPrefix(dir, common+string(filepath.Separator)) {
			common = filepath.Dir(common)
		}
	}
	if common == "" || common == filepath.Dir(common) {
		return nil, nil
	}
	return memdir.NewDir(e.fs, common, memdir.DirOptions{})
}
