package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/linediff"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teammem"
)

// provenanceNote prints what a history line knows beyond author and door.
func provenanceNote(p teamwire.Provenance) string {
	var parts []string
	if p.Session != "" {
		parts = append(parts, "session="+shown(p.Session))
	}
	if p.Origin != "" {
		parts = append(parts, "origin="+p.Origin)
	}
	if p.Reviewer != "" {
		parts = append(parts, "approved-by="+shown(p.Reviewer))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  (" + strings.Join(parts, " ") + ")"
}

// reviewClient speaks to the server's review endpoint for one repo or
// store.
type reviewClient struct {
	base, token string
	query       url.Values // repo= or store=
	http        *http.Client
}

// reviewTarget reads the --server, --repo and --store flags shared by
// team review and team policy.
func newReviewClient(e env, c *common, serverURL, repo, store, project string) (*reviewClient, error) {
	if serverURL == "" {
		return nil, errors.New("--server is required: the server's URL, such as --server http://127.0.0.1:8787")
	}
	if err := checkServerURL("--server", serverURL); err != nil {
		return nil, err
	}
	q := url.Values{}
	switch {
	case store != "" && repo != "":
		return nil, errors.New("give --repo or --store, not both")
	case store != "":
		// Set once the token is known: a name is looked up.
	default:
		if repo == "" {
			r, err := teammem.RepoFromGitConfig(e.fs, cmp.Or(project, e.cwd), nil)
			if err != nil {
				return nil, fmt.Errorf("--repo or --store is required: the project has no github.com remote to read a repo from (%v)", err)
			}
			repo = r
		}
		q.Set("repo", repo)
	}
	token := e.getenv(TokenEnv)
	if store != "" && e.getenv(StoreTokenEnv) != "" {
		token = e.getenv(StoreTokenEnv)
	}
	if token == "" {
		return nil, errNoToken
	}
	if store != "" {
		id, err := storeIDFor(serverURL, token, store)
		if err != nil {
			return nil, err
		}
		q.Set("store", id)
	}
	return &reviewClient{base: strings.TrimRight(serverURL, "/") + teamwire.ReviewPath, token: token, query: q, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// storeIDFor returns the ID of the memory store --store names: an ID
// (memstore_...) as it is, or a store's name looked up among the stores
// the token reaches, so a person may give either.
func storeIDFor(serverURL, token, store string) (string, error) {
	if strings.HasPrefix(store, "memstore_") {
		if strings.ContainsAny(store, "/?#") {
			return "", fmt.Errorf("%q is not a memory store ID (memstore_...) nor a name: give one of them", store)
		}
		return store, nil
	}
	rc := &reviewClient{base: strings.TrimRight(serverURL, "/") + "/v1/memory_stores", token: token, http: &http.Client{Timeout: 30 * time.Second}}
	var page struct {
		Data []struct{ ID, Name string } `json:"data"`
	}
	if err := rc.do(http.MethodGet, "", url.Values{"limit": {"100"}}, nil, &page); err != nil {
		return "", fmt.Errorf("look up the memory store named %q: %w", store, err)
	}
	var ids []string
	for _, st := range page.Data {
		if st.Name == store {
			ids = append(ids, st.ID)
		}
	}
	switch len(ids) {
	case 0:
		var names []string
		for _, st := range page.Data {
			names = append(names, st.Name)
		}
		return "", fmt.Errorf("the token reaches no memory store named %q (it reaches: %s); give a store's name or its ID (memstore_...)", store, cmp.Or(strings.Join(names, ", "), "none"))
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%d memory stores are named %q (%s): give the ID of the one you mean", len(ids), store, strings.Join(ids, ", "))
}

// reviewError is a refusal of the review endpoint.
type reviewError struct {
	status        int
	code, message string
}

func (e *reviewError) Error() string {
	if e.code != "" {
		return fmt.Sprintf("the server refused (%d %s): %s", e.status, e.code, e.message)
	}
	return fmt.Sprintf("the server refused (%d): %s", e.status, e.message)
}

func (rc *reviewClient) do(method, rel string, query url.Values, body, out any) error {
	q := url.Values{}
	maps.Copy(q, rc.query)
	maps.Copy(q, query)
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, rc.base+rel+"?"+q.Encode(), r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+rc.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(teamwire.DoorHeader, teamwire.DoorCLI)
	resp, err := rc.http.Do(req)
	if err != nil {
		return fmt.Errorf("the server could not be reached: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("the reply was cut off: %w", err)
	}
	if resp.StatusCode >= 300 {
		var eb teamwire.ErrorBody
		_ = json.Unmarshal(raw, &eb)
		msg := cmp.Or(eb.Error.Message, http.StatusText(resp.StatusCode))
		return &reviewError{status: resp.StatusCode, code: eb.Error.Details.ErrorCode, message: msg}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("the server's reply is not the JSON of this call: %w", err)
		}
	}
	return nil
}

// reviewExit prints a refusal and maps it to an exit code: 3 for a
// token that may not, 5 for any other refusal, 4 for no answer.
func reviewExit(e env, name string, err error) int {
	if errors.Is(err, errNoToken) {
		fmt.Fprintf(e.stderr, "agentmem team %s: no token: set %s\n", name, TokenEnv)
		return exitAuth
	}
	fmt.Fprintf(e.stderr, "agentmem team %s: %v\n", name, err)
	var re *reviewError
	if errors.As(err, &re) {
		if re.status == http.StatusUnauthorized || re.status == http.StatusForbidden {
			return exitAuth
		}
		return exitServer
	}
	return exitNetwork
}

// teamPolicy runs `team policy`: shows the review policy, or sets it.
func teamPolicy(e env, c *common, args []string) (int, error) {
	fs := subFlags(e, "policy")
	serverURL := fs.String("server", "", "the sync server's base URL")
	repo := fs.String("repo", "", "owner/name (default: the project's git remote)")
	store := fs.String("store", "", "a memory store's ID or name, instead of a repo")
	project := fs.String("project", "", "the project directory (default: the current directory)")
	positional, err := parseAnywhere(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(e.stdout, "usage: agentmem team policy --server URL [--repo OWNER/NAME | --store ID] [open|review|read-only]")
			return exitOK, nil
		}
		return exitError, fmt.Errorf("agentmem team policy: %v", err)
	}
	if len(positional) > 1 {
		return exitError, errors.New("agentmem team policy takes at most one policy: open, review or read-only")
	}
	rc, err := newReviewClient(e, c, *serverURL, *repo, *store, *project)
	if err != nil {
		if errors.Is(err, errNoToken) {
			return reviewExit(e, "policy", err), nil
		}
		return exitError, err
	}
	var pv teamwire.PolicyView
	if len(positional) == 1 {
		p := positional[0]
		if p != "open" && p != "review" && p != "read-only" {
			return exitError, fmt.Errorf("the policy must be open, review or read-only, not %q", p)
		}
		err = rc.do(http.MethodPut, "/policy", nil, map[string]string{"policy": p}, &pv)
	} else {
		err = rc.do(http.MethodGet, "/policy", nil, nil, &pv)
	}
	if err != nil {
		return reviewExit(e, "policy", err), nil
	}
	fmt.Fprintf(e.stdout, "%s %s: %s\n", pv.Kind, pv.Target, pv.Policy)
	return exitOK, nil
}

// teamReview runs `team review ls|show|approve|reject`.
func teamReview(e env, c *common, args []string) (int, error) {
	usage := "usage: agentmem team review ls|show|approve|reject --server URL [--repo OWNER/NAME | --store ID] [ID | --all [--yes]] [--status S] [--reason WHY]"
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.stdout, usage)
		fmt.Fprint(e.stdout, `
  ls       the writes waiting for review (--status approved, rejected, superseded or all for the others)
  show ID  one proposal: who, through which door, and a unified diff against what the server holds now
  approve ID   write it, recorded with its author and door and you as reviewer (a person's token)
  reject ID --reason WHY   never write it; kept with the reason (a person's token)
  approve --all, reject --all --reason WHY   every pending proposal of the repo or store:
           says how many and stops, until run again with --yes
`)
		if len(args) == 0 {
			return exitError, nil
		}
		return exitOK, nil
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "ls", "show", "approve", "reject":
	default:
		return exitError, fmt.Errorf("unknown review command %q (want ls, show, approve or reject)", sub)
	}
	fs := subFlags(e, "review "+sub)
	serverURL := fs.String("server", "", "the sync server's base URL")
	repo := fs.String("repo", "", "owner/name (default: the project's git remote)")
	store := fs.String("store", "", "a memory store's ID or name, instead of a repo")
	project := fs.String("project", "", "the project directory (default: the current directory)")
	status := fs.String("status", "pending", "ls: pending, approved, rejected, superseded or all")
	reason := fs.String("reason", "", "reject: why (kept in the proposal's history; its author sees it)")
	all := fs.Bool("all", false, "approve, reject: every pending proposal of the repo or store")
	yes := fs.Bool("yes", false, "with --all: go ahead (without it, the count is shown and nothing decided)")
	positional, err := parseAnywhere(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(e.stdout, usage)
			return exitOK, nil
		}
		return exitError, fmt.Errorf("agentmem team review %s: %v", sub, err)
	}
	id := ""
	switch {
	case sub == "ls" && len(positional) > 0:
		return exitError, fmt.Errorf("agentmem team review ls takes no argument (got %q)", positional[0])
	case *all && (sub == "ls" || sub == "show" || len(positional) > 0):
		return exitError, fmt.Errorf("agentmem team review %s: --all decides every pending proposal; give it to approve or reject, without an ID", sub)
	case *all:
	case sub != "ls" && len(positional) != 1:
		return exitError, fmt.Errorf("agentmem team review %s needs one proposal ID, or --all (see agentmem team review ls)", sub)
	case sub != "ls":
		id = positional[0]
		if !strings.HasPrefix(id, "prop_") || strings.ContainsAny(id, "/?#") {
			return exitError, fmt.Errorf("%q is not a proposal ID (prop_...; see agentmem team review ls)", id)
		}
	}
	if sub == "reject" && strings.TrimSpace(*reason) == "" {
		return exitError, errors.New("agentmem team review reject needs --reason: it is kept with the proposal and its author sees it")
	}
	rc, err := newReviewClient(e, c, *serverURL, *repo, *store, *project)
	if err != nil {
		if errors.Is(err, errNoToken) {
			return reviewExit(e, "review", err), nil
		}
		return exitError, err
	}
	name := "review " + sub
	switch sub {
	case "ls":
		ps, err := rc.proposals(*status)
		if err != nil {
			return reviewExit(e, name, err), nil
		}
		if len(ps) == 0 {
			fmt.Fprintf(e.stdout, "no %s proposals\n", strings.ReplaceAll(*status, "all", ""))
		}
		for _, p := range ps {
			printProposal(e, p)
		}
		if len(ps) > 0 {
			fmt.Fprintf(e.stdout, "%d %s proposals\n", len(ps), strings.ReplaceAll(*status, "all", ""))
		}
	case "show":
		var d teamwire.ProposalDetail
		if err := rc.do(http.MethodGet, "/proposals/"+url.PathEscape(id), nil, nil, &d); err != nil {
			return reviewExit(e, name, err), nil
		}
		printProposal(e, d.Proposal)
		var cur, next []byte
		if d.Current.Exists {
			cur = []byte(d.Current.Content)
		}
		if d.Proposal.Content != nil && d.Proposal.Op != "delete" && d.Proposal.Op != "deleted" {
			next = []byte(*d.Proposal.Content)
		}
		diff := linediff.Unified("current/"+d.Proposal.Key, "proposed/"+d.Proposal.Key, cur, next)
		if diff == "" {
			fmt.Fprintln(e.stdout, "(the server already holds exactly this)")
		}
		fmt.Fprint(e.stdout, diff)
	case "approve", "reject":
		if *all {
			return decideAll(e, rc, name, sub, *reason, *yes), nil
		}
		var p teamwire.ProposalView
		var body any
		if sub == "reject" {
			body = teamwire.RejectBody{Reason: *reason}
		}
		if err := rc.do(http.MethodPost, "/proposals/"+url.PathEscape(id)+"/"+sub, nil, body, &p); err != nil {
			return reviewExit(e, name, err), nil
		}
		fmt.Fprintf(e.stdout, "%s %s %s\n", p.Status, p.ID, shown(p.Key))
	}
	return exitOK, nil
}

