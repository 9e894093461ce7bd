package teammem

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// transport sends the requests of the team repo protocol for one repo:
// authentication, provenance, retries with backoff, the reply cap and
// the error classes. The Client and the Remote driver share it.
type transport struct {
	cfg ClientOptions
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
func newTransport(cfg ClientOptions) (*transport, error) {
	switch {
	case cfg.Token == "":
		return nil, ErrNoToken
	case cfg.Repo == "" || strings.Count(cfg.Repo, "/") != 1:
		return nil, ErrNoRepo
	case cfg.BaseURL == "":
		return nil, errors.New("teammem: ClientOptions needs the server's BaseURL")
	}
	if cfg.Path == "" {
		cfg.Path = teamwire.DefaultSyncPath
	}
	if cfg.Door == "" {
		cfg.Door = teamwire.DoorSync
	}
	if _, err := teamwire.ParseProvenance(cfg.Door, cfg.Session, cfg.Origin); err != nil {
		return nil, fmt.Errorf("teammem: ClientOptions: %w", err)
	}
	t := &transport{}
	if cfg.HTTP == nil {
		t.defaultHTTP = &http.Client{Timeout: defaultTimeout}
		cfg.HTTP = t.defaultHTTP
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = defaultMaxRetries
	}
	if cfg.ConflictRetries <= 0 {
		cfg.ConflictRetries = defaultConflictRetries
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = defaultBaseDelay
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = defaultMaxDelay
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
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

// sendOnce performs one request, without retries, with its own timeout
// (a long-poll outlasts the client's usual one when the HTTP client is
// the default).
func (c *transport) sendOnce(ctx context.Context, res *traffic, method, u string, headers map[string]string, timeout time.Duration) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	req.Header.Set("Accept", "application/json")
	c.provenance(req)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res.Requests++
	doer := c.cfg.HTTP
	if hc, ok := doer.(*http.Client); ok && hc == c.defaultHTTP {
		doer = &http.Client{Transport: hc.Transport} // the context bounds it
	}
	resp, err := doer.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if why := tlsProblem(err); why != "" {
			return nil, nil, &SyncError{Class: ClassTLS, Attempts: 1, Err: errors.New(why)}
		}
		return nil, nil, &SyncError{Class: ClassNetwork, Attempts: 1, Err: errors.New("the server could not be reached")}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, &SyncError{Class: ClassNetwork, Attempts: 1, Err: errors.New("the reply was cut off")}
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300, resp.StatusCode == http.StatusNotModified, resp.StatusCode == http.StatusNotFound:
		return resp, body, nil
	}
	return nil, nil, c.statusError(resp, body, 1)
}

// send performs one request with retries and returns the response (body
// read) when its status is one the caller handles: 2xx, 304 and, for GET,
// 404. Other statuses become a *SyncError.
func (c *transport) send(ctx context.Context, res *traffic, method, u string, body []byte, headers map[string]string) (*http.Response, []byte, error) {
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		req.Header.Set("Accept", "application/json")
		c.provenance(req)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res.Requests++
		res.BytesSent += int64(len(body))
		resp, err := c.cfg.HTTP.Do(req)
		var respBody []byte
		if err == nil {
			respBody, err = io.ReadAll(io.LimitReader(resp.Body, c.replyCap.Load()))
			resp.Body.Close()
		}
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, nil, ctxErr
			}
			if why := tlsProblem(err); why != "" {
				return nil, nil, &SyncError{Class: ClassTLS, Attempts: attempt, Err: errors.New(why)}
			}
			class := ClassNetwork
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				class = ClassTimeout
			}
			if attempt > c.cfg.MaxRetries {
				return nil, nil, &SyncError{Class: class, Attempts: attempt, Err: errors.New("the server could not be reached")}
			}
			if err := c.cfg.Sleep(ctx, c.backoff(attempt, "")); err != nil {
				return nil, nil, err
			}
			continue
		}
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300, resp.StatusCode == http.StatusNotModified,
			resp.StatusCode == http.StatusNotFound && method == http.MethodGet:
			return resp, respBody, nil
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			if attempt > c.cfg.MaxRetries || resp.StatusCode == http.StatusInsufficientStorage {
				// A full disk is not mended in a retry's time: said at once.
				return nil, nil, c.statusError(resp, respBody, attempt)
			}
			if err := c.cfg.Sleep(ctx, c.backoff(attempt, resp.Header.Get("Retry-After"))); err != nil {
				return nil, nil, err
			}
			continue
		}
		return nil, nil, c.statusError(resp, respBody, attempt)
	}
}

