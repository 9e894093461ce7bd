package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
)

// History lists a key's recorded versions on the server, newest first
// (at most limit; 0 means the server's default).
func (c *Client) History(ctx context.Context, key string, limit int) (HistoryView, error) {
	if err := ValidateKeySyntax(key); err != nil {
		return HistoryView{}, err
	}
	u := c.endpoint + "&view=history&key=" + url.QueryEscape(key)
	if limit > 0 {
		u += "&limit=" + strconv.Itoa(limit)
	}
	var hv HistoryView
	return hv, c.getJSON(ctx, u, &hv)
}

// Revision returns a key's content at one version.
func (c *Client) Revision(ctx context.Context, key string, version int64) (RevisionView, error) {
	if err := ValidateKeySyntax(key); err != nil {
		return RevisionView{}, err
	}
	var rv RevisionView
	return rv, c.getJSON(ctx, c.endpoint+"&view=history&key="+url.QueryEscape(key)+"&version="+strconv.FormatInt(version, 10), &rv)
}

// Log lists the repo's writes after version since, newest first.
func (c *Client) Log(ctx context.Context, since int64) ([]LogEntry, error) {
	var out []LogEntry
	return out, c.getJSON(ctx, c.endpoint+"&view=log&since="+strconv.FormatInt(since, 10), &out)
}

// ErrNotFoundOnServer reports a repo, key or version the server does not
// have.
var ErrNotFoundOnServer = errors.New("teammem: the server has no such repo, key or version")

// Restore writes a key's content at version back as a new version, on the
// condition that the repo has not changed since it was read (a concurrent
// change gives a *SyncError of class conflict and writes nothing). It
// returns the new version. The local team directory is not touched: the
// next sync brings the restored content in.
func (c *Client) Restore(ctx context.Context, key string, version int64) (int64, error) {
	rev, err := c.Revision(ctx, key, version)
	if err != nil {
		return 0, err
	}
	var res Result
	view, err := c.fetchHashes(ctx, &res)
	if err != nil {
		return 0, err
	}
	raw, err := json.Marshal(PutBody{Entries: map[string]string{key: rev.Content}})
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
	var pr PutResult
	if err := json.Unmarshal(body, &pr); err != nil {
		return 0, &SyncError{Class: ClassParse, Status: resp.StatusCode, Err: errors.New("the server's reply to a restore is not valid")}
	}
	return pr.Version, nil
}

// getJSON reads one view into v.
func (c *Client) getJSON(ctx context.Context, u string, v any) error {
	var res Result
	resp, body, err := c.send(ctx, &res, http.MethodGet, u, nil, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotFound {
		return ErrNotFoundOnServer
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &SyncError{Class: ClassParse, Status: resp.StatusCode, Err: errors.New("the server's reply is not valid")}
	}
	return nil
}
