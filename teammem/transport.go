package teammem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/httpretry"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// transport sends the requests of the team repo protocol for one repo:
// authentication, provenance, retries with backoff, the reply cap and
// the error classes. The Client and the Remote driver share it.
type transport struct {
	cfg Options
	// defaultHTTP is the client made when the config gave none.
	defaultHTTP *http.Client
	// replyCap bounds a reply's size: defaultReplyCap until the server's
	// limits say how large a repo can be.
	replyCap   atomic.Int64
	limitsOnce sync.Once
	// limits are the server's, once learned (nil before, or when the
	// server has no limits view).
	limits   atomic.Pointer[teamwire.LimitsView]
	endpoint string
	log      *slog.Logger
}

// newTransport checks cfg's server settings and fills in the defaults.
func newTransport(cfg Options) (*transport, error) {
	switch {
	case cfg.Token == "":
		return nil, ErrNoToken
	case cfg.Repo == "" || strings.Count(cfg.Repo, "/") != 1:
		return nil, ErrNoRepo
	case cfg.BaseURL == "":
		return nil, errors.New("teammem: Options needs the server's BaseURL")
	}
	if cfg.Path == "" {
		cfg.Path = teamwire.DefaultSyncPath
	}
	if cfg.Door == "" {
		cfg.Door = teamwire.DoorSync
	}
	if _, err := teamwire.ParseProvenance(cfg.Door, cfg.Session, cfg.Origin); err != nil {
		return nil, fmt.Errorf("teammem: Options: %w", err)
	}
	t := &transport{}
	if cfg.HTTP == nil {
		t.defaultHTTP = &http.Client{Timeout: defaultTimeout}
		cfg.HTTP = t.defaultHTTP
	}
	if cfg.ConflictRetries <= 0 {
		cfg.ConflictRetries = defaultConflictRetries
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = defaultReplyCap
	}
	t.log = cfg.Logger
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	t.endpoint = strings.TrimRight(cfg.BaseURL, "/") + cfg.Path + "?repo=" + url.QueryEscape(cfg.Repo)
	t.cfg = cfg
	t.replyCap.Store(cfg.MaxReplyBytes)
	return t, nil
}

// policy is how this client sends: its HTTP client, retries, backoff and
// headers (httpretry), with the reply cap.
func (c *transport) policy() httpretry.Policy {
	return httpretry.Policy{
		HTTP: c.cfg.HTTP, Retries: c.cfg.Retries, BaseDelay: c.cfg.BaseDelay, MaxDelay: c.cfg.MaxDelay,
		Jitter: c.cfg.Jitter, Sleep: c.cfg.Sleep, ReplyCap: c.replyCap.Load,
		Header: func(h http.Header) {
			h.Set("Authorization", "Bearer "+c.cfg.Token)
			h.Set("Accept", "application/json")
			teamwire.Provenance{Door: c.cfg.Door, Session: c.cfg.Session, Origin: c.cfg.Origin}.SetHeaders(h)
		},
	}
}

// sendOnce performs one request, without retries, with its own timeout
// (a long-poll outlasts the client's usual one when the HTTP client is
// the default).
func (c *transport) sendOnce(ctx context.Context, res *traffic, method, u string, headers map[string]string, timeout time.Duration) (*httpretry.Reply, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := c.policy()
	p.Retries = -1
	if hc, ok := p.HTTP.(*http.Client); ok && hc == c.defaultHTTP {
		p.HTTP = &http.Client{Transport: hc.Transport} // the context bounds it
	}
	return c.sendWith(ctx, p, res, method, u, nil, headers)
}

// send performs one request with retries and returns the reply when its
// status is one the caller handles: 2xx, 304 and, for GET, 404. Other
// statuses become a *SyncError.
func (c *transport) send(ctx context.Context, res *traffic, method, u string, body []byte, headers map[string]string) (*httpretry.Reply, []byte, error) {
	return c.sendWith(ctx, c.policy(), res, method, u, body, headers)
}

func (c *transport) sendWith(ctx context.Context, p httpretry.Policy, res *traffic, method, u string, body []byte, headers map[string]string) (*httpretry.Reply, []byte, error) {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	reply, err := p.Send(ctx, method, u, body, h)
	attempts := 1
	var ne *httpretry.NetError
	switch {
	case errors.As(err, &ne):
		attempts = ne.Attempts
	case err == nil:
		attempts = reply.Attempts
	}
	res.Requests += attempts
	res.BytesSent += int64(attempts * len(body))
	switch {
	case ne != nil && ne.TLS != "":
		return nil, nil, &SyncError{Class: ClassTLS, Attempts: attempts, Err: errors.New(ne.TLS)}
	case ne != nil && ne.Timeout:
		return nil, nil, &SyncError{Class: ClassTimeout, Attempts: attempts, Err: fmt.Errorf("the team server at %s did not answer in time (%d attempts): is it running and reachable from here?", c.cfg.BaseURL, attempts)}
	case ne != nil:
		return nil, nil, &SyncError{Class: ClassNetwork, Attempts: attempts, Err: fmt.Errorf("the team server at %s could not be reached (%d attempts): is it running, and is the URL right?", c.cfg.BaseURL, attempts)}
	case err != nil:
		return nil, nil, err
	}
	switch s := reply.Status; {
	case s >= 200 && s < 300, s == http.StatusNotModified, s == http.StatusNotFound && method == http.MethodGet:
		return reply, reply.Body, nil
	}
	return nil, nil, c.statusError(reply, attempts)
}