// proposals lists every proposal of status, page after page.
func (rc *reviewClient) proposals(status string) ([]teamwire.ProposalView, error) {
	var out []teamwire.ProposalView
	for offset := 0; ; {
		var l teamwire.ProposalList
		q := url.Values{"status": {status}, "limit": {strconv.Itoa(teamwire.MaxProposalPage)}, "offset": {strconv.Itoa(offset)}}
		if err := rc.do(http.MethodGet, "/proposals", q, nil, &l); err != nil {
			return nil, err
		}
		out = append(out, l.Proposals...)
		if l.NextOffset == nil || *l.NextOffset <= offset {
			return out, nil
		}
		offset = *l.NextOffset
	}
}

// decideAll approves or rejects every pending proposal, once the person
// confirmed with --yes; without it, it says how many and decides none.
func decideAll(e env, rc *reviewClient, name, sub, reason string, yes bool) int {
	listed, err := rc.proposals("pending")
	if err != nil {
		return reviewExit(e, name, err)
	}
	// Oldest first, so that of two proposals for one key the newer is
	// written last; each once (a page may repeat one while others write);
	// one the screens flagged is left for a person to look at alone.
	var ps []teamwire.ProposalView
	seen := map[string]bool{}
	flagged := 0
	for i := len(listed) - 1; i >= 0; i-- {
		p := listed[i]
		switch {
		case seen[p.ID]:
		case p.Screened != "" && sub == "approve":
			flagged++
			fmt.Fprintf(e.stdout, "left for a look of its own: %s %s (flagged)\n", p.ID, shown(p.Key))
		default:
			ps = append(ps, p)
		}
		seen[p.ID] = true
	}
	done := map[string]string{"approve": "approved", "reject": "rejected"}[sub]
	if !yes {
		fmt.Fprintf(e.stdout, "%d pending proposals would be %s; nothing was decided: run again with --yes to %s them all\n", len(ps), done, sub)
		if len(ps) == 0 {
			return exitOK
		}
		return exitError
	}
	var body any
	if sub == "reject" {
		body = teamwire.RejectBody{Reason: reason}
	}
	failed := 0
	for i, p := range ps {
		var out teamwire.ProposalView
		if err := rc.do(http.MethodPost, "/proposals/"+url.PathEscape(p.ID)+"/"+sub, nil, body, &out); err != nil {
			if i == 0 {
				return reviewExit(e, name, err) // the token may not decide: the rest would fail alike
			}
			fmt.Fprintf(e.stderr, "agentmem team %s: %s: %v\n", name, p.ID, err)
			failed++
			continue
		}
		fmt.Fprintf(e.stdout, "%s %s %s\n", out.Status, out.ID, shown(out.Key))
	}
	fmt.Fprintf(e.stdout, "%d of %d proposals %s\n", len(ps)-failed, len(ps), done)
	if flagged > 0 {
		fmt.Fprintf(e.stdout, "%d flagged proposals left pending: decide each with agentmem team review show and approve ID\n", flagged)
	}
	if failed > 0 {
		return exitError
	}
	return exitOK
}

