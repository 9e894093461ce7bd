package sqlite_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routeCase is one request and the answer every protocol route gives it:
// the status, the Allow header of a 405 and the error body's type and
// code (team and review bodies carry the code under details).
type routeCase struct {
	method, path, token string
	status              int
	allow, typ, code    string
}

// TestRoutesAnswerAlike checks what the server answers a request to a
// path it does not serve, a method a path does not take, and a request
// without a token, on each protocol: the statuses, the Allow header and
// the JSON error body of that protocol.
func TestRoutesAnswerAlike(t *testing.T) {
	h, st, all, _, _ := storesServer(t)
	s := "/v1/memory_stores/" + st.ID
	cases := []routeCase{
		// the team repo protocol
		{"GET", "/nope", "", 404, "", "not_found_error", "not_found"},
		{"DELETE", "/api/claude_code/team_memory", "", 405, "GET, PUT", "invalid_request_error", "method_not_allowed"},
		{"HEAD", "/api/claude_code/team_memory", "", 405, "GET, PUT", "", ""},
		{"GET", "/api/claude_code/team_memory?repo=a/b", "", 401, "", "authentication_error", "unauthorized"},
		// the review endpoint
		{"GET", "/v1/review/proposals", "", 401, "", "authentication_error", "unauthorized"},
		{"GET", "/v1/review/nope", all, 404, "", "not_found_error", "not_found"},
		{"DELETE", "/v1/review/policy", all, 405, "GET, PUT", "invalid_request_error", "method_not_allowed"},
		{"GET", "/v1/review/proposals/x/approve", all, 405, "POST", "invalid_request_error", "method_not_allowed"},
		// the Memory Stores API
		{"GET", "/v1/memory_stores", "", 401, "", "authentication_error", ""},
		{"PUT", "/v1/memory_stores", all, 405, "GET, POST", "invalid_request_error", ""},
		{"PUT", s, all, 405, "GET, POST, DELETE", "invalid_request_error", ""},
		{"GET", s + "/archive", all, 405, "POST", "invalid_request_error", ""},
		{"DELETE", s + "/memories", all, 405, "GET, POST", "invalid_request_error", ""},
		{"POST", s + "/memories/export", all, 405, "GET", "invalid_request_error", ""},
		{"PUT", s + "/memories/mem_x", all, 405, "GET, POST, DELETE", "invalid_request_error", ""},
		{"POST", s + "/memory_versions", all, 405, "GET", "invalid_request_error", ""},
		{"POST", s + "/memory_versions/v", all, 405, "GET", "invalid_request_error", ""},
		{"GET", s + "/memory_versions/v/redact", all, 405, "POST", "invalid_request_error", ""},
		{"GET", s + "/nope", all, 404, "", "not_found_error", ""},
		{"GET", s + "/memories/a/b", all, 404, "", "not_found_error", ""},
		{"GET", "/v1/memory_stores/memstore_nope", all, 404, "", "not_found_error", ""},
		{"GET", "/v1/memory_stores/memstore_nope/nope", all, 404, "", "not_found_error", ""},
		{"GET", "/v1/memory_stores/" + st.ID + "%ff/memories", all, 400, "", "invalid_request_error", ""},
		{"GET", s + "/memories/mem%00x", all, 400, "", "invalid_request_error", ""},
		{"GET", "/v1/code/memory/shared/memories", "", 401, "", "authentication_error", ""},
		{"PUT", "/v1/code/memory/shared/memories", all, 405, "GET, POST", "invalid_request_error", ""},
		{"GET", "/v1/code/memory/shared", all, 404, "", "not_found_error", ""},
		{"GET", "/v1/code/memory/shared/memories/a/b", all, 404, "", "not_found_error", ""},
		{"GET", "/v1/code/memory/nope/memories", all, 404, "", "not_found_error", ""},
		{"GET", "/v1/code/memory/shared/memories/", all, 200, "", "", ""},
		{"GET", s + "/memories/", all, 200, "", "", ""},
		{"GET", "/v1/memory_stores/" + st.ID + "//memories", all, 404, "", "not_found_error", ""},
		{"GET", "/v1/review//proposals", all, 404, "", "not_found_error", "not_found"},
		{"GET", "/v1/review/proposals/", all, 400, "", "invalid_request_error", "invalid_target"},
	}
	var dump strings.Builder
	for _, c := range cases {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Fprintf(&dump, "%s %s -> %d allow=%q ct=%q %s\n", c.method, c.path, rec.Code, rec.Header().Get("Allow"), rec.Header().Get("Content-Type"), strings.TrimSpace(rec.Body.String()))
		name := c.method + " " + c.path
		require.Equal(t, c.status, rec.Code, "%s: %s", name, rec.Body.String())
		assert.Equal(t, c.allow, rec.Header().Get("Allow"), name)
		if c.method == "HEAD" || c.status == 200 {
			continue
		}
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"), name)
		_, out, _ := decodeBody(rec.Body.Bytes())
		assert.Equal(t, c.typ, out.typ, name)
		assert.Equal(t, c.code, out.code, name)
		assert.NotEmpty(t, out.message, name)
	}
	if p := os.Getenv("ROUTES_DUMP"); p != "" {
		_ = os.WriteFile(p, []byte(dump.String()), 0o644)
	}
}

type errorFields struct{ typ, code, message string }

// decodeBody reads an error body of either protocol.
func decodeBody(raw []byte) (map[string]any, errorFields, error) {
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, errorFields{}, err
	}
	e, _ := out["error"].(map[string]any)
	var f errorFields
	f.typ, _ = e["type"].(string)
	f.message, _ = e["message"].(string)
	f.code, _ = e["error_code"].(string)
	if d, ok := e["details"].(map[string]any); ok {
		f.code, _ = d["error_code"].(string)
	}
	return out, f, nil
}