func (c *transport) statusError(resp *httpretry.Reply, attempts int) error {
	body := resp.Body
	var eb teamwire.ErrorBody
	_ = json.Unmarshal(body, &eb)
	e := &SyncError{Status: resp.Status, Code: eb.Error.Details.ErrorCode, Attempts: attempts, Keys: eb.Error.Details.Keys}
	switch {
	case resp.Status == http.StatusUnauthorized:
		e.Class = ClassAuth
		e.Err = fmt.Errorf("the team server at %s does not know this token: check the token given (AGENTMEM_TEAM_TOKEN for the agentmem command); a token just added to the server's token file is read within seconds", c.cfg.BaseURL)
	case resp.Status == http.StatusForbidden && e.Code == teamwire.CodeReadOnly:
		// Not the token's fault: the repo's review policy refuses writes.
		e.Class = ClassUnknown
		e.Err = fmt.Errorf("repo %s on the team server at %s is read-only (its review policy): nothing was written; a person can change it with agentmem team policy", c.cfg.Repo, c.cfg.BaseURL)
	case resp.Status == http.StatusForbidden && e.Code == teamwire.CodeTooManyRepos:
		// The token may use the repo, but the server will not create it.
		e.Class = ClassForbidden
		e.Err = fmt.Errorf("the team server at %s will not create repo %s: the organization holds as many repos as the server allows; nothing was written: use a repo that exists, or ask the server's administrator to raise team serve --max-repos", c.cfg.BaseURL, c.cfg.Repo)
	case resp.Status == http.StatusForbidden:
		e.Class = ClassForbidden
		e.Err = fmt.Errorf("the team server at %s says the token may not use repo %s: ask for a token whose grant names it (agentmem team token --repo)", c.cfg.BaseURL, c.cfg.Repo)
	case resp.Status == http.StatusBadRequest && bytes.Contains(body, []byte("HTTP request to an HTTPS server")):
		e.Err = errors.New("the server speaks HTTPS: use an https:// URL")
	case resp.Status == http.StatusPreconditionFailed:
		e.Class = ClassConflict
	case resp.Status == http.StatusRequestEntityTooLarge && e.Code == teamwire.CodeTooManyEntries:
		e.Class = ClassTooManyEntries
		e.MaxEntries = eb.Error.Details.MaxEntries
		e.Err = fmt.Errorf("the team server at %s holds at most %d memories in repo %s and this push would go over it, so nothing was pushed: run it again to push what fits (the rest waits here), delete memories you no longer need, or ask the server's administrator to raise team serve --max-entries", c.cfg.BaseURL, eb.Error.Details.MaxEntries, c.cfg.Repo)
	default:
		e.Class = ClassUnknown
	}
	if e.Class == "" {
		e.Class = ClassUnknown
	}
	if e.Err == nil && eb.Error.Message != "" {
		e.Err = errors.New(printable(eb.Error.Message, 300)) // the server's own words
	}
	return e
}

// learnLimits asks the server for its limits (once, when a reply first
// reaches the cap) and sizes the cap so that any repo the server accepts
// can be pulled: every entry at its largest, JSON-escaped, with its
// checksum. It reports whether the cap grew; a server without the limits
// view leaves defaultReplyCap.
func (c *transport) learnLimits(ctx context.Context, res *traffic) bool {
	before := c.replyCap.Load()
	c.limitsOnce.Do(func() {
		resp, body, err := c.sendOnce(ctx, res, http.MethodGet, c.endpoint+"&view=limits", nil, defaultTimeout)
		if err != nil || resp.Status != http.StatusOK {
			return
		}
		var lv teamwire.LimitsView
		if json.Unmarshal(body, &lv) != nil || lv.MaxRepoBytes <= 0 {
			return
		}
		c.limits.Store(&lv)
		need := 2*lv.MaxRepoBytes + int64(lv.MaxEntries)*256 + 1<<20
		c.replyCap.Store(max(need, c.cfg.MaxReplyBytes))
	})
	return c.replyCap.Load() > before
}

// traffic counts the requests a call sent and their body bytes.
type traffic struct {
	Requests  int
	BytesSent int64
}
