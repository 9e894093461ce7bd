package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// refusal is the server's answer, other than 2xx, to a call the console
// made for a signed-in token: the HTTP status and the server's message
// (which never holds content or a server path). The page shows it.
type refusal struct {
	Status  int
	Code    string
	Message string
}

func (e *refusal) Error() string {
	return fmt.Sprintf("console: the server answered %d: %s", e.Status, e.Message)
}

// recorder is the response of one in-process call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

// call sends one request to the server's handler in process, with the
// session's token, and decodes a 2xx JSON answer into out. The request
// keeps the browser's address, so the server's per-address limits see
// the person, not the console.
func (c *Console) call(ctx context.Context, from *http.Request, s *session, method, path string, q url.Values, body any, header map[string]string, out any) error {
	b, err := c.send(ctx, from, s, method, path, q, body, header)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("console: the server's answer to %s could not be read: %w", path, err)
	}
	return nil
}

// raw is call without decoding: the body of a 2xx answer.
func (c *Console) raw(ctx context.Context, from *http.Request, s *session, method, path string, q url.Values) ([]byte, error) {
	return c.send(ctx, from, s, method, path, q, nil, nil)
}

func (c *Console) send(ctx context.Context, from *http.Request, s *session, method, path string, q url.Values, body any, header map[string]string) ([]byte, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(teamserver.InProcess(ctx), method, u, rd)
	if err != nil {
		return nil, err
	}
	req.RemoteAddr = from.RemoteAddr
	req.Header.Set("Authorization", "Bearer "+s.token)
	// A person's write in the console: the history says so.
	req.Header.Set(teamwire.DoorHeader, teamwire.DoorConsole)
	req.Header.Set(teamwire.OriginHeader, teamwire.OriginUser)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := &recorder{header: http.Header{}}
	c.h.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status/100 != 2 {
		return nil, readRefusal(rec)
	}
	return rec.body.Bytes(), nil
}

// apiError reads either protocol's error body.
func readRefusal(rec *recorder) *refusal {
	e := &refusal{Status: rec.status, Message: http.StatusText(rec.status)}
	var sync teamwire.ErrorBody
	if json.Unmarshal(rec.body.Bytes(), &sync) == nil && sync.Error.Message != "" {
		e.Message, e.Code = sync.Error.Message, sync.Error.Details.ErrorCode
		if e.Code == "" {
			e.Code = sync.Error.Type
		}
	}
	return e
}
