package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/memdir"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/afero"

	"github.com/agentmem-sdk/agentmem/mcpserver"
)

// agentFlags reads --agent and --main-agent-only.
func agentFlags(agent, mainOnly string) (memdir.Agent, memdir.MainAgentOnly, error) {
	var a memdir.Agent
	switch agent {
	case "main":
	case string(memdir.AgentSub), string(memdir.AgentFork), string(memdir.AgentBackground):
		a = memdir.Agent(agent)
	default:
		return "", 0, fmt.Errorf("--agent %q: want main, subagent, fork or background", agent)
	}
	if mainOnly == "" {
		mainOnly = "off"
		if a != memdir.AgentMain {
			mainOnly = "refuse"
		}
	}
	modes := map[string]memdir.MainAgentOnly{"off": memdir.MainAgentOnlyOff, "refuse": memdir.MainAgentOnlyRefuse, "propose": memdir.MainAgentOnlyPropose}
	mode, ok := modes[mainOnly]
	if !ok {
		return "", 0, fmt.Errorf("--main-agent-only %q: want off, refuse or propose", mainOnly)
	}
	return a, mode, nil
}

func mcpFlags(fs *flag.FlagSet) runner {
	httpAddr := fs.String("http", "", "serve streamable HTTP at http://ADDR/mcp instead of stdio (a non-loopback ADDR needs a token: "+MCPTokenEnv+" or --token-file)")
	tokenFile := fs.String("token-file", "", "with --http: require this file's token (one line) as Authorization: Bearer on every request ("+MCPTokenEnv+" may hold it instead)")
	teamServer := fs.String("team-server", "", "keep team memory synced with this server while serving ("+TokenEnv+" holds the token)")
	repo := fs.String("repo", "", "with --team-server: owner/name (default: the project's git remote)")
	agent := fs.String("agent", "main", "the agent every call is taken to come from: main, subagent, fork or background (serve a client's sub-agents from a server of their own)")
	mainOnly := fs.String("main-agent-only", "", "what another agent's write to team memory meets: off, refuse, or propose (kept for a person's review); default refuse with an --agent other than main, else off")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) > 0 {
			return exitError, fmt.Errorf("unexpected argument %q", args[0])
		}
		callsFrom, mode, err := agentFlags(*agent, *mainOnly)
		if err != nil {
			return exitError, err
		}
		if *teamServer != "" {
			if err := checkServerURL("--team-server", *teamServer); err != nil {
				return exitError, err
			}
		}
		r, err := resolve(e, c)
		if err != nil {
			return exitError, err
		}
		if !memoryEnabled(e, c, r.project) {
			return exitError, errMemoryDisabled
		}
		// The directory is created on the first save. A --dir's parent must
		// exist (a mistyped --dir is an error, not a new tree); the
		// project's own memory directory is created as Claude Code does.
		if info, err := e.fs.Stat(filepath.Dir(filepath.Clean(r.path.Dir))); r.explicit && (err != nil || !info.IsDir()) {
			return exitError, fmt.Errorf("the memory directory's parent does not exist: %s", filepath.Dir(filepath.Clean(r.path.Dir)))
		}
		d, err := memdir.NewDir(e.fs, r.path.Dir, memdir.DirOptions{})
		if err != nil {
			return exitError, err
		}
		d.SharedWritesMainAgentOnly(mode)
		srv, err := mcpserver.New(d, mcpserver.Options{Version: version(), Agent: callsFrom})
		if err != nil {
			return exitError, err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if *teamServer != "" {
			o := teamClientOptions{server: *teamServer, repo: *repo}
			client, _, err := newTeamClient(e, c, &o)
			if err != nil {
				return exitError, err
			}
			w, err := client.StartWatcher(ctx, foldersync.WatchOptions{Observer: func(ev foldersync.Event) {
				if ev.Err != nil {
					log.Warn("team sync failed; retrying", "error", ev.Err, "failures", ev.Failures)
				}
			}})
			if err != nil {
				return exitError, fmt.Errorf("team sync: %w", err)
			}
			defer w.Close()
		}
		if *httpAddr == "" {
			// AnswerAll: a client that pipes several requests and closes
			// stdin gets every answer before the server exits.
			err := srv.Run(ctx, mcpserver.AnswerAll(&mcp.StdioTransport{}))
			if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil {
				return exitOK, nil
			}
			return exitError, err
		}
		token, err := mcpToken(e, *tokenFile)
		if err != nil {
			return exitError, err
		}
		return serveMCPHTTP(ctx, e, srv, *httpAddr, token)
	}
}

// MCPTokenEnv names the environment variable that holds the token
// `agentmem mcp --http` requires of its clients.
const MCPTokenEnv = "AGENTMEM_MCP_TOKEN"

// minMCPTokenLen is the shortest token the HTTP server accepts.
const minMCPTokenLen = 16

// mcpToken reads the HTTP server's token from the file (when given) or
// MCPTokenEnv; "" when neither is set.
func mcpToken(e env, file string) (string, error) {
	token := e.getenv(MCPTokenEnv)
	if file != "" {
		data, err := afero.ReadFile(e.fs, file)
		if err != nil {
			return "", fmt.Errorf("read the MCP token file: %w", err)
		}
		token = string(data)
	}
	token = strings.TrimSpace(token)
	if token != "" && len(token) < minMCPTokenLen {
		return "", fmt.Errorf("the MCP token is %d characters; use at least %d (for example: openssl rand -hex 32)", len(token), minMCPTokenLen)
	}
	return token, nil
}

// ErrListenWithoutToken refuses an HTTP listener off loopback without a
// token: anyone who reaches the address could read and write memory.
var ErrListenWithoutToken = errors.New("refusing to serve MCP over HTTP on an address other than loopback without a token: " +
	"set " + MCPTokenEnv + " (or --token-file) and have clients send it as Authorization: Bearer, or listen on 127.0.0.1")

// loopbackOnly reports whether addr (host:port) names only loopback
// addresses: an empty host or 0.0.0.0 listens on every interface.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return false
		}
		return !slices.ContainsFunc(ips, func(a net.IP) bool { return !a.IsLoopback() })
	}
	return ip.IsLoopback()
}

// requireToken answers 401 to a request whose Authorization is not
// "Bearer <token>" (compared in constant time).
func requireToken(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentmem mcp"`)
			http.Error(w, "a valid bearer token is required (Authorization: Bearer <token>)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveMCPHTTP serves the streamable HTTP transport at /mcp until ctx ends.
// Cross-origin browser requests are refused (403): a web page must not
// reach a local memory server. An address off loopback is refused
// without a token; with one, every request must carry it (401).
func serveMCPHTTP(ctx context.Context, e env, srv *mcp.Server, addr, token string) (int, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return exitError, fmt.Errorf("--http %q has no port: give HOST:PORT, such as 127.0.0.1:8765 (port 0 picks a free one)", addr)
	}
	if token == "" && !loopbackOnly(addr) {
		return exitError, ErrListenWithoutToken
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitError, err
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); token == "" && (!ok || !ta.IP.IsLoopback()) {
		_ = ln.Close()
		return exitError, ErrListenWithoutToken
	}
	var h http.Handler = mcpserver.HTTPHandler(srv)
	if token != "" {
		h = requireToken(token, h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "agentmem mcp: listening on http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return exitError, err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	return exitOK, nil
}
