// Package httpretry sends the requests of both sync protocols (team repo
// and Memory Stores): one request with its headers, retried with backoff
// when a retry can mend the failure. That is a connection that failed or
// timed out, 429, and 5xx other than 507 (a full disk is not mended in a
// retry's time). A Retry-After is honoured up to MaxDelay. Everything
// else is the caller's to read: the drivers keep only their protocol's
// rules.
package httpretry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Doer sends one request (an *http.Client, or a wrapper).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Policy is how a driver sends: its HTTP client, its retries and the
// headers of every request. The zero value of a field means its default.
type Policy struct {
	HTTP Doer
	// Retries after the first attempt (default 3; negative: none).
	Retries int
	// BaseDelay and MaxDelay shape the backoff min(base*2^(n-1), max)
	// plus Jitter (defaults 500 ms and 32 s); MaxDelay also caps a
	// Retry-After.
	BaseDelay, MaxDelay time.Duration
	// Jitter returns a number in [0, 1): up to 25 % of a delay is added
	// (default none).
	Jitter func() float64
	// Sleep waits between attempts (default a timer that honours ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// Header sets the headers every request carries (authentication,
	// provenance).
	Header func(http.Header)
	// ReplyCap bounds a reply's body (default 256 MiB).
	ReplyCap func() int64
}

// Reply is the server's answer: any status the policy did not retry, or
// the last one when the retries ran out.
type Reply struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int
}

// NetError reports a request that got no answer after the retries.
type NetError struct {
	Attempts int
	// Timeout: the server did not answer in time.
	Timeout bool
	// TLS says what is wrong with the server's certificate ("" when the
	// failure is not one of TLS, which is never retried).
	TLS string
	Err error
}

func (e *NetError) Error() string {
	if e.TLS != "" {
		return e.TLS
	}
	return "the server could not be reached: " + e.Err.Error()
}

func (e *NetError) Unwrap() error { return e.Err }

// Retried reports whether a reply with this status is sent again.
func Retried(status int) bool {
	return status == http.StatusTooManyRequests || (status >= 500 && status != http.StatusInsufficientStorage)
}

// Send sends the request with its retries. It returns a *NetError when
// no answer came, ctx's error when ctx ended, and otherwise the reply.
func (p Policy) Send(ctx context.Context, method, url string, body []byte, header http.Header) (*Reply, error) {
	retries := p.Retries
	switch {
	case retries == 0:
		retries = 3
	case retries < 0:
		retries = 0
	}
	for attempt := 1; ; attempt++ {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, r)
		if err != nil {
			return nil, err
		}
		if p.Header != nil {
			p.Header(req.Header)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		reply, err := p.once(req, attempt)
		if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
			return nil, ctxErr
		}
		var ne *NetError
		switch {
		case errors.As(err, &ne) && ne.TLS == "" && attempt <= retries:
			err = p.sleep(ctx, p.Delay(attempt, ""))
		case err == nil && Retried(reply.Status) && attempt <= retries:
			err = p.sleep(ctx, p.Delay(attempt, reply.Header.Get("Retry-After")))
		default:
			return reply, err
		}
		if err != nil {
			return nil, err
		}
	}
}

// once sends one attempt and reads its reply.
func (p Policy) once(req *http.Request, attempt int) (*Reply, error) {
	doer := p.HTTP
	if doer == nil {
		doer = http.DefaultClient
	}
	resp, err := doer.Do(req)
	if err != nil {
		return nil, netError(err, attempt)
	}
	defer resp.Body.Close()
	limit := int64(256 << 20)
	if p.ReplyCap != nil {
		limit = p.ReplyCap()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, netError(err, attempt)
	}
	return &Reply{Status: resp.StatusCode, Header: resp.Header, Body: body, Attempts: attempt}, nil
}

func netError(err error, attempt int) *NetError {
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
	return &NetError{Attempts: attempt, Timeout: timeout, TLS: tlsProblem(err), Err: err}
}

// Delay is how long to wait before attempt+1: the server's Retry-After
// (seconds or an HTTP date) when it gives one, else the backoff; never
// more than MaxDelay.
func (p Policy) Delay(attempt int, retryAfter string) time.Duration {
	base, most := p.BaseDelay, p.MaxDelay
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	if most <= 0 {
		most = 32 * time.Second
	}
	if retryAfter != "" {
		if secs, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && secs >= 0 {
			if secs > int(most/time.Second) {
				return most // and no overflow of a huge value
			}
			return time.Duration(secs) * time.Second
		}
		if t, err := http.ParseTime(retryAfter); err == nil {
			return min(max(time.Until(t), 0), most)
		}
	}
	d := base << (attempt - 1)
	if d > most || d <= 0 {
		d = most
	}
	if p.Jitter != nil {
		d += time.Duration(float64(d) * 0.25 * p.Jitter())
	}
	return d
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

// Sleep waits d, or until ctx ends (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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
