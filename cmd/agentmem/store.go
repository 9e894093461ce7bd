package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
)

// StoreTokenEnv and MemoryStoresEnv name what agentmem store reads from
// the environment: the token or API key, and the mounts (Claude Code's
// CLAUDE_MEMORY_STORES).
const (
	StoreTokenEnv   = "AGENTMEM_STORE_TOKEN"
	MemoryStoresEnv = "CLAUDE_MEMORY_STORES"
)

func storeFlags(fs *flag.FlagSet) runner {
	return func(e env, c *common, args []string) (int, error) {
		if len(args) == 0 {
			storeUsage(e.stdout)
			return exitError, nil
		}
		sub, rest := args[0], args[1:]
		switch sub {
		case "ls", "sync", "watch":
			return storeCommand(e, c, sub, rest)
		case "help", "-h", "--help":
			storeUsage(e.stdout)
			return exitOK, nil
		}
		return exitError, fmt.Errorf("unknown store command %q (want ls, sync or watch)", sub)
	}
}

func storeUsage(w io.Writer) {
	fmt.Fprint(w, `usage: agentmem store COMMAND [flags]

  ls     [--stores JSON]                                  the mounted stores and their folders
  sync   --server URL [--stores JSON] [--mount NAME]      one round for each store (or the one named)
  watch  --server URL [--stores JSON] [--mount NAME]      keep the folders in step until interrupted

The stores are read from --stores or $CLAUDE_MEMORY_STORES, Claude Code's
JSON: ["/v1/code/memory/team-store"] or objects with path, mode (rw, ro),
scope (team, user), mount and promptIndex. A team store lives in
<auto memory>/team/<mount>/, the user store in <auto memory>/ itself,
with Claude Code's .memory-sync and .memory-sync-basis beside the files.
--server is the store host: agentmem team serve, or https://api.anthropic.com
for a /v1/memory_stores/<id> path. The token (or API key) is read from
$AGENTMEM_STORE_TOKEN. Deletes follow --delete-mode (corroborate: a file
missing on two walks 30 s apart; immediate; never); more than
max(50, 10%) of the tracked memories deleted on one side at once are held
until --allow-mass-delete. A store that was replaced or restored from a
backup deletes nothing. When both sides changed a memory, the store's
version takes the file and yours is kept in .memory-sync-conflicts/.
A round that pulls over a file or deletes one takes a checkpoint first
(history store-sync-<hash of the folder>; --no-checkpoint turns it off)
and prints the agentmem rewind command that undoes it.
watch pushes about 2 s after a local change and resyncs every --resync.
A file whose bytes are not valid UTF-8 or hold a NUL, whose name is not
NFC or holds a control character, or whose path is a folder of another
memory's path (/a.md beside /a.md/b.md) is left as it is on both sides
and printed with the reason, as is a file with a secret, one over
102,400 bytes, a link or one the store refuses; the rest of the round
goes on (exit 9).
Exit codes: 0 ok, 2 usage or local failure, 3 auth, 4 network, 5 server refused, 7 conflicts, 8 mass delete held, 9 files refused.
`)
}

