package storesync

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/httpretry"
	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
)

// remoteMemory is one memory as a listing gives it (Content only when
// fetched).
type remoteMemory struct {
	ID      string
	Path    string
	SHA256  string
	Content string
	// Updated is when the store wrote the memory as it is (Unix ms; 0
	// when it does not say).
	Updated int64
}

// fromWire is a memory of a listing or a read as the sync uses it.
func fromWire(m storewire.Memory) remoteMemory {
	r := remoteMemory{ID: m.ID, Path: m.Path, SHA256: m.ContentSHA256}
	if m.Content != nil {
		r.Content = *m.Content
	}
	if t, err := time.Parse(time.RFC3339Nano, m.UpdatedAt); err == nil {
		r.Updated = t.UnixMilli()
	}
	return r
}

// FolderConflictType is the error type of agentmem's server for a path
// that is a folder of another memory's path, or lies below one (409).
const FolderConflictType = storewire.FolderConflictType

// APIError is a refusal by the store: its HTTP status, error type and
// message. A path conflict names the memory that holds the path.
type APIError struct {
	// Store is the store's URL (server and path), "" when not known.
	Store           string
	Status          int
	Type            string
	Message         string
	ConflictingID   string
	ConflictingPath string
	RetryAfter      time.Duration
}

func (e *APIError) Error() string {
	if e.Store != "" {
		return fmt.Sprintf("storesync: the store at %s answered %d %s: %s", e.Store, e.Status, e.Type, e.Message)
	}
	return fmt.Sprintf("storesync: the store answered %d %s: %s", e.Status, e.Type, e.Message)
}

// Permanent reports an answer no retry mends: a refusal that is not 429
// or 5xx, or a full disk (507). A watcher pauses on it.
func (e *APIError) Permanent() bool { return !httpretry.Retried(e.Status) }

// conn speaks the store protocol to one store.
type conn struct {
	http    *http.Client
	base    string // scheme://host[:port]
	path    string // the store's path, without a trailing "/"
	token   string
	public  bool // /v1/memory_stores/...: x-api-key and the beta header
	retries int
	prov    teamwire.Provenance
}

// errNotModified: the export answered 304 to If-None-Match: the store is
// as the client listed it last.
var errNotModified = errors.New("storesync: the store did not change")

// errInReview: the store answered 202, keeping the write for review.
var errInReview = errors.New("storesync: the write is kept for review")

// rejectedError: the store answered 202 with a rejected proposal: a
// person already rejected this very change.
type rejectedError struct{ reason string }

func (e *rejectedError) Error() string { return "storesync: rejected in review: " + e.reason }

// accepted reads a 202 answer: the write was kept for review, or a
// person already rejected it.
func accepted(body []byte) error {
	var p storewire.Proposal
	_ = json.Unmarshal(body, &p)
	if p.Status == storewire.ProposalRejected {
		return &rejectedError{reason: p.Reason}
	}
	return errInReview
}

func (c *conn) do(ctx context.Context, method, rel string, body any, header ...string) (int, []byte, error) {
	var raw []byte
	h := http.Header{}
	if body != nil {
		raw, _ = json.Marshal(body)
		h.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	p := httpretry.Policy{HTTP: c.http, Retries: c.retries, BaseDelay: 200 * time.Millisecond, Header: c.header}
	reply, err := p.Send(ctx, method, c.base+c.path+rel, raw, h)
	var ne *httpretry.NetError
	switch {
	case errors.As(err, &ne):
		return 0, nil, &NetworkError{Base: c.base, Err: ne.Err}
	case err != nil:
		return 0, nil, err
	case reply.Status < 300:
		return reply.Status, reply.Body, nil
	}
	apiErr := parseError(reply)
	apiErr.Store = c.base + c.path
	return reply.Status, reply.Body, apiErr
}

// header sets the headers of every request: the key or token, and
// provenance.
func (c *conn) header(h http.Header) {
	if c.public {
		h.Set(storewire.APIKeyHeader, c.token)
		h.Set(storewire.VersionHeader, storewire.APIVersion)
		h.Set(storewire.BetaHeader, storewire.Beta)
	} else {
		h.Set("Authorization", "Bearer "+c.token)
	}
	h.Set("Accept", "application/json, text/plain, */*")
	c.prov.SetHeaders(h)
}

// NetworkError reports a request that did not reach the store, after
// the retries: the server is down or unreachable, or the URL is wrong.
// Err is the transport's error (a *url.Error).
type NetworkError struct {
	Base string
	Err  error
}

func (e *NetworkError) Error() string {
	why := "no connection"
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		why = "connection refused"
	case errors.As(e.Err, &dns):
		why = "unknown host " + dns.Name
	case errors.As(e.Err, &ne) && ne.Timeout():
		why = "no answer in time"
	default:
		var ue *url.Error
		if errors.As(e.Err, &ue) {
			why = ue.Err.Error()
		}
	}
	return fmt.Sprintf("storesync: the store at %s could not be reached (%s): check that the server runs and the URL is right, then sync again", e.Base, why)
}

func (e *NetworkError) Unwrap() error { return e.Err }