// provenance sets the provenance headers of a request.
func (c *transport) provenance(req *http.Request) {
	req.Header.Set(teamwire.DoorHeader, c.cfg.Door)
	if c.cfg.Session != "" {
		req.Header.Set(teamwire.SessionHeader, c.cfg.Session)
	}
	if c.cfg.Origin != "" {
		req.Header.Set(teamwire.OriginHeader, c.cfg.Origin)
	}
}

// tlsProblem says what is wrong with the server's certificate when err is
// a TLS failure, and "" otherwise.
func tlsProblem(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "the server's TLS certificate is signed by an authority this machine does not trust (add the CA to the system's trust store, or point SSL_CERT_FILE at its PEM file)"
	case errors.As(err, &host):
		return "the server's TLS certificate is not valid for " + host.Host + " (use the name the certificate was issued for)"
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "the server's TLS certificate has expired or is not valid yet (check the server's certificate and this machine's clock)"
		}
		return "the server's TLS certificate is not valid: " + invalid.Error()
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the server did not answer in TLS (is it served over http:// rather than https://?)"
	case errors.As(err, &verify):
		return "the server's TLS certificate could not be verified: " + verify.Err.Error()
	}
	return ""
}

// backoff is min(base*2^(n-1), max) plus up to 25 % jitter, or the
// server's Retry-After when it gives one.
func (c *transport) backoff(attempt int, retryAfter string) time.Duration {
	if retryAfter != "" {
		if secs, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && secs >= 0 {
			return min(time.Duration(secs)*time.Second, c.cfg.MaxDelay)
		}
		if t, err := http.ParseTime(retryAfter); err == nil {
			return min(max(time.Until(t), 0), c.cfg.MaxDelay)
		}
	}
	d := c.cfg.BaseDelay << (attempt - 1)
	if d > c.cfg.MaxDelay || d <= 0 {
		d = c.cfg.MaxDelay
	}
	return d + time.Duration(float64(d)*0.25*c.cfg.Jitter())
}

func (c *transport) statusError(resp *http.Response, body []byte, attempts int) error {
	var eb teamwire.ErrorBody
	_ = json.Unmarshal(body, &eb)
	e := &SyncError{Status: resp.StatusCode, Code: eb.Error.Details.ErrorCode, Attempts: attempts, Keys: eb.Error.Details.Keys}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		e.Class = ClassAuth
	case resp.StatusCode == http.StatusForbidden && e.Code == teamwire.CodeReadOnly:
		// Not the token's fault: the repo's review policy refuses writes.
		e.Class = ClassUnknown
		e.Err = fmt.Errorf("repo %s is read-only (its review policy): nothing was written; a person can change it with agentmem team policy", c.cfg.Repo)
	case resp.StatusCode == http.StatusForbidden:
		e.Class = ClassForbidden
		e.Err = fmt.Errorf("the token may not use repo %s: ask for a token whose grant names it (agentmem team token --repo)", c.cfg.Repo)
	case resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte("HTTP request to an HTTPS server")):
		e.Err = errors.New("the server speaks HTTPS: use an https:// URL")
	case resp.StatusCode == http.StatusPreconditionFailed:
		e.Class = ClassConflict
	case resp.StatusCode == http.StatusRequestEntityTooLarge && e.Code == teamwire.CodeTooManyEntries:
		e.Class = ClassTooManyEntries
		e.MaxEntries = eb.Error.Details.MaxEntries
		e.Err = fmt.Errorf("the server holds at most %d entries for this repo", eb.Error.Details.MaxEntries)
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
		if err != nil || resp.StatusCode != http.StatusOK {
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

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// traffic counts the requests a call sent and their body bytes.
type traffic struct {
	Requests  int
	BytesSent int64
}
