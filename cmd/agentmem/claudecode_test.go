package main

// Tests against the real Claude Code: the binary from npm
// (@anthropic-ai/claude-code, the version .ci/run pins), driven offline with -p against a
// scripted stand-in for the Messages API that streams as the real one
// does. $AGENTMEM_CLAUDE_BIN names the binary; without it these tests
// skip, unless $AGENTMEM_REQUIRE_CLAUDE is set (as .ci/run sets it), when
// a missing binary fails them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/memdir"
)

// ccPinned is the Claude Code version CI installs (.ci/run); the tests
// also run against any other version $AGENTMEM_CLAUDE_BIN names, as long as
// it is not older than ccOldest.
const (
	ccPinned = "2.1.332"
	ccOldest = "2.1.328"
)

// claudeBinary returns the real Claude Code binary, or skips the test
// when none is configured and none is required.
func claudeBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("AGENTMEM_CLAUDE_BIN")
	required := os.Getenv("AGENTMEM_REQUIRE_CLAUDE") != ""
	if bin == "" {
		if required {
			t.Fatal("AGENTMEM_REQUIRE_CLAUDE is set but AGENTMEM_CLAUDE_BIN is not: install @anthropic-ai/claude-code@" + ccPinned + " and point it at node_modules/.bin/claude")
		}
		t.Skip("set AGENTMEM_CLAUDE_BIN to the claude binary of @anthropic-ai/claude-code@" + ccPinned + " to run the Claude Code tests")
	}
	v := claudeVersion(t, bin)
	require.False(t, versionLess(v, ccOldest), "Claude Code %s is older than %s, the oldest these tests are written for", v, ccOldest)
	return bin
}

// claudeVersion returns the version `bin --version` prints ("2.1.332").
func claudeVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err, "%s --version", bin)
	f := strings.Fields(string(out))
	require.NotEmpty(t, f, "%s --version printed nothing", bin)
	return f[0]
}

// versionLess reports whether dotted version a is older than b.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// ccCall is one tool call the stand-in model makes.
type ccCall struct {
	Name  string
	Input any
}

// ccStub is the stand-in for the Messages API. A prompt that contains
// "step:NAME" is answered with the calls set by script(NAME), one per request,
// each after the result of the one before; then with the text "done." Any
// other request (a side query, an extraction fork) gets the text "done."
type ccStub struct {
	srv   *httptest.Server
	mu    sync.Mutex
	steps map[string][]ccCall
	reqs  []ccRequest
}

// ccRequest is one request the stub received.
type ccRequest struct {
	Stream   bool        `json:"stream"`
	Model    string      `json:"model"`
	System   []ccBlock   `json:"system"`
	Messages []ccMessage `json:"messages"`
}

type ccMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// blocks returns a message's content blocks (a string is one text block).
func (m ccMessage) blocks() []ccBlock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []ccBlock{{Type: "text", Text: s}}
	}
	var bs []ccBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// text returns every text in a message, tool results included.
func (m ccMessage) text() string {
	var b strings.Builder
	for _, bl := range m.blocks() {
		b.WriteString(bl.Text)
		b.Write(bl.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

func newCCStub(t *testing.T) *ccStub {
	s := &ccStub{steps: map[string][]ccCall{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// script sets the calls the model makes for a prompt with "step:NAME".
func (s *ccStub) script(name string, calls []ccCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps[name] = calls
}

// requests returns what the stub received so far.
func (s *ccStub) requests() []ccRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ccRequest(nil), s.reqs...)
}

// next picks the answer to a request: the next scripted call, or nil.
func (s *ccStub) next(req ccRequest) *ccCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		txt := m.text()
		at := strings.Index(txt, "step:")
		if at < 0 || strings.Contains(txt, "tool_result") {
			continue
		}
		name := strings.Fields(txt[at+len("step:"):])[0]
		done := 0
		for _, later := range req.Messages[i+1:] {
			for _, b := range later.blocks() {
				if b.Type == "tool_result" {
					done++
				}
			}
		}
		if calls := s.steps[name]; done < len(calls) {
			return &calls[done]
		}
		return nil
	}
	return nil
}

func (s *ccStub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req ccRequest
	if !strings.HasPrefix(r.URL.Path, "/v1/messages") || json.Unmarshal(body, &req) != nil {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		fmt.Fprint(w, `{"input_tokens":100}`)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	s.mu.Unlock()
	call := s.next(req)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		content, stop := `[{"type":"text","text":"done."}]`, "end_turn"
		if call != nil {
			in, _ := json.Marshal(call.Input)
			content, stop = fmt.Sprintf(`[{"type":"tool_use","id":"toolu_%d","name":%q,"input":%s}]`, n, call.Name, in), "tool_use"
		}
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`, n, req.Model, content, stop)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
	event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`, n, req.Model))
	stop := "end_turn"
	if call != nil {
		in, _ := json.Marshal(call.Input)
		partial, _ := json.Marshal(string(in))
		event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_%d","name":%q,"input":{}}}`, n, call.Name))
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(partial)+`}}`)
		stop = "tool_use"
	} else {
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done."}}`)
	}
	event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":5}}`, stop))
	event("message_stop", `{"type":"message_stop"}`)
}

