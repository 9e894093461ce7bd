package teammem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// ErrLongPollUnsupported reports a server that does not offer the
// long-poll (SPEC 2.5): it answered at once, or refused the request.
var ErrLongPollUnsupported = errors.New("teammem: the server does not support waiting for changes")

// waitForChange asks the server to answer as soon as the repo's checksum
// differs from etag, or after wait (at most teamwire.MaxLongPoll),
// counting its request in res. It returns the repo's checksum when the
// reply gave it ("" when the repo has no data) and whether the repo
// changed. A server without the long-poll gives ErrLongPollUnsupported.
func (c *transport) waitForChange(ctx context.Context, res *traffic, etag string, wait time.Duration) (string, bool, error) {
	wait = min(max(wait, time.Second), teamwire.MaxLongPoll)
	u := c.endpoint + "&view=hashes&wait=" + strconv.Itoa(int(wait/time.Second))
	headers := map[string]string{}
	if etag != "" {
		headers["If-None-Match"] = `"` + etag + `"`
	}
	resp, body, err := c.sendOnce(ctx, res, http.MethodGet, u, headers, wait+10*time.Second)
	if err != nil {
		var se *SyncError
		if errors.As(err, &se) && (se.Status == http.StatusBadRequest || se.Status == http.StatusNotFound) {
			return "", false, ErrLongPollUnsupported
		}
		return "", false, err
	}
	switch resp.Status {
	case http.StatusNotModified:
		return etag, false, nil
	case http.StatusNotFound:
		return "", etag != "", nil // the repo is gone or still empty
	}
	var hv teamwire.HashesView
	if err := json.Unmarshal(body, &hv); err != nil {
		return "", false, &SyncError{Class: ClassParse, Status: resp.Status, Err: errors.New("the hashes view is not valid")}
	}
	if hv.Checksum == etag {
		// An answer without a change is a server that ignored wait.
		return "", false, ErrLongPollUnsupported
	}
	return hv.Checksum, true, nil
}