// printProposal prints one proposal on one line (and its decision on a
// second).
func printProposal(e env, p teamwire.ProposalView) {
	fmt.Fprintf(e.stdout, "%s  %-8s %-8s %s  by %s via %s  %s%s\n", p.ID, p.Status, p.Op, shown(p.Key), shown(p.Author), cmp.Or(p.Door, "-"), p.Created, provenanceNote(p.Provenance))
	if p.Screened != "" {
		fmt.Fprintln(e.stdout, "    flagged: "+shown(p.Screened))
	}
	if p.DecidedBy != "" {
		line := "    " + p.Status + " by " + shown(p.DecidedBy) + " " + p.Decided
		if p.Reason != "" {
			line += ": " + shown(p.Reason)
		}
		fmt.Fprintln(e.stdout, line)
	}
}

// storeLog runs `team log --store ID`: the store's newest versions, with
// their author, door and the rest of their provenance.
func storeLog(e env, serverURL, storeID string) (int, error) {
	if err := checkServerURL("--server", serverURL); err != nil {
		return exitError, err
	}
	token := cmp.Or(e.getenv(StoreTokenEnv), e.getenv(TokenEnv))
	if token == "" {
		return reviewExit(e, "log", errNoToken), nil
	}
	storeID, err := storeIDFor(serverURL, token, storeID)
	if err != nil {
		return exitError, err
	}
	rc := &reviewClient{base: strings.TrimRight(serverURL, "/") + "/v1/memory_stores/" + url.PathEscape(storeID), token: token,
		query: url.Values{"limit": {"100"}}, http: &http.Client{Timeout: 30 * time.Second}}
	var page struct {
		Data []struct {
			CreatedAt  string          `json:"created_at"`
			Operation  string          `json:"operation"`
			Path       *string         `json:"path"`
			CreatedBy  json.RawMessage `json:"created_by"`
			Provenance *struct {
				Author string `json:"author"`
				teamwire.Provenance
			} `json:"provenance"`
		} `json:"data"`
	}
	if err := rc.do(http.MethodGet, "/memory_versions", nil, nil, &page); err != nil {
		return reviewExit(e, "log", err), nil
	}
	for _, v := range page.Data {
		path := "(redacted)"
		if v.Path != nil {
			path = shown(*v.Path)
		}
		author, door, note := "-", "-", ""
		if p := v.Provenance; p != nil {
			author, door, note = shown(p.Author), cmp.Or(p.Door, "-"), provenanceNote(p.Provenance)
		}
		fmt.Fprintf(e.stdout, "%s  %-12s %-16s %-8s %s%s\n", v.CreatedAt, author, door, v.Operation, path, note)
	}
	return exitOK, nil
}
