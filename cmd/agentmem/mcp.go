package main

import (
	"context"
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
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/mcpserver"
	"github.com/agentmem/agentmem/teammem"
)

func mcpFlags(fs *flag.FlagSet) runner {
	httpAddr := fs.String("http", "", "serve streamable HTTP at http://ADDR/mcp instead of stdio (loopback only: there is no auth)")
	teamServer := fs.String("team-server", "", "keep team memory synced with this server while serving ("+TokenEnv+" holds the token)")
	repo := fs.String("repo", "", "with --team-server: owner/name (default: the project's git remote)")
	return func(e env, c *common, args []string) (int, error) {
		if len(args) > 0 {
			return exitError, fmt.Errorf("unexpected argument %q", args[0])
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
		srv, err := mcpserver.New(e.fs, r.path.Dir, mcpserver.Options{Version: version()})
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
			w, err := teammem.StartWatcher(ctx, client, teammem.WatcherOptions{Logger: log})
			if err != nil && w == nil {
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
		return serveMCPHTTP(ctx, e, srv, *httpAddr)
	}
}

// serveMCPHTTP serves the streamable HTTP transport at /mcp until ctx ends.
// Cross-origin browser requests are refused (403): a web page must not
// reach a local memory server.
func serveMCPHTTP(ctx context.Context, e env, srv *mcp.Server, addr string) (int, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitError, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.HTTPHandler(srv))
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
