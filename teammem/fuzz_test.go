package teammem

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// kernelResolve resolves p with the kernel's own symlink rules
// (filepath.EvalSymlinks) as far as it exists, then appends the rest: an
// independent oracle for the containment check.
func kernelResolve(p string) (string, bool) {
	rest := ""
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest), true
		}
		if info, err := os.Lstat(cur); err == nil && info.Mode()&os.ModeSymlink != 0 {
			return "", false // a dangling link: never acceptable
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", false
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func FuzzValidateTeamMemKey(f *testing.F) {
	for _, c := range loadHostileKeys(f) {
		f.Add(c.key)
	}
	for _, k := range []string{"ok.md", "in/x.md", "out/x.md", "chain/x.md", "dang.md", "self/../x.md", "in/../../outside/x", "rt/x.md", "absin/x.md", "in/back/x.md", "in/esc/x", "danin", "loop/x", "up/team/in/x.md"} {
		f.Add(k)
	}
	root, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	team := filepath.Join(root, "memory", "team")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(team, "in"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	links := map[string]string{
		"out": outside, "chain": "out", "dang": filepath.Join(outside, "nope"), "self": ".", "up": "..",
		"rt": "../team/in", "absin": filepath.Join(team, "in"), "in/back": "../absin", "in/esc": "../../outside",
		"danin": "in/missing", "loop": "loop",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(team, name)); err != nil {
			f.Fatal(err)
		}
	}
	fsys := afero.NewOsFs()
	f.Fuzz(func(t *testing.T, key string) {
		got, err := ValidateTeamMemKey(fsys, team, key)
		if err != nil {
			if _, ok := err.(*PathTraversalError); !ok {
				t.Fatalf("error of type %T, want *PathTraversalError", err)
			}
			return
		}
		real, ok := kernelResolve(got)
		if !ok || !strings.HasPrefix(real, team+string(filepath.Separator)) {
			t.Fatalf("accepted key %q resolves to %q, outside %q", key, real, team)
		}
	})
}
