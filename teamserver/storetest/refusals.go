package storetest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/internal/storewire"
	"github.com/agentmem-sdk/agentmem/internal/teamwire"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

// RunRefusals checks, through the handler over a store newStore makes,
// that both protocols refuse alike on every store what some store could
// not hold exactly: content, paths, keys and IDs that are not valid
// UTF-8, that hold a NUL, or (for names) a control or format character,
// with 400 and nothing written; and a path or key that would make a
// file and a folder clash on a disk, with 409 (Memory Stores) or 400
// (team repos) naming the one in the way. Bodies are sent as raw bytes:
// an encoder would have replaced what is being tested.
func RunRefusals(t *testing.T, newStore func(t *testing.T) teamserver.TeamStore) {
	s := newStore(t)
	h, tok := handlerOver(t, s, []string{"acme/*"})
	call := func(method, target, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}

	t.Run("team repo", func(t *testing.T) {
		code, body := call(http.MethodPut, syncPath, `{"entries":{"ok.md":"fine"}}`)
		require.Equal(t, http.StatusOK, code, body)
		for name, c := range map[string]struct {
			body, code string
		}{
			"content not UTF-8":           {"{\"entries\":{\"a.md\":\"caf\xe9\"}}", teamwire.CodeInvalidText},
			"content surrogate":           {"{\"entries\":{\"a.md\":\"\xed\xa0\x80\"}}", teamwire.CodeInvalidText},
			"content escaped surrogate":   {`{"entries":{"a.md":"\ud800"}}`, teamwire.CodeInvalidText},
			"content NUL":                 {`{"entries":{"a.md":"a\u0000b"}}`, teamwire.CodeInvalidText},
			"key not UTF-8":               {"{\"entries\":{\"caf\xe9.md\":\"x\"}}", teamwire.CodeInvalidText},
			"key NUL":                     {`{"entries":{"a\u0000.md":"x"}}`, teamwire.CodeInvalidText},
			"key with a terminal title":   {`{"entries":{"a\u001b]0;T\u0007.md":"x"}}`, teamwire.CodeInvalidKey},
			"key with a C1 control":       {`{"entries":{"a\u009b.md":"x"}}`, teamwire.CodeInvalidKey},
			"key with a bidi override":    {`{"entries":{"a\u202egpj.md":"x"}}`, teamwire.CodeInvalidKey},
			"key with a line separator":   {`{"entries":{"a\u2028.md":"x"}}`, teamwire.CodeInvalidKey},
			"key a folder of another":     {`{"entries":{"ok.md/inner.md":"x"}}`, teamwire.CodeKeyConflict},
			"two keys a file and folder":  {`{"entries":{"x.md":"x","x.md/y.md":"y"}}`, teamwire.CodeKeyConflict},
			"delete key with control":     {`{"entries":{},"soft_delete_keys":["a\u001b.md"]}`, teamwire.CodeInvalidKey},
			"delete key not UTF-8":        {"{\"entries\":{},\"soft_delete_keys\":[\"caf\xe9.md\"]}", teamwire.CodeInvalidText},
			"key folder of a file, later": {`{"entries":{"ok.md/deeper/x.md":"x"}}`, teamwire.CodeKeyConflict},
			"one key twice":               {`{"entries":{"a.md":"first","a.md":"second"}}`, teamwire.CodeMalformedJSON},
			"data after the body":         {`{"entries":{"a.md":"x"}}{"entries":{"b.md":"y"}}`, teamwire.CodeMalformedJSON},
		} {
			code, body := call(http.MethodPut, syncPath, c.body)
			assert.Equal(t, http.StatusBadRequest, code, "%s: %s", name, body)
			assert.Equal(t, c.code, errCode(body), "%s: %s", name, body)
		}
		code, body = call(http.MethodGet, syncPath, "")
		require.Equal(t, http.StatusOK, code, body)
		var d teamwire.TeamMemoryData
		require.NoError(t, json.Unmarshal([]byte(body), &d))
		assert.Equal(t, map[string]string{"ok.md": "fine"}, d.Content.Entries, "nothing refused was written")
	})

	if _, ok := s.(teamserver.MemoryStores); !ok {
		return
	}
	t.Run("memory stores", func(t *testing.T) {
		code, body := call(http.MethodPost, storewire.StoresPath, `{"name":"refusals"}`)
		require.Equal(t, http.StatusOK, code, body)
		var st storewire.Store
		require.NoError(t, json.Unmarshal([]byte(body), &st))
		base := storewire.StoresPath + "/" + st.ID
		code, body = call(http.MethodPost, base+"/memories", `{"path":"/ok.md","content":"fine"}`)
		require.Equal(t, http.StatusOK, code, body)
		var ok storewire.Memory
		require.NoError(t, json.Unmarshal([]byte(body), &ok))
		code, body = call(http.MethodPost, base+"/memories", `{"path":"/dir/in.md","content":"inside"}`)
		require.Equal(t, http.StatusOK, code, body)

		for name, c := range map[string]struct {
			method, target, body string
			status               int
			typ                  string
		}{
			"content not UTF-8":         {"POST", "/memories", "{\"path\":\"/a.md\",\"content\":\"caf\xe9\"}", 400, ""},
			"content surrogate":         {"POST", "/memories", "{\"path\":\"/a.md\",\"content\":\"\xed\xa0\x80\"}", 400, ""},
			"content escaped surrogate": {"POST", "/memories", `{"path":"/a.md","content":"\udc00"}`, 400, ""},
			"content NUL":               {"POST", "/memories", `{"path":"/a.md","content":"a\u0000b"}`, 400, ""},
			"path not UTF-8":            {"POST", "/memories", "{\"path\":\"/caf\xe9.md\",\"content\":\"x\"}", 400, ""},
			"path NUL":                  {"POST", "/memories", `{"path":"/a\u0000.md","content":"x"}`, 400, ""},
			"path with a control":       {"POST", "/memories", `{"path":"/a\u001b]0;T\u0007.md","content":"x"}`, 400, ""},
			"path with a bidi override": {"POST", "/memories", `{"path":"/a\u202egpj.md","content":"x"}`, 400, ""},
			"update content not UTF-8":  {"POST", "/memories/" + ok.ID, "{\"content\":\"caf\xe9\"}", 400, ""},
			"update content NUL":        {"POST", "/memories/" + ok.ID, `{"content":"\u0000"}`, 400, ""},
			"move to a path with NUL":   {"POST", "/memories/" + ok.ID, `{"path":"/b\u0000.md"}`, 400, ""},
			"memory ID not UTF-8":       {"GET", "/memories/mem_%ff", "", 400, ""},
			"memory ID NUL":             {"GET", "/memories/mem_%00", "", 400, ""},
			"memory ID control":         {"DELETE", "/memories/mem_%1b", "", 400, ""},
			"version ID not UTF-8":      {"GET", "/memory_versions/ver_%ff", "", 400, ""},
			"file below a file":         {"POST", "/memories", `{"path":"/ok.md/inner.md","content":"x"}`, 409, storewire.FolderConflictType},
			"file where a folder is":    {"POST", "/memories", `{"path":"/dir","content":"x"}`, 409, storewire.FolderConflictType},
			"move below a file":         {"POST", "/memories/" + ok.ID, `{"path":"/dir/in.md/x.md"}`, 409, storewire.FolderConflictType},
			"move onto a folder":        {"POST", "/memories/" + ok.ID, `{"path":"/dir"}`, 409, storewire.FolderConflictType},
			"one field twice":           {"POST", "/memories", `{"path":"/a.md","content":"x","path":"/b.md"}`, 400, ""},
			"data after the body":       {"POST", "/memories", `{"path":"/a.md","content":"x"} {"path":"/b.md"}`, 400, ""},
		} {
			code, body := call(c.method, base+c.target, c.body)
			assert.Equal(t, c.status, code, "%s: %s", name, body)
			var e storewire.ErrorBody
			assert.NoError(t, json.Unmarshal([]byte(body), &e), name)
			assert.Equal(t, storewire.TypeError, e.Type, "%s: %s", name, body)
			if c.typ != "" {
				assert.Equal(t, c.typ, e.Error.Type, "%s: %s", name, body)
				assert.NotEmpty(t, e.Error.ConflictingID, "%s names the memory in the way", name)
			}
		}
		for name, target := range map[string]string{
			"store ID not UTF-8": storewire.StoresPath + "/memstore_%ff",
			"store ID NUL":       storewire.StoresPath + "/memstore_%00/memories",
			"store name NUL":     storewire.CodeStorePrefix + "a%00b/memories",
		} {
			code, body := call(http.MethodGet, target, "")
			assert.Equal(t, http.StatusBadRequest, code, "%s: %s", name, body)
		}
		code, body = call(http.MethodPost, storewire.StoresPath, "{\"name\":\"caf\xe9\"}")
		assert.Equal(t, http.StatusBadRequest, code, "a store name not UTF-8: %s", body)
		for _, forged := range []string{"c1:\x00", "c1:caf\xe9"} {
			code, body = call(http.MethodGet, base+"/memories?page="+base64.RawURLEncoding.EncodeToString([]byte(forged)), "")
			assert.Equal(t, http.StatusBadRequest, code, "a forged cursor %q: %s", forged, body)
		}
		code, body = call(http.MethodPost, base+"/memories", `{"path":"/ok.mdx/in.md","content":"a sibling's name is no clash"}`)
		require.Equal(t, http.StatusOK, code, body)

		code, body = call(http.MethodGet, base+"/memories/export", "")
		require.Equal(t, http.StatusOK, code, body)
		var paths []string
		for _, raw := range strings.Split(strings.TrimSpace(body), "\n") {
			var line storewire.Line
			require.NoError(t, json.Unmarshal([]byte(raw), &line))
			if line.Type == storewire.LineMemory {
				paths = append(paths, line.Path)
				if line.Path == "/ok.md" {
					assert.Equal(t, "fine", *line.Content, "a refused update left the content as it was")
				}
			}
		}
		assert.ElementsMatch(t, []string{"/ok.md", "/dir/in.md", "/ok.mdx/in.md"}, paths, "nothing refused was written")
	})
}
