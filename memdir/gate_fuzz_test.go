package memdir

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/internal/hostile"
	"github.com/agentmem-sdk/agentmem/secrets"
	"github.com/spf13/afero"
)

// FuzzWriteGate checks the gate's two promises on a real tree full of
// links: an accepted path resolves (by the kernel's rules) inside the
// memory directory, and inside the team directory when it is a team
// write; accepted content for team/ holds no secret.
func FuzzWriteGate(f *testing.F) {
	for _, s := range hostile.LinkTreeSeeds {
		f.Add("team/"+s, "plain text")
		f.Add(s, "gh"+"p_"+strings.Repeat("a1B2", 9))
	}
	keys, err := hostile.Keys()
	if err != nil {
		f.Fatal(err)
	}
	for _, k := range keys {
		f.Add("team/"+k.Key, "x")
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	mem, team, _, err := hostile.LinkTree(base)
	if err != nil {
		f.Fatal(err)
	}
	g, err := newWriteGate(afero.NewOsFs(), []string{mem}, gateOptions{})
	if err != nil {
		f.Fatal(err)
	}
	scanner := secrets.New()
	f.Fuzz(func(t *testing.T, rel, content string) {
		tg, err := g.CheckPath(mem + string(filepath.Separator) + rel)
		if err != nil || g.CheckContent(tg, content) != nil {
			return
		}
		real, ok := hostile.KernelResolve(tg.Path)
		if !ok || !strings.HasPrefix(real, mem+string(filepath.Separator)) {
			t.Fatalf("accepted %q resolves to %q, outside the memory directory", rel, real)
		}
		if strings.HasPrefix(real, team+string(filepath.Separator)) && !tg.Team {
			t.Fatalf("%q lands in team/ but was not judged a team write", rel)
		}
		if tg.Team && real != team && !strings.HasPrefix(real, team+string(filepath.Separator)) {
			t.Fatalf("team write %q resolves to %q, outside team/", rel, real)
		}
		if _, found := scanner.First(content); found && tg.Team {
			t.Fatalf("team write %q accepted with a secret", rel)
		}
	})
}