func storeCommand(e env, c *common, name string, args []string) (int, error) {
	fs := flag.NewFlagSet("agentmem store "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.String("server", "", "the store host's base URL")
	stores := fs.String("stores", "", "the mounted stores as JSON (default $"+MemoryStoresEnv+")")
	mount := fs.String("mount", "", "only this mount")
	project := fs.String("project", "", "the project directory (default: the current directory)")
	configDir := fs.String("config-dir", "", "config home (default $CLAUDE_CONFIG_DIR, else ~/.claude)")
	deleteMode := fs.String("delete-mode", foldersync.DeleteCorroborate, "corroborate, immediate or never")
	allowMassDelete := fs.Bool("allow-mass-delete", false, "let a round delete more than max(50, 10%) of the tracked memories on one side")
	resync := fs.Duration("resync", storesync.DefaultResync, "watch: the time between full rounds")
	historyName := fs.String("history", "", "the file history that keeps a checkpoint before a round changes files (default store-sync-<hash of the mount folder>; with several mounts, NAME-<mount> each; see agentmem history)")
	noCheckpoint := fs.Bool("no-checkpoint", false, "take no checkpoint before a round changes files")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			storeUsage(e.stdout)
			fmt.Fprintln(e.stdout, "\nFlags:")
			fs.SetOutput(e.stdout)
			fs.PrintDefaults()
			return exitOK, nil
		}
		fmt.Fprintf(e.stderr, "agentmem store %s: %v (see agentmem store --help)\n", name, err)
		return exitError, nil
	}
	if *project != "" {
		c.project = *project
	}
	if *configDir != "" {
		c.configDir = *configDir
	}
	raw := cmp.Or(*stores, e.getenv(MemoryStoresEnv))
	if raw == "" {
		return exitError, fmt.Errorf("no stores: set $%s or pass --stores", MemoryStoresEnv)
	}
	mounts, err := storesync.ParseMounts(raw)
	if err != nil {
		return exitError, err
	}
	if *mount != "" {
		mounts = slices.DeleteFunc(mounts, func(m storesync.Mount) bool { return m.Name != *mount })
		if len(mounts) == 0 {
			return exitError, fmt.Errorf("no mount named %q", *mount)
		}
	}
	if !memoryEnabled(e, c, cmp.Or(c.project, e.cwd)) {
		return exitError, errMemoryDisabled
	}
	r, err := resolve(e, c)
	if err != nil {
		return exitError, err
	}
	auto := r.path.Dir
	if name == "ls" {
		for _, m := range mounts {
			fmt.Fprintf(e.stdout, "%-16s %-5s %-4s %s  %s\n", m.Name, m.Scope, m.Mode, m.Path, m.Dir(auto))
		}
		return exitOK, nil
	}
	if *server == "" {
		return exitError, errors.New("--server is required: the server's URL, such as --server http://127.0.0.1:8787")
	}
	if err := checkServerURL("--server", *server); err != nil {
		return exitError, err
	}
	token := e.getenv(StoreTokenEnv)
	if token == "" {
		fmt.Fprintf(e.stderr, "agentmem store %s: no token: set %s\n", name, StoreTokenEnv)
		return exitAuth, nil
	}
	var clients []*storesync.Client
	for _, m := range mounts {
		folder, err := memdir.NewDir(e.fs, m.Dir(auto), memdir.DirOptions{})
		if err != nil {
			return exitError, err
		}
		var history *filehistory.Tracker
		if !*noCheckpoint {
			home, err := configHome(e, c)
			if err != nil {
				return exitError, fmt.Errorf("no place for the round's checkpoint (%v); pass --config-dir, or --no-checkpoint to sync without one", err)
			}
			hname := *historyName
			switch {
			case hname == "":
				hname = folderHistory(storesync.CheckpointPrefix+"-", m.Dir(auto))
			case len(mounts) > 1:
				hname += "-" + m.Name // one journal per folder, never shared
			}
			if history, err = filehistory.Open(e.fs, home, hname, filehistory.Options{}); err != nil {
				return exitError, err
			}
		}
		sc, err := storesync.New(folder, storesync.Options{BaseURL: *server, Token: token, Mount: m,
			DeleteMode: *deleteMode, AllowMassDelete: *allowMassDelete, Door: storeDoor(name), History: history})
		if err != nil {
			return exitError, err
		}
		clients = append(clients, sc)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if name == "watch" {
		for _, m := range mounts {
			fmt.Fprintf(e.stdout, "watching %s for %s (every %s; Ctrl-C to stop)\n", m.Dir(auto), m.Path, *resync)
		}
		done := make(chan struct{}, len(clients))
		var failed atomic.Int32 // the exit code of a watcher that could not start
		for i, sc := range clients {
			m := mounts[i]
			go func() {
				var repeats watchRepeats
				w, err := sc.StartWatcher(ctx, foldersync.WatchOptions{Interval: *resync, Observer: func(ev foldersync.Event) {
					r := ev.Result
					repeats.quiet(&r)
					printStoreResult(e, c, m.Name, r, ev.Err)
					if ev.Err != nil {
						fmt.Fprintf(e.stderr, "agentmem store watch: %s: %s\n", m.Name, watchNext(ev))
					}
				}})
				if err != nil { // the first round failed so no retry mends it
					fmt.Fprintf(e.stderr, "agentmem store watch: %s: stopped: %s\n", m.Name, storeErrWords(err))
					failed.Store(int32(storeExit(foldersync.Result{}, err)))
				} else {
					<-w.Done()
				}
				done <- struct{}{}
			}()
		}
		for range clients {
			<-done
		}
		return int(failed.Load()), nil
	}
	code := exitOK
	for i, sc := range clients {
		res, err := sc.Sync(ctx)
		printStoreResult(e, c, mounts[i].Name, res, err)
		code = max(code, storeExit(res, err))
	}
	return code, nil
}

// storeDoor is the door the store records a command's writes under.
func storeDoor(name string) string {
	if name == "watch" {
		return teamwire.DoorSync
	}
	return teamwire.DoorCLI
}

