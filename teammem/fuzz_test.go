package teammem

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/internal/hostile"

	"github.com/spf13/afero"
)

func FuzzValidateTeamMemKey(f *testing.F) {
	for _, c := range loadHostileKeys(f) {
		f.Add(c.key)
	}
	for _, k := range hostile.LinkTreeSeeds {
		f.Add(k)
	}
	root, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	_, team, _, err := hostile.LinkTree(root)
	if err != nil {
		f.Fatal(err)
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
		real, ok := hostile.KernelResolve(got)
		if !ok || !strings.HasPrefix(real, team+string(filepath.Separator)) {
			t.Fatalf("accepted key %q resolves to %q, outside %q", key, real, team)
		}
	})
}
