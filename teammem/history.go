package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// History lists a key's recorded versions on the server, newest first
// (at most limit; 0 means the server's default).
func (c *Client) History(ctx context.Context, key string, limit int) (teamwire.HistoryView, error) {
	if err := validateKeySyntax(key); err != nil {
		return teamwire.HistoryView{}, err
	}
	u := c.endpoint + "&view=history&key=" + url.QueryEscape(key)
	if limit > 0 {
		u += "&limit=" + strconv.Itoa(limit)
	}
	var hv teamwire.HistoryView
	return hv, c.getJSON(ctx, u, &hv)
}

// Revision returns a key's content at one version.
func (c *Client) Revision(ctx context.Context, key string, version int64) (teamwire.RevisionView, error) {
	if err := validateKeySyntax(key); err != nil {
		return teamwire.RevisionView{}, err
	}
	var rv teamwire.RevisionView
	return rv, c.getJSON(ctx, c.endpoint+"&view=history&key="+url.QueryEscape(key)+"&version="+strconv.FormatInt(version, 10), &rv)
}

// Log lists the repo's writes after version since, newest first.
func (c *Client) Log(ctx context.Context, since int64) ([]teamwire.LogEntry, error) {
	var out []teamwire.LogEntry
	return out, c.getJSON(ctx, c.endpoint+"&view=log&since="+strconv.FormatInt(since, 10), &out)
}

// ErrNotFoundOnServer reports a repo, key or version the server does not
// have.
var ErrNotFoundOnServer = errors.New("teammem: the server has no such repo, key or version")

// DeletionVersionError refuses to restore a version that is a key's
// deletion: it has no content, and writing it back would give every
// teammate an empty memory. LastWithContent is the newest earlier version
// that has content (restore that one), or 0 when the server keeps none.
type DeletionVersionError struct {
	Key             string
	Version         int64
	LastWithContent int64
}

func (e *DeletionVersionError) Error() string {
	msg := fmt.Sprintf("teammem: version %d of %s is its deletion and has no content to restore", e.Version, e.Key)
	if e.LastWithContent > 0 {
		return msg + fmt.Sprintf("; the last version with content is %d (restore that one)", e.LastWithContent)
	}
	return msg + "; the server keeps no earlier version with content"
}

// ErrRestoreUnchanged: the key already holds the content of the version
// to restore; nothing was written.
var ErrRestoreUnchanged = errors.New("teammem: the key already holds that version's content; nothing was written")

// Restore writes a key's content at version back as a new version, on the
// condition that the repo has not changed since it was read (a concurrent
// change gives a *SyncError of class conflict and writes nothing). It
// returns the new version. A version that is the key's deletion is
// refused with a *DeletionVersionError naming the last version with
// content: nothing is written, nor when the key already holds that
// content (ErrRestoreUnchanged). The local team directory is not touched:
// the next sync brings the restored content in. Under review, an agent's
// restore returns ErrInReview (or ErrRejectedInReview) and the repo's
// current version.
func (c *Client) Restore(ctx context.Context, key string, version int64) (int64, error) {
	rev, err := c.Revision(ctx, key, version)
	if err != nil {
		return 0, err
	}
	if err := c.refuseDeletion(ctx, rev); err != nil {
		return 0, err
	}
	var res traffic
	view, err := c.fetchHashes(ctx, &res)
	if err != nil {
		return 0, err
	}
	if sum, ok := view.sums[key]; ok && sum == teamwire.EntryChecksum(rev.Content) {
		return 0, ErrRestoreUnchanged
	}
	raw, err := json.Marshal(teamwire.PutBody{Entries: map[string]string{key: rev.Content}})
	if err != nil {
		return 0, err
	}
	headers := map[string]string{"Content-Type": "application/json"}
	if view.etag != "" {
		headers["If-Match"] = `"` + view.etag + `"`
	}
	resp, body, err := c.send(ctx, &res, http.MethodPut, c.endpoint, raw, headers)
	if err != nil {
		return 0, err
	}
	var pr teamwire.PutResult
	if err := json.Unmarshal(body, &pr); err != nil {
		return 0, &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the server's reply to a restore is not valid")}
	}
	switch {
	case len(pr.InReview) > 0:
		return pr.Version, ErrInReview
	case len(pr.Rejected) > 0:
		return pr.Version, ErrRejectedInReview
	}
	return pr.Version, nil
}

// Errors of a write the server kept for review (the repo's policy is
// "review" and the token is an agent's): nothing was written.
var (
	// ErrInReview: the write waits for a person's approval
	// (agentmem team review ls).
	ErrInReview = errors.New("teammem: kept for review: the repo's policy sends an agent's writes to a person; nothing is written until one approves it")
	// ErrRejectedInReview: a person already rejected this very change.
	ErrRejectedInReview = errors.New("teammem: a person reviewing the repo already rejected this very change; nothing was written")
)

// refuseDeletion returns a *DeletionVersionError when rev is a deletion,
// by its own flag or, from a server that does not send it, by the key's
// history. A revision with content is no deletion: the history is asked
// only for an empty one.
func (c *Client) refuseDeletion(ctx context.Context, rev teamwire.RevisionView) error {
	if !rev.Deleted && rev.Content != "" {
		return nil
	}
	hv, err := c.History(ctx, rev.Key, 0)
	if err != nil && !rev.Deleted {
		return nil // no history to ask: the revision's own word stands
	}
	deleted := rev.Deleted
	var last int64
	for _, v := range hv.Versions { // newest first
		if v.Version == rev.Version && v.Deleted {
			deleted = true
		}
		if v.Version < rev.Version && !v.Deleted && last == 0 {
			last = v.Version
		}
	}
	if !deleted {
		return nil
	}
	return &DeletionVersionError{Key: rev.Key, Version: rev.Version, LastWithContent: last}
}

// getJSON reads one view into v.
func (c *Client) getJSON(ctx context.Context, u string, v any) error {
	var res traffic
	resp, body, err := c.send(ctx, &res, http.MethodGet, u, nil, nil)
	if err != nil {
		return err
	}
	if resp.Status == http.StatusNotFound {
		return ErrNotFoundOnServer
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the server's reply is not valid")}
	}
	return nil
}