// printStoreResult prints one round: a line per file changed, conflict,
// skip and hold, then an error if the round failed.
func printStoreResult(e env, c *common, mount string, r foldersync.Result, err error) {
	for _, files := range []struct {
		paths []string
		line  string // the mount and the path fill it in
	}{
		{r.Pulled, "%s: pulled  %s\n"},
		{r.Pushed, "%s: pushed  %s\n"},
		{r.DeletedLocal, "%s: deleted %s (deleted in the store)\n"},
		{r.DeletedRemote, "%s: deleted %s in the store\n"},
		{r.InReview, "%s: in review %s (kept here; the store serves it to nobody else until a person approves it: agentmem team review ls --store ID)\n"},
		{r.Pending, "%s: pending deletion of %s (confirmed on a later run, 30 s on)\n"},
	} {
		for _, p := range files.paths {
			fmt.Fprintf(e.stdout, files.line, mount, shown(p))
		}
	}
	for _, cf := range r.Conflicts {
		if cf.LocalKept {
			fmt.Fprintf(e.stdout, "%s: conflict %s: kept yours; the store's version is in %s\n", mount, shown(cf.Path), cf.SavedAs)
		} else {
			fmt.Fprintf(e.stdout, "%s: conflict %s: took the store's version; yours is in %s\n", mount, shown(cf.Path), cf.SavedAs)
		}
	}
	for _, s := range r.Skipped {
		why := s.Reason
		switch s.Reason {
		case skipOversized:
			why = fmt.Sprintf("oversized: the file is over %d bytes, the most a memory may hold; left as it is", storesync.MaxContentBytes)
		case skipNotRegular:
			why = "not a regular file: a link or a special file is never synced; put the file itself in the folder to share it"
		case skipSecret:
			why = secretWhy
		}
		fmt.Fprintf(e.stderr, "%s: skipped %s (%s)\n", mount, shown(s.Path), why)
	}
	if r.Checkpoint != "" {
		fmt.Fprintf(e.stdout, "%s: checkpoint %s (to put this folder's files back as they were before this round: %s)\n", mount, r.Checkpoint, rewindCommand(c, r.Checkpoint, ""))
	}
	for _, h := range r.Held {
		fmt.Fprintf(e.stderr, "%s: held %d deletion(s) on the %s side: more than %d of %d tracked memories at once; nothing was deleted (pass --allow-mass-delete to confirm)\n",
			mount, len(h.Paths), h.Side, h.Threshold, h.Tracked)
	}
	if r.BasisDamaged != nil {
		fmt.Fprintf(e.stderr, "%s: warning: %v\n", mount, r.BasisDamaged)
	}
	if r.BasisReset {
		fmt.Fprintf(e.stderr, "%s: warning: the store does not know this folder's last sync (replaced, or restored from a backup); nothing was deleted, and what it lacked was pushed\n", mount)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "agentmem store: %s: %s\n", mount, storeErrWords(err))
	}
}

// storeErrWords says what a failed store round met, where, and what to
// do, without the packages the error passed through.
func storeErrWords(err error) string {
	var api *storesync.APIError
	var netErr *storesync.NetworkError
	switch {
	case errors.As(err, &netErr):
		return strings.TrimPrefix(netErr.Error(), "storesync: ")
	case !errors.As(err, &api):
		return inUserWords(err)
	}
	where := "the store"
	if api.Store != "" {
		where = "the store at " + api.Store
	}
	said := fmt.Sprintf("(HTTP %d %s: %s)", api.Status, api.Type, api.Message)
	switch {
	case api.Status == http.StatusUnauthorized:
		return where + " does not know this token " + said + ": check " + StoreTokenEnv + "; a token just added to the server's token file is read within seconds"
	case api.Status == http.StatusForbidden && strings.Contains(api.Message, "read-only"):
		return where + " is read-only " + said + ": nothing was written; a person can change its policy with agentmem team policy --store ID"
	case api.Status == http.StatusForbidden:
		return where + " refused this token " + said + ": use a token whose grant names this store (agentmem team token --store ID, or --store '*' for every store of the organization; --manage to archive or delete it)"
	case api.Status == http.StatusNotFound:
		return where + " does not exist, or the token does not reach it " + said + ": check the store's path in $" + MemoryStoresEnv + " (agentmem store ls shows it) and that the token's grant names the store (agentmem team token --store ID)"
	}
	return where + " refused the request " + said + retryHint(api.Status)
}

// The store client's skip reasons that, beside foldersync.Skip.Refused,
// leave a file at home for good (exit 9): a secret, a file over the
// size limit, a link or special file, and a file the store refused
// ("refused: " and its message).
const (
	skipOversized  = "oversized"
	skipRefusedBy  = "refused: "
	skipNotRegular = "not a regular file"
)

// storeRefused reports whether a skip is a refusal of exitRefused.
func storeRefused(s foldersync.Skip) bool {
	return s.Refused() || s.Reason == skipSecret || s.Reason == skipOversized || s.Reason == skipNotRegular || strings.HasPrefix(s.Reason, skipRefusedBy)
}

// storeExit maps a round to the exit codes of agentmem team.
func storeExit(r foldersync.Result, err error) int {
	var apiErr *storesync.APIError
	var urlErr *url.Error
	var opErr *net.OpError
	var foreign *storesync.ForeignDirError
	switch {
	case err == nil && len(r.Held) > 0:
		return exitHeld
	case err == nil && (len(r.Conflicts) > 0 || slices.ContainsFunc(r.Skipped, func(s foldersync.Skip) bool { return s.Reason == foldersync.SkipDiverged })):
		return exitConflict
	case err == nil && slices.ContainsFunc(r.Skipped, storeRefused):
		return exitRefused
	case err == nil:
		return exitOK
	case errors.As(err, &foreign):
		return exitError
	case errors.As(err, &apiErr) && (apiErr.Status == 401 || apiErr.Status == 403):
		return exitAuth
	case errors.As(err, &apiErr):
		return exitServer
	case errors.As(err, &urlErr), errors.As(err, &opErr), errors.Is(err, syscall.ECONNREFUSED):
		// A request that did not reach the store (a local file error is
		// not one, though its errno also reads as a net.Error).
		return exitNetwork
	}
	return exitError
}
