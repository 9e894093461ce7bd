package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/agentmem-sdk/agentmem/filehistory"
	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/internal/atomicfile"
	"github.com/agentmem-sdk/agentmem/internal/synctext"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/llm/anthropic"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/agentmem-sdk/agentmem/storesync"
	"github.com/agentmem-sdk/agentmem/teammem"
	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/console"
	"github.com/agentmem-sdk/agentmem/teamserver/postgres"
	"github.com/agentmem-sdk/agentmem/teamserver/prommetrics"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
	"github.com/spf13/afero"
)

// Exit codes of the team subcommands, by error class.
const (
	exitAuth    = 3 // no token, bad token, or no access to the repo
	exitNetwork = 4 // the server could not be reached (or timed out)
	exitServer  = 5 // the server refused or answered something unusable
	exitLimit   = 6 // the repo's entry limit
	// exitConflict: the run finished, but some keys were edited on both
	// sides: a sync kept one version in the file and the other aside
	// (printed); a pull or push left them as they were for a sync.
	exitConflict = 7
	// exitHeld: the mass-delete hold kept back more deletions than one
	// run may make (printed, with the command that confirms them).
	exitHeld = 8
	// exitRefused: the run finished, but some files were refused and left
	// exactly as they are (printed with the reason): bytes that are not
	// valid UTF-8 or hold a NUL, a name not in NFC form or holding a
	// control character, a path that is a folder of another memory's
	// path (either side), a secret, a file over the size limit, or
	// another key the server refused alone. Fix or rename them; nothing
	// else waits for them.
	exitRefused = 9
)

// The codes the team commands print a skip under: the team protocol's
// (the team driver's Check reasons: teammem.Remote.Check), and the
// engine's reasons in its words.
const (
	skipNotUTF8        = "not_utf8"
	skipNULByte        = "nul_byte"
	skipNotNFC         = "not_nfc"
	skipInvalidKey     = "invalid_key"
	skipWriteFailed    = "write_failed"
	skipSecret         = "secret"
	skipTooLarge       = "too_large"
	skipTeamNotRegular = "not_regular"
	skipPathClash      = "path_clash"
	skipRefused        = "refused"
	skipConflict       = "conflict"
	skipReviewRejected = "review_rejected"
	skipOverLimit      = "over_limit"
)

// teamSkip gives the code and the words a team command prints a skip
// of the sync engine under (foldersync.Skip: the engine's reasons, the
// team driver's, a refusal by the server).
func teamSkip(s foldersync.Skip) (code, words string) {
	switch s.Reason {
	case foldersync.SkipBadName:
		if strings.ContainsFunc(s.Path, unicode.IsControl) {
			return skipInvalidKey, "" // its words name the control character
		}
		return skipNotNFC, ""
	case foldersync.SkipOversized:
		return skipTooLarge, ""
	case foldersync.SkipNotRegular:
		return skipTeamNotRegular, "" // a link is never followed
	case foldersync.SkipUnreadable, foldersync.SkipChanged, foldersync.SkipUnwritable:
		return skipWriteFailed, s.Reason
	}
	code, words, _ = strings.Cut(s.Reason, ": ")
	switch code {
	case foldersync.SkipPathClash:
		return skipPathClash, words
	case foldersync.SkipRejected:
		return skipReviewRejected, words
	case foldersync.SkipRefused:
		server, said, _ := strings.Cut(words, ": ")
		if server == skipOverLimit {
			return skipOverLimit, "" // the entry limit learned
		}
		return skipRefused, said
	}
	return code, words
}

// refusedSkip reports whether a team skip is a refusal of exitRefused.
func refusedSkip(s foldersync.Skip) bool {
	code, _ := teamSkip(s)
	switch code {
	case skipNotUTF8, skipNULByte, skipNotNFC, foldersync.SkipScreened, skipRefused, skipInvalidKey, skipWriteFailed, skipSecret, skipTooLarge, skipTeamNotRegular, skipPathClash:
		return true
	}
	return false
}

// skipWhy says in a few words why a file was refused.
var skipWhy = map[string]string{
	skipNotUTF8:        "not_utf8: the file is not valid UTF-8 text, which sync cannot carry exactly; left as it is",
	skipNULByte:        "nul_byte: the file holds a NUL byte, which not every server store can keep; left as it is",
	skipNotNFC:         "not_nfc: the file name is not in Unicode NFC form, which the server refuses; rename it",
	skipInvalidKey:     "invalid_key: the name is not one a team key may have (a control character, a character that looks like a slash, a backslash or a dot, or a path that leads out of the folder); rename it",
	skipTeamNotRegular: "not_regular: a link or a special file is never synced; put the file itself in the folder to share it",
	skipTooLarge:       fmt.Sprintf("too_large: the file is over %d bytes, the most an entry may hold; left as it is", teamwire.MaxEntryBytes),
	skipWriteFailed:    "write_failed: the server's file cannot be written here (such as a.md/b.md where a.md is a file); every other file was written, remove the clash",
	skipSecret:         secretWhy,
	skipOverLimit:      "over_limit: the repo holds as many memories as the server allows (team serve --max-entries); it waits here: delete memories you no longer need and sync, or ask the server's administrator to raise the limit",
}

// secretWhy is what a sync says of a file it keeps home for a secret.
const secretWhy = "secret: the file holds what looks like a credential (a key, a token, a password); it stays here and is never sent: remove the credential (agentmem lint names its kind) and sync again"

// shown returns a key or path fit for a terminal: quoted when it holds
// a control character or invalid UTF-8, so an escape sequence in a name
// is printed, never run.
func shown(k string) string {
	if synctext.CheckName(k) != nil {
		return strconv.Quote(k)
	}
	return k
}

// watchRepeats keeps a watcher from saying the same thing every round: a
// hold repeats until confirmed, a file left at home and what waits for
// review or a pending deletion stay so round after round. Each is said
// again only when it changes.
type watchRepeats struct{ held, skipped, inReview, pending string }

// quiet clears from r what the previous round already said.
func (w *watchRepeats) quiet(r *foldersync.Result) {
	quietRepeat(&w.held, &r.Held)
	quietRepeat(&w.skipped, &r.Skipped)
	quietRepeat(&w.inReview, &r.InReview)
	quietRepeat(&w.pending, &r.Pending)
}

