package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentmem-sdk/agentmem"
	"github.com/agentmem-sdk/agentmem/llm"
	"github.com/agentmem-sdk/agentmem/teamserver"
)

func main() {
	root, err := os.MkdirTemp("", "agentmem-agentloop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(root)
	if err := Run(context.Background(), os.Stdout, root); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

// Run plays the sessions under root: Ana's home and project, Ben's, and a
// team sync server in this process.
func Run(ctx context.Context, w io.Writer, root string) error {
	token, grant, err := teamserver.NewToken("acme", []string{"acme/*"})
	if err != nil {
		return err
	}
	h, err := teamserver.NewHandler(teamserver.NewMemoryStore(), teamserver.Options{Tokens: []teamserver.TokenGrant{grant}})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	team := agentmem.TeamOptions{ServerURL: srv.URL, Repo: "acme/shop", Token: token}
	model := newScriptedModel()
	ana, ben := filepath.Join(root, "ana"), filepath.Join(root, "ben")
	for _, dir := range []string{filepath.Join(ana, "shop"), filepath.Join(ben, "shop")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := session(ctx, w, model, "ana", ana, filepath.Join(ana, "shop"), team,
		"Remember: we never deploy on Fridays; releases go out on Tuesdays.", "Thanks."); err != nil {
		return err
	}
	for range 5 {
		if err := session(ctx, w, model, "ana", ana, filepath.Join(ana, "shop"), team, "Can I deploy the release on Friday?"); err != nil {
			return err
		}
	}
	return session(ctx, w, model, "ben", ben, filepath.Join(ben, "shop"), team, "Can I deploy the release on Friday?")
}

// toolSpecs lists the tools for a model request.
func toolSpecs(tools []llm.Tool) []llm.ToolSpec {
	out := make([]llm.ToolSpec, len(tools))
	for i, t := range tools {
		out[i] = t.Spec
	}
	return out
}