// ccProject is a git project with its own home, used by Claude Code and
// by agentmem alike.
type ccProject struct {
	t                *testing.T
	bin, home, root  string
	config, auto     string
	stub             *ccStub
	extraEnv, ccArgs []string
}

func newCCProject(t *testing.T) *ccProject {
	t.Helper()
	bin := claudeBinary(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	p := &ccProject{t: t, bin: bin, home: filepath.Join(base, "home"), root: filepath.Join(base, "proj"), stub: newCCStub(t)}
	p.config = filepath.Join(p.home, ".claude")
	p.auto = filepath.Join(p.config, "projects", memdir.SanitizePath(p.root), "memory") + string(filepath.Separator)
	require.NoError(t, os.MkdirAll(p.root, 0o755))
	require.NoError(t, os.MkdirAll(p.config, 0o755))
	git := exec.Command("git", "init", "-q", p.root)
	out, err := git.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return p
}

// env is the environment both programs run with: the project's home and
// nothing from the test's own.
func (p *ccProject) env() []string {
	env := []string{"HOME=" + p.home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8"}
	return append(env, p.extraEnv...)
}

// ccResult is what `claude -p --output-format json` prints at the end.
type ccResult struct {
	SessionID string `json:"session_id"`
	Result    string `json:"result"`
	IsError   bool   `json:"is_error"`
	NumTurns  int    `json:"num_turns"`
}

// claude runs `claude -p PROMPT` in the project and returns its result.
func (p *ccProject) claude(prompt string, args ...string) ccResult {
	p.t.Helper()
	return p.claudeIn(p.root, prompt, args...)
}

// claudeIn runs `claude -p PROMPT` in dir.
func (p *ccProject) claudeIn(dir, prompt string, args ...string) ccResult {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := append([]string{"-p", prompt, "--output-format", "json"}, p.ccArgs...)
	cmd := exec.CommandContext(ctx, p.bin, append(all, args...)...)
	cmd.Dir = dir
	cmd.Env = append(p.env(), "ANTHROPIC_BASE_URL="+p.stub.srv.URL, "ANTHROPIC_API_KEY=sk-ant-offline-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(p.t, err, "claude -p %q: %s%s", prompt, stdout.String(), stderr.String())
	var res ccResult
	require.NoError(p.t, json.Unmarshal(lastJSONLine(stdout.Bytes()), &res), "claude's result: %s", stdout.String())
	require.False(p.t, res.IsError, "claude reported an error: %s", stdout.String())
	require.NotEmpty(p.t, res.SessionID)
	return res
}

// lastJSONLine returns the last line of out that starts with "{".
func lastJSONLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(lines[i], []byte("{")) {
			return lines[i]
		}
	}
	return out
}

// agentmem runs the agentmem binary in the project.
func (p *ccProject) agentmem(args ...string) (string, string, int) {
	p.t.Helper()
	return p.agentmemIn(p.root, args...)
}

// agentmemIn runs the agentmem binary in dir.
func (p *ccProject) agentmemIn(dir string, args ...string) (string, string, int) {
	p.t.Helper()
	cmd := exec.Command(binary(p.t), args...)
	cmd.Dir = dir
	cmd.Env = p.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(p.t, err)
	}
	return stdout.String(), stderr.String(), code
}

// firstUserText returns the text of the first user message of the main
// loop's request that carried prompt.
func (p *ccProject) firstUserText(prompt string) string {
	p.t.Helper()
	for _, r := range p.stub.requests() {
		if len(r.Messages) > 0 && strings.Contains(r.Messages[0].text(), prompt) {
			return r.Messages[0].text()
		}
	}
	p.t.Fatalf("no request carried %q", prompt)
	return ""
}

// systemText returns the system prompt of that request.
func (p *ccProject) systemText(prompt string) string {
	p.t.Helper()
	for _, r := range p.stub.requests() {
		if len(r.Messages) > 0 && strings.Contains(r.Messages[0].text(), prompt) {
			var b strings.Builder
			for _, bl := range r.System {
				b.WriteString(bl.Text)
			}
			return b.String()
		}
	}
	p.t.Fatalf("no request carried %q", prompt)
	return ""
}