// quietRepeat clears *v when it reads as *last, and makes it *last.
func quietRepeat[T any](last *string, v *[]T) {
	s := fmt.Sprint(*v)
	if s == *last {
		*v = nil
	}
	*last = s
}

// PullHistoryPrefix starts the name of the file history the team client
// commands keep a checkpoint in before a pull changes files (agentmem
// rewind undoes it): one history per team directory, so that watchers of
// two projects never write one journal.
const PullHistoryPrefix = "team-sync-"

// pullHistory returns the default history of the team directory dir
// (absolute): PullHistoryPrefix and 12 hex digits of its SHA-256.
func pullHistory(dir string) string { return folderHistory(PullHistoryPrefix, dir) }

// folderHistory names the file history a sync command keeps for the
// folder dir (absolute): prefix and 12 hex digits of dir's SHA-256, one
// per folder, so that the syncs of two folders never write one journal.
func folderHistory(prefix, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return prefix + hex.EncodeToString(sum[:6])
}

// TokenEnv names the environment variable the team client commands read
// the token from.
const TokenEnv = "AGENTMEM_TEAM_TOKEN"

func teamFlags(fs *flag.FlagSet) runner {
	return func(e env, c *common, args []string) (int, error) {
		if len(args) == 0 {
			teamUsage(e.stdout)
			return exitError, nil
		}
		sub, rest := args[0], args[1:]
		code, err := teamSub(e, c, sub, rest)
		if err != nil && !errors.Is(err, errUnknownTeamCommand) {
			// Said here, so the line names the subcommand that failed.
			fmt.Fprintf(e.stderr, "agentmem team %s: %s\n", sub, inUserWords(err))
			if code == exitOK {
				code = exitError
			}
			return code, nil
		}
		return code, err
	}
}

// errUnknownTeamCommand: the first argument of agentmem team names no
// subcommand.
var errUnknownTeamCommand = errors.New("unknown team command")

// teamSub runs one team subcommand.
func teamSub(e env, c *common, sub string, rest []string) (int, error) {
	switch sub {
	case "serve":
		return teamServe(e, rest)
	case "token":
		return teamToken(e, rest)
	case "pull", "push", "sync", "watch":
		return teamClient(e, c, sub, rest)
	case "log", "restore":
		return teamHistory(e, c, sub, rest)
	case "review":
		return teamReview(e, c, rest)
	case "policy":
		return teamPolicy(e, c, rest)
	case "help", "-h", "--help":
		teamUsage(e.stdout)
		return exitOK, nil
	}
	return exitError, fmt.Errorf("%w %q (want serve, token, pull, push, sync, watch, log, restore, review or policy)", errUnknownTeamCommand, sub)
}

func teamUsage(w io.Writer) { fmt.Fprint(w, teamUsageText) }

// twoSpaces separates a team command's synopsis from what it does.
var twoSpaces = regexp.MustCompile(`\s{2,}`)

// teamCommandUsage is the line of teamUsageText for one team command:
// its synopsis and what it does, in one or two lines.
func teamCommandUsage(name string) string {
	lines := strings.Split(teamUsageText, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, "  "+name+" ")
		if !ok {
			continue
		}
		fields := twoSpaces.Split(strings.TrimSpace(rest), 2)
		synopsis, what := strings.TrimSpace(fields[0]), ""
		if len(fields) == 2 {
			what = strings.TrimSpace(fields[1])
		} else if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "        ") {
			what = strings.TrimSpace(lines[i+1])
		}
		return "usage: agentmem team " + name + " " + synopsis + "\n\n" + what + "\n"
	}
	return "usage: agentmem team " + name + " [flags]\n"
}

const teamUsageText = `usage: agentmem team COMMAND [flags]

  serve  --addr HOST:PORT --db FILE|URL --tokens FILE [limits, --tls-cert F --tls-key F, --metrics-addr HOST:PORT]
                                                                       run the sync server (SQLite file or postgres:// URL; --help lists the limits)
  token  --org ORG --repo PATTERN | --store ID [--name WHO] [--kind person|agent] [--manage] [--add FILE]
                                                                       make a token (and its token-file entry); agent by default
  log    --server URL [--repo OWNER/NAME | --store ID] [--key KEY]     who changed what, when, through which door (one key's versions with --key)
  restore --server URL [--repo OWNER/NAME] --key KEY --version N       write an old version back as a new one (only if nothing changed meanwhile)
  pull   --server URL [--repo OWNER/NAME] [--dir DIR]                 bring the team's changes into DIR (local edits stay)
  push   --server URL [--repo OWNER/NAME] [--dir DIR]                 send local changes (and deletions)
  sync   --server URL [--repo OWNER/NAME] [--dir DIR]                 pull and push, by the three-way rules
  watch  --server URL [--repo OWNER/NAME] [--dir DIR] [--interval 30s]  keep DIR in sync both ways until interrupted
  policy --server URL [--repo OWNER/NAME | --store ID] [open|review|read-only]  show or set the review policy (setting needs a person's token)
  review ls|show|approve|reject --server URL [--repo OWNER/NAME | --store ID] [ID] [--reason WHY] [--status S]
                                                                       list, diff, approve or reject the writes waiting for review

--repo defaults to the project's git remote (owner/name), --dir to the
project's team memory directory (<auto memory>/team). Deletions propagate
unless --keep-deleted; a local file is deleted only when the server
recorded its deletion, and a run that would delete more than
max(50, 10%) of the tracked memories on one side deletes none of them
until confirmed with --allow-mass-delete. Each (server, repo, dir) keeps
its sync state in <auto memory>/.team-sync/; a server whose store was
replaced or restored from a backup is detected, and nothing is deleted.
pull never overwrites a local edit; when both sides changed a memory,
sync puts the server's version in the file and keeps yours in
<auto memory>/.team-conflicts/ (the path is printed). Before a pull
changes files it takes a checkpoint (history "team-sync-<hash of the
directory>"; --no-checkpoint turns it off) and prints the agentmem rewind command that undoes it.
The client commands read the token from $AGENTMEM_TEAM_TOKEN.
Files whose bytes are not valid UTF-8 or hold a NUL, and names not in
NFC form or holding a control character, are never pushed (nor
overwritten by a pull), nor is a pulled key written where this folder
cannot hold it (a.md/b.md beside a file a.md), nor a file with a secret
or over 250,000 bytes: each is printed with the reason, the rest goes
through, and the run exits 9. A memory
store's folder (a CLAUDE_MEMORY_STORES mount, or any folder holding a
.memory-sync manifest) is never carried: agentmem store syncs it.
Exit codes: 0 ok, 2 usage or local failure, 3 auth, 4 network or TLS, 5 server refused, 6 entry limit, 7 conflicts, 8 mass delete held, 9 files refused.
`