func parseError(resp *httpretry.Reply) *APIError {
	e := &APIError{Status: resp.Status}
	body := resp.Body
	var env storewire.ErrorBody
	if json.Unmarshal(body, &env) == nil {
		e.Type, e.Message, e.ConflictingID, e.ConflictingPath = env.Error.Type, env.Error.Message, env.Error.ConflictingID, env.Error.ConflictingPath
	}
	if s, err := strconv.Atoi(resp.Header.Get(storewire.RetryAfterHeader)); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// storeHead is what an export's first line says of the store: agentmem's
// server names its ID and generation; other servers may not.
type storeHead struct {
	ID         string `json:"id"`
	Generation *int64 `json:"generation"`
}

// list returns every memory of the store without content: by the
// export's basic view, or page by page where the server has no export.
func (c *conn) list(ctx context.Context, header ...string) (map[string]remoteMemory, storeHead, error) {
	var head storeHead
	_, body, err := c.do(ctx, http.MethodGet, "/memories/export?view=basic", nil, header...)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotModified {
		return nil, head, errNotModified
	}
	if errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed) {
		m, err := c.listPaged(ctx)
		return m, head, err
	}
	if err != nil {
		return nil, head, err
	}
	out := map[string]remoteMemory{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 630_784)
	first, complete := true, false
	for sc.Scan() {
		var line storewire.Line
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, head, fmt.Errorf("storesync: the export has a line that is not JSON: %w", err)
		}
		if first {
			first = false
			if line.Type != storewire.LineStore || line.View != "basic" {
				m, err := c.listPaged(ctx) // the basic view was not honoured
				return m, head, err
			}
			head = storeHead{ID: line.ID, Generation: line.Generation}
			continue
		}
		switch line.Type {
		case storewire.LineMemory, storewire.LineMetadata:
			out[normalPath(line.Path)] = fromWire(storewire.Memory{ID: line.ID, Path: line.Path, ContentSHA256: line.ContentSHA, Content: line.Content, UpdatedAt: line.UpdatedAt})
		case storewire.LineError:
			return nil, head, errors.New("storesync: the export reported a memory it could not read; try again later")
		case storewire.LineComplete:
			if line.ErrorCount > 0 || line.MemoryCount != len(out) {
				return nil, head, fmt.Errorf("storesync: the export is inconsistent (%d memories, %d listed, %d errors)", line.MemoryCount, len(out), line.ErrorCount)
			}
			complete = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, head, fmt.Errorf("storesync: read the export: %w", err)
	}
	if !complete {
		return nil, head, errors.New("storesync: the export was cut short (no complete line); nothing was changed")
	}
	return out, head, nil
}

// listPaged lists the store with the paged list (limit 100, basic).
func (c *conn) listPaged(ctx context.Context) (map[string]remoteMemory, error) {
	out := map[string]remoteMemory{}
	page := ""
	for {
		q := url.Values{"limit": {"100"}, "view": {"basic"}}
		if page != "" {
			q.Set("page", page)
		}
		_, body, err := c.do(ctx, http.MethodGet, "/memories?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		var data []storewire.Memory
		reply := storewire.Page{Data: &data}
		if err := json.Unmarshal(body, &reply); err != nil {
			return nil, fmt.Errorf("storesync: the listing is not JSON: %w", err)
		}
		for _, m := range data {
			if m.ID != "" {
				out[normalPath(m.Path)] = fromWire(m)
			}
		}
		if reply.NextPage == nil || *reply.NextPage == "" {
			return out, nil
		}
		if *reply.NextPage == page {
			return nil, errors.New("storesync: the listing's cursor did not advance")
		}
		page = *reply.NextPage
	}
}

// get reads one memory with its content.
func (c *conn) get(ctx context.Context, id string) (remoteMemory, error) {
	_, body, err := c.do(ctx, http.MethodGet, "/memories/"+url.PathEscape(id), nil)
	if err != nil {
		return remoteMemory{}, err
	}
	var m storewire.Memory
	if err := json.Unmarshal(body, &m); err != nil {
		return remoteMemory{}, fmt.Errorf("storesync: a memory is not JSON: %w", err)
	}
	return fromWire(m), nil
}

// create adds a memory at a path no memory has.
func (c *conn) create(ctx context.Context, p, content string) (remoteMemory, error) {
	body := storewire.CreateMemory{Path: p, Content: &content}
	if !c.public {
		body.Precondition = &storewire.Precondition{Type: storewire.PreconditionNotExists}
	}
	return c.write(ctx, "/memories", body)
}

// update rewrites a memory whose content still has sha256 ifSHA.
func (c *conn) update(ctx context.Context, id, content, ifSHA string) (remoteMemory, error) {
	return c.write(ctx, "/memories/"+url.PathEscape(id), storewire.UpdateMemory{Content: &content,
		Precondition: &storewire.Precondition{Type: storewire.PreconditionSHA256, ContentSHA256: ifSHA}})
}

// write posts a create or an update and reads the memory it answers
// with (a 202: kept for review, or rejected).
func (c *conn) write(ctx context.Context, rel string, body any) (remoteMemory, error) {
	status, out, err := c.do(ctx, http.MethodPost, rel, body)
	if err != nil {
		return remoteMemory{}, err
	}
	if status == http.StatusAccepted {
		return remoteMemory{}, accepted(out)
	}
	var m storewire.Memory
	err = json.Unmarshal(out, &m)
	return fromWire(m), err
}

// remove deletes a memory whose content still has sha256 ifSHA.
func (c *conn) remove(ctx context.Context, id, ifSHA string) error {
	status, out, err := c.do(ctx, http.MethodDelete, "/memories/"+url.PathEscape(id)+"?expected_content_sha256="+ifSHA, nil)
	if err == nil && status == http.StatusAccepted {
		return accepted(out)
	}
	return err
}

// normalPath gives a store path a leading "/" and collapses runs of "/".
func normalPath(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}
