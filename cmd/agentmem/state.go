package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/transcript"
	"golang.org/x/text/unicode/norm"
)

func sessionsFlags(*flag.FlagSet) runner {
	return func(e env, c *common, args []string) (int, error) {
		if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(e.stdout, `usage: agentmem sessions COMMAND [flags]

  ls [--all-projects] [--json]   the project's sessions, newest first
  show ID [--json]               a session's conversation as resume rebuilds it
  search QUERY [--json]          sessions whose title, prompt, branch or tag contain QUERY, then by their messages

Flags: --config-dir DIR (default $CLAUDE_CONFIG_DIR, else ~/.claude), --project DIR (default the current directory).
`)
			if len(args) == 0 {
				return exitError, nil
			}
			return exitOK, nil
		}
		sub, rest := args[0], args[1:]
		fs := subFlags(e, "sessions "+sub)
		configDir := fs.String("config-dir", "", "config home (default $CLAUDE_CONFIG_DIR, else ~/.claude)")
		project := fs.String("project", "", "the project directory (default the current directory)")
		asJSON := fs.Bool("json", false, "print JSON")
		all := fs.Bool("all-projects", false, "ls: every project's sessions")
		positional, err := parseAnywhere(fs, rest)
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage := map[string]string{"ls": "ls [--all-projects] [--json]", "show": "show ID [--json]", "search": "search QUERY [--json]"}[sub]
				fmt.Fprintf(e.stdout, "usage: agentmem sessions %s\n\nFlags:\n", cmp.Or(usage, sub+" [flags]"))
				fs.SetOutput(e.stdout)
				fs.PrintDefaults()
				return exitOK, nil
			}
			return exitError, fmt.Errorf("%v (see agentmem sessions --help)", err)
		}
		home, err := configHome(e, &common{configDir: *configDir})
		if err != nil {
			return exitError, err
		}
		proj, err := filepath.Abs(cmp.Or(*project, e.cwd))
		if err != nil {
			return exitError, err
		}
		if real, err := filepath.EvalSymlinks(proj); err == nil {
			proj = real
		}
		proj = norm.NFC.String(proj)
		dir, _ := transcript.FindProjectDir(e.fs, home, proj)
		store, err := transcript.NewJSONLStore(e.fs, dir, transcript.Options{})
		if err != nil {
			return exitError, err
		}
		ctx := context.Background()
		switch sub {
		case "ls":
			return sessionsList(ctx, e, home, store, *all, *asJSON)
		case "show":
			if len(positional) != 1 {
				return exitError, errors.New("show needs one session id (see agentmem sessions ls)")
			}
			return sessionsShow(ctx, e, store, positional[0], *asJSON)
		case "search":
			if len(positional) == 0 {
				return exitError, errors.New("search needs a query")
			}
			return sessionsSearch(ctx, e, store, strings.Join(positional, " "), *asJSON)
		}
		return exitError, fmt.Errorf("unknown sessions command %q (want ls, show or search)", sub)
	}
}

func sessionsList(ctx context.Context, e env, home string, store *transcript.JSONLStore, all, asJSON bool) (int, error) {
	var infos []transcript.Info
	if !all {
		var err error
		if infos, err = store.List(ctx); err != nil {
			return exitError, err
		}
	} else {
		dirs, err := fswalk.ReadDir(e.fs, transcript.ProjectsDir(home))
		if err != nil {
			return exitError, fmt.Errorf("read %s: %w", transcript.ProjectsDir(home), err)
		}
		newest := map[string]transcript.Info{}
		for _, d := range dirs {
			if !d.Type.IsDir() {
				continue
			}
			s, err := transcript.NewJSONLStore(e.fs, filepath.Join(transcript.ProjectsDir(home), d.Rel), transcript.Options{})
			if err != nil {
				continue
			}
			list, err := s.List(ctx)
			if err != nil {
				continue
			}
			for _, inf := range list {
				if old, ok := newest[inf.SessionID]; !ok || inf.Modified.After(old.Modified) {
					newest[inf.SessionID] = inf
				}
			}
		}
		infos = slices.Collect(maps.Values(newest))
		slices.SortFunc(infos, func(a, b transcript.Info) int {
			return cmp.Or(b.Modified.Compare(a.Modified), strings.Compare(b.SessionID, a.SessionID))
		})
	}
	if asJSON {
		return printJSON(e.stdout, orEmpty(infos))
	}
	if len(infos) == 0 {
		fmt.Fprintln(e.stdout, "no sessions")
		return exitOK, nil
	}
	for _, inf := range infos {
		extra := ""
		if inf.GitBranch != "" {
			extra += " " + inf.GitBranch
		}
		if inf.Tag != "" {
			extra += " #" + inf.Tag
		}
		fmt.Fprintf(e.stdout, "%s  %s  %s%s\n", inf.SessionID, inf.Modified.Local().Format(time.DateTime), inf.Title, extra)
	}
	return exitOK, nil
}

// shownMessage is one message of `sessions show --json`.
type shownMessage struct {
	UUID string `json:"uuid"`
	Type string `json:"type"`
	Text string `json:"text"`
}

func sessionsShow(ctx context.Context, e env, store *transcript.JSONLStore, id string, asJSON bool) (int, error) {
	r, err := transcript.Resume(ctx, store, id)
	if err != nil {
		return exitError, err
	}
	msgs := []shownMessage{}
	for _, m := range r.Messages {
		text := transcript.Flatten(m.Entry)
		if strings.TrimSpace(text) == "" {
			continue // an entry with nothing to show (an empty attachment)
		}
		msgs = append(msgs, shownMessage{UUID: m.UUID, Type: m.Type, Text: text})
	}
	if asJSON {
		return printJSON(e.stdout, msgs)
	}
	for _, m := range msgs {
		fmt.Fprintf(e.stdout, "%s: %s\n\n", m.Type, m.Text)
	}
	if r.Interruption != transcript.NotInterrupted {
		fmt.Fprintf(e.stdout, "(%s)\n", r.Interruption)
	}
	return exitOK, nil
}

func sessionsSearch(ctx context.Context, e env, store *transcript.JSONLStore, query string, asJSON bool) (int, error) {
	hits, err := transcript.Search(ctx, store, query, 20)
	if err != nil {
		return exitError, err
	}
	if asJSON {
		return printJSON(e.stdout, orEmpty(hits))
	}
	if len(hits) == 0 {
		fmt.Fprintln(e.stdout, "no sessions match")
	}
	for _, h := range hits {
		fmt.Fprintf(e.stdout, "%s  %s\n    %s\n", h.SessionID, h.Title, h.Snippet)
	}
	return exitOK, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func printJSON(w io.Writer, v any) (int, error) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitError, err
	}
	return exitOK, nil
}

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
		if slices.ContainsFunc(t.Snapshots(), func(s filehistory.Snapshot) bool { return s.MessageID == checkpoint }) {
			found, tr = append(found, n), t
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
			return printJSON(e.stdout, out)
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
		for _, p := range st.FilesChanged {
			if slices.Contains(st.Removed, p) {
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