func subFlags(e env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("agentmem team "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseSub(e env, fs *flag.FlagSet, name string, args []string) (bool, int) {
	positional, err := parseAnywhere(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, teamCommandUsage(name))
			if name != "serve" && name != "token" {
				fmt.Fprintf(e.stdout, "The token comes from $%s.\n", TokenEnv)
			}
			fmt.Fprint(e.stdout, "\nFlags:\n")
			fs.SetOutput(e.stdout)
			fs.PrintDefaults()
			return false, exitOK
		}
		fmt.Fprintf(e.stderr, "agentmem team %s: %v (see agentmem team %s --help)\n", name, err, name)
		return false, exitError
	}
	if len(positional) > 0 {
		fmt.Fprintf(e.stderr, "agentmem team %s: unexpected argument %q\n", name, positional[0])
		return false, exitError
	}
	return true, 0
}

func teamToken(e env, args []string) (int, error) {
	fs := subFlags(e, "token")
	org := fs.String("org", "", "the tenant the token belongs to")
	name := fs.String("name", "", "who holds the token: the author of their writes in the history")
	var repos multiFlag
	fs.Var(&repos, "repo", "a repo the token may use: `owner/name` or owner/* (repeatable)")
	var stores multiFlag
	fs.Var(&stores, "store", "a memory store the token may use: * (every store of --org, and creating stores) or a store `ID` (repeatable)")
	manage := fs.Bool("manage", false, "with --store IDs: the token may also archive and delete those stores (a * token always may)")
	kind := fs.String("kind", teamserver.KindAgent, "whose token it is: person (may approve and reject reviewed writes and set review policies) or agent (its writes wait for a person under a review policy)")
	add := fs.String("add", "", "add the grant to this token file (created if missing) and print only the token")
	if ok, code := parseSub(e, fs, "token", args); !ok {
		return code, nil
	}
	if *manage && len(stores) == 0 {
		return exitError, errors.New("--manage needs --store: it lets the token archive and delete its stores")
	}
	switch {
	case *org == "":
		return exitError, errors.New("--org is required: the organization the token belongs to, such as --org acme")
	case len(repos) == 0 && len(stores) == 0:
		return exitError, errors.New("--repo or --store is required: what the token may use, such as --repo 'acme/*' or --store '*'")
	}
	token, grant, err := teamserver.NewToken(*org, repos, stores...)
	if err != nil {
		return exitError, err
	}
	if *kind != teamserver.KindPerson && *kind != teamserver.KindAgent {
		return exitError, fmt.Errorf("--kind must be person or agent, not %q", *kind)
	}
	grant.Name, grant.Manage, grant.Kind = *name, *manage, *kind
	if *add != "" {
		n, err := addGrant(e, *add, grant)
		if err != nil {
			return exitError, err
		}
		fmt.Fprintln(e.stdout, token)
		fmt.Fprintf(e.stderr, "added %s to %s (%s); a running agentmem team serve reads it within %s\n", cmp.Or(grant.Name, "the token"), *add, plural(n, "token", "tokens"), tokenReloadEvery)
		return exitOK, nil
	}
	line, err := json.Marshal(grant)
	if err != nil {
		return exitError, err
	}
	fmt.Fprintln(e.stdout, token)
	fmt.Fprintln(e.stdout, string(line))
	return exitOK, nil
}

