package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
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
		proj := *project
		if proj == "" {
			proj = e.cwd
		}
		proj, err = filepath.Abs(proj)
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
		for _, inf := range newest {
			infos = append(infos, inf)
		}
		sort.Slice(infos, func(i, j int) bool {
			if !infos[i].Modified.Equal(infos[j].Modified) {
				return infos[i].Modified.After(infos[j].Modified)
			}
			return infos[i].SessionID > infos[j].SessionID
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