// addGrant appends a grant to a token file, atomically and with mode 0600;
// an existing file that does not parse, or that already has a grant with
// the same name, is left as it is. It returns the number of grants.
func addGrant(e env, path string, grant teamserver.TokenGrant) (int, error) {
	var grants []teamserver.TokenGrant
	data, err := afero.ReadFile(e.fs, path)
	switch {
	case err == nil:
		if grants, err = teamserver.LoadTokens(bytes.NewReader(data)); err != nil {
			return 0, fmt.Errorf("%s is not a token file (%s); nothing was changed: give --add a new file name, or mend or move that file", path, strings.TrimPrefix(err.Error(), "server: "))
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	if grant.Name != "" && slices.ContainsFunc(grants, func(g teamserver.TokenGrant) bool { return g.Name == grant.Name }) {
		return 0, fmt.Errorf("%s already has a token named %q; pick another --name (nothing was changed)", path, grant.Name)
	}
	grants = append(grants, grant)
	out, err := json.MarshalIndent(grants, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := atomicfile.WriteFile(e.fs, path, append(out, '\n'), 0o600); err != nil {
		return 0, err
	}
	return len(grants), nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func teamServe(e env, args []string) (int, error) {
	fs := subFlags(e, "serve")
	addr := fs.String("addr", "127.0.0.1:8787", "address to listen on")
	db := fs.String("db", "agentmem-team.db", "the SQLite file that holds the team memory, or a postgres:// URL")
	tokens := fs.String("tokens", "", "the token file (JSON array of grants)")
	maxEntries := fs.Int("max-entries", teamserver.DefaultMaxEntries, "entries one repo may hold")
	maxRepos := fs.Int("max-repos", teamserver.DefaultMaxRepos, "repos one organization may create (-1: no limit)")
	dbMaxConns := fs.Int("db-max-conns", sqlite.DefaultMaxConns, "database connections this server uses at most (requests beyond wait)")
	maxConns := fs.Int("max-conns", 1024, "client connections served at once (more wait to be accepted)")
	rate := fs.Float64("rate", teamserver.DefaultRatePerToken, "requests per second per token (-1: no limit)")
	burst := fs.Int("burst", teamserver.DefaultRateBurst, "requests a token may send at once before --rate applies")
	tombstoneDays := fs.Int("tombstone-days", 30, "days a deletion is remembered")
	historyKeep := fs.Int("history-keep", 20, "versions kept per key")
	historyDays := fs.Int("history-days", 90, "days versions are kept (each key's newest always)")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics on this address (off when empty)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM) and --tls-key")
	tlsKey := fs.String("tls-key", "", "the private key (PEM) of --tls-cert")
	maxStores := fs.Int("max-stores", teamserver.DefaultMaxStores, "memory stores one organization may create")
	maxStoreMemories := fs.Int("max-store-memories", teamserver.DefaultMaxStoreMemories, "memories one memory store may hold")
	maxStoreBytes := fs.Int64("max-store-bytes", teamserver.DefaultMaxStoreBytes, "content bytes one memory store may hold")
	withConsole := fs.Bool("console", true, "serve the web console at /console (sign in with a person's token of the token file)")
	judgeModel := fs.String("judge-model", "", "have this Anthropic model read every write proposed for review and flag it for the reviewer (needs ANTHROPIC_API_KEY; off when empty)")
	if ok, code := parseSub(e, fs, "serve", args); !ok {
		return code, nil
	}
	var judge teamserver.Judge
	if *judgeModel != "" {
		key := e.getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return exitError, errors.New("--judge-model needs ANTHROPIC_API_KEY: set it, or leave --judge-model out to serve without a judge")
		}
		m, err := anthropic.New(anthropic.Options{APIKey: key, Model: *judgeModel, BaseURL: e.getenv("ANTHROPIC_BASE_URL")})
		if err != nil {
			return exitError, err
		}
		judge = teamserver.ModelJudge(m)
	}
	if *tokens == "" {
		return exitError, errors.New("--tokens is required (make entries with agentmem team token)")
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return exitError, errors.New("--tls-cert and --tls-key go together")
	}
	grants, err := readTokenFile(e, *tokens)
	if err != nil {
		return exitError, err
	}
	// Listen first: a busy port must not leave a new database file behind.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return exitError, listenError("--addr", *addr, err)
	}
	defer ln.Close()
	ln = teamserver.LimitListener(ln, *maxConns)
	var mln net.Listener
	if *metricsAddr != "" {
		if mln, err = net.Listen("tcp", *metricsAddr); err != nil {
			return exitError, listenError("--metrics-addr", *metricsAddr, err)
		}
		defer mln.Close()
	}
	var store teamserver.Store
	where := "SQLite " + filepath.Clean(*db)
	if strings.HasPrefix(*db, "postgres://") || strings.HasPrefix(*db, "postgresql://") {
		store, err = postgres.OpenMax(context.Background(), *db, *dbMaxConns)
		where = "PostgreSQL"
	} else {
		store, err = sqlite.OpenMax(*db, *dbMaxConns)
	}
	if err != nil {
		// One line: a driver's error may span several.
		return exitError, fmt.Errorf("the database %s cannot be used (%s): check --db (a SQLite file of team serve, or a reachable postgres:// URL)",
			where, strings.Join(strings.Fields(strings.NewReplacer("sqlite: ", "", "postgres: ", "", "server: ", "").Replace(err.Error())), " "))
	}
	defer store.Close()
	day := 24 * time.Hour
	// Measurements are kept only when they are served.
	var metrics *prommetrics.Metrics
	var hm teamserver.Metrics
	if mln != nil {
		metrics = prommetrics.New(store)
		hm = metrics
	}
	h, err := teamserver.NewHandler(store, teamserver.Options{Tokens: grants, MaxEntries: *maxEntries, MaxRepos: *maxRepos, RatePerToken: *rate, RateBurst: *burst, Metrics: hm, Retention: teamserver.Retention{TombstoneAge: time.Duration(*tombstoneDays) * day, HistoryKeep: *historyKeep, HistoryAge: time.Duration(*historyDays) * day},
		StoreLimits: teamserver.StoreLimits{MaxStores: *maxStores, MaxMemories: *maxStoreMemories, MaxBytes: *maxStoreBytes}, Judge: judge, Logger: slog.New(slog.NewTextHandler(e.stderr, nil))})
	if err != nil {
		return exitError, err
	}
	reportRedacted(e, h)
	var handler http.Handler = h
	if *withConsole {
		con, err := console.New(h, console.Options{Logger: slog.New(slog.NewTextHandler(e.stderr, nil))})
		if err != nil {
			return exitError, err
		}
		handler = con.Wrap(h)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	srv.RegisterOnShutdown(h.Drain) // long-polls answer at once, so the drain does not wait for them
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	errc := make(chan error, 2)
	var metricsSrv *http.Server
	if mln != nil {
		metricsSrv = &http.Server{Handler: metrics.Handler(), ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintf(e.stdout, "metrics on http://%s/metrics\n", mln.Addr())
		go func() { errc <- metricsSrv.Serve(mln) }()
	}
	fmt.Fprintf(e.stdout, "listening on %s://%s (%d tokens, %s)\n", scheme, ln.Addr(), len(grants), where)
	if *withConsole {
		fmt.Fprintf(e.stdout, "console on %s://%s%s/\n", scheme, ln.Addr(), console.DefaultPrefix)
	}
	go reloadTokens(ctx, e, *tokens, h)
	go func() {
		if *tlsCert != "" {
			errc <- srv.ServeTLS(ln, *tlsCert, *tlsKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return exitError, err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(shutdown)
	}
	if err := srv.Shutdown(shutdown); err != nil {
		return exitError, err
	}
	fmt.Fprintln(e.stdout, "stopped")
	return exitOK, nil
}

// listenError says why team serve cannot listen on addr, and what to do.
func listenError(flagName, addr string, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%s is in use by another program (another team serve?): stop it, or give %s another port", addr, flagName)
	case strings.Contains(err.Error(), "missing port"):
		return fmt.Errorf("%s %s has no port: give host:port, such as %s 127.0.0.1:8787", flagName, addr, flagName)
	}
	return fmt.Errorf("cannot listen on %s (%v): check %s", addr, err, flagName)
}

// readTokenFile reads and checks the token file team serve uses.
func readTokenFile(e env, path string) ([]teamserver.TokenGrant, error) {
	f, err := e.fs.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("there is no token file %s: make it with agentmem team token --org ORG --repo 'ORG/*' --kind person --add %s", path, path)
	}
	if err != nil {
		return nil, fmt.Errorf("read the token file: %w", err)
	}
	defer f.Close()
	return teamserver.LoadTokens(f)
}

// tokenReloadEvery is how often team serve looks at its token file.
const tokenReloadEvery = 2 * time.Second

// reportRedacted redacts the credentials the store holds from before the
// server refused them (Handler.RedactStoredCredentials) and says what it
// rewrote; a store it cannot write (a standby) is said, and served as it
// is.
func reportRedacted(e env, h *teamserver.Handler) {
	red, err := h.RedactStoredCredentials(context.Background())
	for _, what := range [][]string{red.Entries, red.Memories} {
		for _, w := range what {
			fmt.Fprintf(e.stderr, "redacted a credential stored before this server refused them: %s\n", w)
		}
	}
	if red.Versions > 0 {
		fmt.Fprintf(e.stderr, "redacted %s of memory stores that held a credential\n", plural(red.Versions, "older version", "older versions"))
	}
	for _, f := range red.Failed {
		fmt.Fprintf(e.stderr, "warning: could not redact a stored credential (%s); it is still served until that is fixed and the server restarts (a memory of an archived store: delete the memory)\n", f)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "warning: %v; credentials stored before this server refused them may still be served: they are redacted when the server next starts or reads its token file\n", err)
	}
}

// reloadTokens reads the token file again whenever its size or mtime
// changes, until ctx ends: a token added with agentmem team token --add
// (or removed by hand) takes effect without a restart. A file that does
// not read as tokens keeps the tokens in use and says why.
func reloadTokens(ctx context.Context, e env, path string, h *teamserver.Handler) {
	stamp := func() (time.Time, int64) {
		info, err := e.fs.Stat(path)
		if err != nil {
			return time.Time{}, -1
		}
		return info.ModTime(), info.Size()
	}
	mtime, size := stamp()
	t := time.NewTicker(tokenReloadEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m, n := stamp()
		if m.Equal(mtime) && n == size {
			continue
		}
		mtime, size = m, n
		grants, err := readTokenFile(e, path)
		if err == nil {
			err = h.SetTokens(grants)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "agentmem team serve: the token file %s changed but cannot be used (%v); the tokens read before stay in use: fix the file\n", path, err)
			continue
		}
		fmt.Fprintf(e.stdout, "read the token file %s again: %d tokens\n", path, len(grants))
		reportRedacted(e, h) // an organization named for the first time
	}
}

// teamHistory runs `team log` and `team restore`.
func teamHistory(e env, c *common, name string, args []string) (int, error) {
	fs := subFlags(e, name)
	serverURL := fs.String("server", "", "the sync server's base URL")
	repo := fs.String("repo", "", "owner/name (default: the project's git remote)")
	project := fs.String("project", "", "the project directory (default: the current directory)")
	key := fs.String("key", "", "the memory's key, such as deploy.md")
	var version *int64
	var store *string
	if name == "restore" {
		version = fs.Int64("version", 0, "the version to write back")
		store = new(string)
	} else {
		version = new(int64)
		store = fs.String("store", "", "a memory store's ID or name: its versions, instead of a repo's log")
	}
	if ok, code := parseSub(e, fs, name, args); !ok {
		return code, nil
	}
	if *serverURL == "" {
		return exitError, errors.New("--server is required: the team server's URL, such as --server http://127.0.0.1:8787")
	}
	if *store != "" {
		if name != "log" || *repo != "" || *key != "" {
			return exitError, errors.New("--store goes with agentmem team log alone (not --repo or --key)")
		}
		return storeLog(e, *serverURL, *store)
	}
	if err := checkServerURL("--server", *serverURL); err != nil {
		return exitError, err
	}
	r, err := projectRepo(e, *repo, *project)
	if err != nil {
		return exitError, err
	}
	*repo = r
	again := "--server " + shellQuote(*serverURL) + " --repo " + shellQuote(*repo)
	token := e.getenv(TokenEnv)
	if token == "" {
		return reviewExit(e, name, errNoToken), nil
	}
	scratch, err := memdir.NewDir(e.fs, os.TempDir(), memdir.DirOptions{Team: true})
	if err != nil {
		return exitError, err
	}
	client, err := teammem.New(scratch, teammem.Options{BaseURL: *serverURL, Repo: *repo, Token: token, Door: teamwire.DoorCLI})
	if err != nil {
		return exitError, err
	}
	ctx := context.Background()
	switch {
	case name == "restore":
		if *key == "" || *version <= 0 {
			return exitError, errors.New("restore needs --key and --version (see agentmem team log --key)")
		}
		v, err := client.Restore(ctx, *key, *version)
		if errors.Is(err, teammem.ErrInReview) {
			fmt.Fprintf(e.stdout, "in review %s: the restore of version %d waits for a person's approval (agentmem team review ls)\n", shown(*key), *version)
			return exitOK, nil
		}
		if errors.Is(err, teammem.ErrRejectedInReview) {
			fmt.Fprintf(e.stderr, "agentmem team restore: %v\n", err)
			return exitServer, nil
		}
		var dv *teammem.DeletionVersionError
		if errors.As(err, &dv) {
			fmt.Fprintf(e.stderr, "agentmem team restore: version %d of %s is its deletion: there is no content to restore (nothing was written)\n", dv.Version, dv.Key)
			if dv.LastWithContent > 0 {
				fmt.Fprintf(e.stderr, "  the last version with content is %d: agentmem team restore %s --key %s --version %d\n", dv.LastWithContent, again, shellQuote(dv.Key), dv.LastWithContent)
			}
			return exitError, nil
		}
		if errors.Is(err, teammem.ErrRestoreUnchanged) {
			fmt.Fprintf(e.stdout, "%s already holds the content of version %d: nothing was written\n", shown(*key), *version)
			return exitOK, nil
		}
		if err != nil {
			return classExit(e, name, err), nil
		}
		fmt.Fprintf(e.stdout, "restored %s from version %d as version %d\n", shown(*key), *version, v)
	case *key != "":
		hv, err := client.History(ctx, *key, 0)
		if err != nil {
			return classExit(e, name, err), nil
		}
		for _, v := range hv.Versions {
			what := v.Checksum
			if v.Deleted {
				what = "deleted"
			}
			fmt.Fprintf(e.stdout, "%6d  %s  %-12s %-16s %s%s\n", v.Version, v.Time, v.Author, cmp.Or(v.Door, "-"), what, provenanceNote(v.Provenance))
		}
	default:
		log, err := client.Log(ctx, 0)
		if err != nil {
			return classExit(e, name, err), nil
		}
		for _, l := range log {
			fmt.Fprintf(e.stdout, "%6d  %s  %-12s %-16s %s%s\n", l.Version, l.Time, l.Author, cmp.Or(l.Door, "-"), strings.Join(l.Keys, " "), provenanceNote(l.Provenance))
		}
	}
	return exitOK, nil
}

func teamClient(e env, c *common, name string, args []string) (int, error) {
	fs := subFlags(e, name)
	serverURL := fs.String("server", "", "the sync server's base URL")
	repo := fs.String("repo", "", "owner/name (default: the project's git remote)")
	dir := fs.String("dir", "", "the local team directory (default: the project's <auto memory>/team)")
	project := fs.String("project", "", "the project directory (default: the current directory)")
	configDir := fs.String("config-dir", "", "config home, for the default --dir (default $CLAUDE_CONFIG_DIR, else ~/.claude)")
	keepDeleted := fs.Bool("keep-deleted", false, "do not propagate deletions in either direction")
	_ = fs.Bool("propagate-deletes", true, "deletions propagate by default (kept for old scripts)")
	interval, verbose := new(time.Duration), new(bool)
	if name == "watch" {
		interval = fs.Duration("interval", foldersync.DefaultInterval, "the longest time between two syncs")
		verbose = fs.Bool("verbose", false, "log every sync decision to stderr")
	}
	stateFile := fs.String("state", "", "the sync state file (default <auto memory>/.team-sync/<server+repo>.json)")
	historyName := fs.String("history", "", "the file history that keeps a checkpoint before each pull that changes files (default team-sync-<hash of the team directory>; see agentmem history)")
	noCheckpoint := fs.Bool("no-checkpoint", false, "take no checkpoint before a pull changes files")
	allowMassDelete := fs.Bool("allow-mass-delete", false, "let this run delete more than max(50, 10%) of the tracked memories on one side")
	if ok, code := parseSub(e, fs, name, args); !ok {
		return code, nil
	}
	if *serverURL == "" {
		return exitError, errors.New("--server is required: the team server's URL, such as --server http://127.0.0.1:8787")
	}
	if err := checkServerURL("--server", *serverURL); err != nil {
		return exitError, err
	}
	if *project != "" {
		c.project = *project
	}
	if *configDir != "" {
		c.configDir = *configDir
	}
	o := teamClientOptions{server: *serverURL, repo: *repo, dir: *dir, state: *stateFile, history: *historyName, keepDeleted: *keepDeleted,
		allowMassDelete: *allowMassDelete, mustExist: name == "push", checkpoint: !*noCheckpoint && name != "push", // a push changes no local file
		door: teamwire.DoorCLI}
	if name == "watch" {
		o.door = teamwire.DoorSync
		level := slog.LevelWarn
		if *verbose {
			level = slog.LevelDebug
		}
		o.log = slog.New(&lineHandler{w: e.stderr, prefix: "agentmem team watch", level: level, attrs: *verbose, mu: new(sync.Mutex)})
	}
	client, abs, err := newTeamClient(e, c, &o)
	if errors.Is(err, errNoToken) {
		return reviewExit(e, name, err), nil
	}
	if err != nil {
		return exitError, err
	}
	*repo = o.repo
	again := "--server " + shellQuote(*serverURL) + " --repo " + shellQuote(*repo)
	if *dir != "" {
		again += " --dir " + shellQuote(*dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st := client.State()
	out := teamOutput{e: e, c: c, name: name, dir: abs, repo: *repo, again: again, st: st}
	if name == "watch" {
		if *interval <= 0 {
			return exitError, errors.New("--interval must be positive")
		}
		var repeats watchRepeats
		var sentBefore int
		var bytesBefore int64
		w, err := client.StartWatcher(ctx, foldersync.WatchOptions{Interval: *interval, Observer: func(ev foldersync.Event) {
			r := ev.Result
			repeats.quiet(&r)
			requests, sent := client.Remote().Traffic()
			out.requests, out.sent = requests-sentBefore, sent-bytesBefore
			sentBefore, bytesBefore = requests, sent
			if *verbose || out.changed(r) {
				out.print(r, ev.Err)
			}
			st.FileError = nil // said once
			if ev.Err != nil {
				fmt.Fprintf(e.stderr, "agentmem team watch: %s (%s)\n", syncErrWords(ev.Err), watchNext(ev))
			}
		}})
		if err != nil {
			return classExit(e, name, err), nil
		}
		fmt.Fprintf(e.stdout, "watching %s for %s (every %s; Ctrl-C to stop)\n", abs, *repo, *interval)
		<-ctx.Done()
		err = w.Close()
		fmt.Fprintln(e.stdout, "stopped")
		return exitOK, err
	}
	var res foldersync.Result
	switch name {
	case "pull":
		res, err = client.Pull(ctx, st)
	case "push":
		res, err = client.Push(ctx, st)
	case "sync":
		res, err = client.Sync(ctx, st)
	}
	out.requests, out.sent = client.Remote().Traffic()
	out.print(res, err)
	if err != nil {
		return classExit(e, name, err), nil
	}
	if len(res.Held) > 0 {
		return exitHeld, nil
	}
	switch {
	case len(res.Conflicts) > 0 || slices.ContainsFunc(res.Skipped, func(s foldersync.Skip) bool {
		return s.Reason == foldersync.SkipConflict || s.Reason == foldersync.SkipDiverged
	}):
		return exitConflict, nil
	case slices.ContainsFunc(res.Skipped, func(s foldersync.Skip) bool {
		code, _ := teamSkip(s)
		return code == skipOverLimit
	}):
		return exitLimit, nil // the repo is full: what did not fit waits
	case slices.ContainsFunc(res.Skipped, refusedSkip):
		return exitRefused, nil
	}
	return exitOK, nil
}

// teamOutput prints the rounds of one team command: again holds the
// flags that name the server and repo, for the commands it suggests;
// requests and sent are what the round sent.
type teamOutput struct {
	e         env
	c         *common
	name, dir string
	repo      string // owner/name on the server
	again     string
	st        *teammem.SyncState
	requests  int
	sent      int64
}

// changed reports whether a round did or found anything worth a line.
func (o teamOutput) changed(r foldersync.Result) bool {
	return len(r.Pulled)+len(r.DeletedLocal)+len(r.Pushed)+len(r.DeletedRemote)+len(r.Conflicts)+len(r.Skipped)+len(r.Held)+len(r.InReview) > 0 ||
		r.BasisReset || o.st.FileError != nil
}

// print prints what a round did.
func (o teamOutput) print(r foldersync.Result, err error) {
	e, name, again := o.e, o.name, o.again
	if o.st.FileError != nil {
		fmt.Fprintf(e.stderr, "warning: %v\n", o.st.FileError)
	}
	if r.BasisReset && o.st.Reset != "" {
		fmt.Fprintf(e.stderr, "warning: %s; this run deletes nothing, keeps every local memory and pushes what the server lacks\n", o.st.Reset)
	}
	for _, k := range r.Pulled {
		fmt.Fprintln(e.stdout, "wrote   "+shown(k))
	}
	for _, k := range r.DeletedLocal {
		fmt.Fprintln(e.stdout, "deleted "+shown(k))
	}
	for _, k := range r.Pushed {
		fmt.Fprintln(e.stdout, "pushed  "+shown(k))
	}
	for _, k := range r.DeletedRemote {
		fmt.Fprintln(e.stdout, "removed "+shown(k)+" on the server")
	}
	for _, k := range r.InReview {
		fmt.Fprintln(e.stdout, "in review "+shown(k)+" (kept here; the server serves it to nobody else until a person approves it: agentmem team review ls)")
	}
	for _, cf := range r.Conflicts {
		if cf.LocalKept {
			fmt.Fprintf(e.stdout, "conflict %s: kept yours; the server's version is kept at %s\n", shown(cf.Path), cf.SavedAs)
			continue
		}
		fmt.Fprintf(e.stdout, "conflict %s: took the server's version; yours is kept at %s\n", shown(cf.Path), cf.SavedAs)
	}
	for _, s := range r.Skipped {
		code, words := teamSkip(s)
		why := code
		if words != "" {
			why += ": " + words
		}
		switch code {
		case skipConflict:
			why = "conflict: changed here and on the server; your file is untouched, agentmem team sync settles it"
		case skipReviewRejected:
			why = "review_rejected: a person rejected this very change"
			if words != "" {
				why += " (" + strconv.Quote(words) + ")"
			}
			why += "; see agentmem team review ls --status rejected; change or remove the file"
		case skipPathClash: // which file is in the way
			if other, ok := strings.CutSuffix(words, " is in the way"); ok {
				if info, err := e.fs.Stat(filepath.Join(o.dir, filepath.FromSlash(other))); err == nil {
					kind := "the file "
					if info.IsDir() {
						kind = "the folder "
					}
					words = kind + words
				}
			}
			why = "path_clash: " + words + " (a file here where the server has a folder, or the other way round); rename one of them"
		}
		if w, ok := skipWhy[code]; ok && (code != skipWriteFailed || words == "") {
			why = w // the engine's own words say more (unwritable, unreadable)
		}
		fmt.Fprintf(e.stdout, "skipped %s (%s)\n", shown(s.Path), why)
	}
	for _, h := range r.Held {
		where := "removed from this directory"
		if h.Side == "remote" {
			where = "deleted on the server"
		}
		fmt.Fprintf(e.stderr, "held: %d memories would be %s (of %d tracked; at most %d at once); nothing was deleted\n", len(h.Paths), where, h.Tracked, h.Threshold)
		if h.Side == "remote" {
			fmt.Fprintf(e.stderr, "  to delete them: agentmem team %s %s --allow-mass-delete; to bring them back here: agentmem team pull %s --keep-deleted\n", cmp.Or(name, "sync"), again, again)
		} else {
			fmt.Fprintf(e.stderr, "  to delete them here: agentmem team %s %s --allow-mass-delete\n", cmp.Or(name, "sync"), again)
		}
	}
	if r.Checkpoint != "" {
		fmt.Fprintf(e.stdout, "checkpoint %s (undo this pull: %s)\n", r.Checkpoint, rewindCommand(o.c, r.Checkpoint, ""))
	}
	if err == nil && (o.requests > 0 || len(r.Pulled)+len(r.Pushed)+len(r.InReview) > 0) {
		var parts []string
		for _, p := range []struct {
			n    int
			verb string
		}{{len(r.Pulled), "pulled"}, {len(r.Pushed), "pushed"}, {len(r.InReview), "sent for review"}} {
			if p.n > 0 {
				parts = append(parts, plural(p.n, "memory", "memories")+" "+p.verb)
			}
		}
		what := "in step with the server, nothing to pull or push"
		if len(parts) > 0 {
			what = strings.Join(parts, ", ")
		} else if len(r.Skipped)+len(r.Held)+len(r.Conflicts) > 0 {
			what = "nothing pulled or pushed; what waits is said above"
		} else if o.repo != "" && folderHoldsNoMemory(o.dir) {
			// A new repo, or a misspelt one: say which, so a typo in
			// --repo does not read as success.
			what = "repo " + o.repo + " holds no team memory on the server yet and this folder none; check --repo, or write a memory here and push to start it"
		}
		fmt.Fprintf(e.stdout, "done (%s): %s, %d bytes sent\n", what, plural(o.requests, "request", "requests"), o.sent)
	}
}

// folderHoldsNoMemory reports whether dir holds no Markdown file below
// it (hidden folders aside), or does not exist.
func folderHoldsNoMemory(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipDir
		}
		if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return !found
}

// lineHandler prints a library's log records as a command's own lines:
// "agentmem team watch: what happened", without the package's name, the
// error when there is one, and the other attributes only when asked
// (--verbose).
type lineHandler struct {
	w      io.Writer
	prefix string
	level  slog.Level
	attrs  bool
	with   []slog.Attr // from Logger.With
	mu     *sync.Mutex // shared by the handlers With derives
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix + ": " + inUserWords(errors.New(r.Message)))
	say := func(a slog.Attr) bool {
		if a.Key == "error" || h.attrs {
			fmt.Fprintf(&b, " (%s: %v)", a.Key, a.Value)
		}
		return true
	}
	for _, a := range h.with {
		say(a)
	}
	r.Attrs(say)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintln(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	next := *h
	next.with = append(slices.Clip(h.with), as...)
	return &next
}
func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// classExit prints a one-line error and maps its class to an exit code.
func classExit(e env, name string, err error) int {
	fmt.Fprintf(e.stderr, "agentmem team %s: %s\n", name, syncErrWords(err))
	var se *teammem.SyncError
	if !errors.As(err, &se) {
		return exitError
	}
	switch se.Class {
	case teammem.ClassAuth, teammem.ClassForbidden:
		return exitAuth
	case teammem.ClassNetwork, teammem.ClassTimeout, teammem.ClassTLS:
		return exitNetwork
	case teammem.ClassTooManyEntries:
		return exitLimit
	}
	return exitServer
}

// syncErrWords says what a failed team round met, where, and what to
// do, without the packages the error passed through.
func syncErrWords(err error) string {
	var se *teammem.SyncError
	if !errors.As(err, &se) || se.Err == nil {
		return inUserWords(err)
	}
	switch se.Class {
	case teammem.ClassNetwork, teammem.ClassTimeout, teammem.ClassAuth, teammem.ClassForbidden, teammem.ClassTLS, teammem.ClassTooManyEntries:
		return se.Err.Error() // its own words say what failed, where and what to do
	}
	if se.Code == teamwire.CodeReadOnly {
		return se.Err.Error() // its own words name the server and the fix
	}
	if se.Status == 0 {
		return inUserWords(err)
	}
	return fmt.Sprintf("the team server refused (HTTP %d): %v%s", se.Status, se.Err, retryHint(se.Status))
}

// retryHint is what to do about a refusal that passes with time: too
// many requests, or a server error ("" for any other status).
func retryHint(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "; the server limits each token's requests (team serve --rate): wait a minute and run it again"
	case status >= 500:
		return "; the files here are as they were: run it again later, and if it persists see the server's log"
	}
	return ""
}

// teamClientOptions are the team client flags shared by team pull, push,
// sync, watch and mcp --team-server.
type teamClientOptions struct {
	server, repo, dir, state, history string
	checkpoint                        bool // keep a checkpoint in history (default pullHistory(dir))
	keepDeleted, allowMassDelete      bool
	// mustExist: the team directory itself must exist (push).
	mustExist bool
	// door is the door the server records the client's writes under
	// (default teamwire.DoorSync).
	door string
	// log receives the client's warnings (none when nil).
	log *slog.Logger
}

var errNoToken = errors.New("no token: set " + TokenEnv)

// projectRepo is repo, else the owner/name of the github.com remote of
// the project (default the current directory), for a --repo not given.
func projectRepo(e env, repo, project string) (string, error) {
	if repo != "" {
		return repo, nil
	}
	r, err := teammem.RepoFromGitConfig(e.fs, cmp.Or(project, e.cwd), nil)
	if err != nil {
		return "", errors.New("--repo is required (owner/name, such as --repo acme/shop): the project has no github.com remote (git remote get-url origin) to read it from")
	}
	return r, nil
}

// newTeamClient builds the sync client the flags describe: --repo from the
// project's git remote and --dir from its memory directory when not given.
// It fills in o.repo and returns the client and the absolute team
// directory.
func newTeamClient(e env, c *common, o *teamClientOptions) (*teammem.Client, string, error) {
	if !memoryEnabled(e, c, cmp.Or(c.project, e.cwd)) {
		return nil, "", errMemoryDisabled
	}
	repo, err := projectRepo(e, o.repo, c.project)
	if err != nil {
		return nil, "", err
	}
	o.repo = repo
	if !teamserver.ValidRepoSlug(o.repo) {
		return nil, "", fmt.Errorf("--repo %s is not a repo name: give owner/name, letters, digits, '-', '_' and '.' only, such as --repo acme/shop", shellQuote(o.repo))
	}
	explicit := o.dir != ""
	if !explicit {
		r, err := resolve(e, c)
		if err != nil {
			return nil, "", fmt.Errorf("--dir is required: %v", err)
		}
		o.dir = memdir.TeamMemPath(r.path.Dir)
	}
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return nil, "", err
	}
	// A mistyped --dir is an error, not a new tree: the team directory may
	// be created (a first pull), its parent may not. The project's own
	// memory directory is created on a first pull.
	if ok, _ := afero.DirExists(e.fs, filepath.Dir(abs)); explicit && !ok {
		return nil, "", fmt.Errorf("%s does not exist: check --dir (nothing was created)", filepath.Dir(abs))
	}
	if ok, _ := afero.DirExists(e.fs, abs); o.mustExist && !ok {
		return nil, "", fmt.Errorf("nothing to push: %s does not exist", abs)
	}
	token := e.getenv(TokenEnv)
	if token == "" {
		return nil, "", errNoToken
	}
	o.state = cmp.Or(o.state, teammem.StatePath(abs, o.server, o.repo))
	var history *filehistory.Tracker
	if o.checkpoint && o.history == "" {
		o.history = pullHistory(abs)
	}
	if o.checkpoint {
		home, err := configHome(e, c)
		if err != nil {
			return nil, "", fmt.Errorf("no place for the pull's checkpoint (%v); pass --config-dir, or --no-checkpoint to pull without one", err)
		}
		if history, err = filehistory.Open(e.fs, home, o.history, filehistory.Options{}); err != nil {
			return nil, "", err
		}
	}
	team, err := memdir.NewDir(e.fs, abs, memdir.DirOptions{Team: true})
	if err != nil {
		return nil, "", err
	}
	client, err := teammem.New(team, teammem.Options{BaseURL: o.server, Repo: o.repo, Token: token, KeepDeleted: o.keepDeleted,
		AllowMassDelete: o.allowMassDelete, StateFile: o.state, History: history, SkipDirs: storeMountDirs(e), Door: o.door, Logger: o.log})
	return client, abs, err
}

// storeMountDirs returns the folders of the team directory that the
// memory stores of $CLAUDE_MEMORY_STORES mount: team sync leaves them to
// agentmem store (a folder with a store's manifest is left alone anyway;
// this covers a mount not synced yet). Stores that do not parse are
// agentmem store's to report.
func storeMountDirs(e env) []string {
	raw := e.getenv(MemoryStoresEnv)
	if raw == "" {
		return nil
	}
	mounts, err := storesync.ParseMounts(raw)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, m := range mounts {
		if m.Scope != "user" {
			dirs = append(dirs, m.Name)
		}
	}
	return dirs
}

// watchNext says what a watcher does after a failed round: it retries,
// or it paused on a failure no retry mends (both watch commands).
func watchNext(ev foldersync.Event) string {
	if ev.Paused != "" {
		return "paused: " + ev.Paused + "; fix it, then restart the watcher (removing a file resumes it too)"
	}
	return "retrying"
}

// plural is n and the word for n of them.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
