package realpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/internal/hostile"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithinPolicy(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	_, team, _, err := hostile.LinkTree(base)
	require.NoError(t, err)
	fsys := afero.NewOsFs()
	cases := map[string]error{
		"ok.md":          nil,
		"in/x.md":        nil,
		"rt/x.md":        nil,
		"absin/x.md":     nil,
		"in/back/x.md":   nil,
		"out/x.md":       ErrOutside,
		"chain/x.md":     ErrOutside,
		"in/esc/x":       ErrDangling, // ../../outside from team/in is memory/outside: missing
		"../x":           ErrOutside,
		"self":           ErrOutside,
		"":               ErrOutside,
		"dang.md":        nil, // a plain name that does not exist yet
		"dang":           ErrDangling,
		"danin":          ErrDangling,
		"loop/x":         ErrLoop,
		"up/team/in/x":   nil,
		"up/out/x":       ErrOutside,
		"../toteam/x.md": ErrOutside,
	}
	for rel, want := range cases {
		err := Within(fsys, team, rel)
		if want == nil {
			assert.NoError(t, err, rel)
		} else {
			assert.ErrorIs(t, err, want, rel)
		}
	}
	// A link the filesystem cannot read is refused, not taken as a name.
	err = Within(lstatOnly{fsys}, team, "in/back/x.md")
	assert.ErrorIs(t, err, ErrUnreadableLink)
	_, err = ResolvePartial(lstatOnly{fsys}, filepath.Join(team, "out", "x"))
	assert.ErrorIs(t, err, ErrUnreadableLink)
	// The filesystem root as a root.
	assert.NoError(t, Within(afero.NewMemMapFs(), "/", "team/x.md"))
}

// lstatOnly reports links but cannot read them.
type lstatOnly struct{ afero.Fs }

func (f lstatOnly) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	return f.Fs.(afero.Lstater).LstatIfPossible(name)
}

// FuzzWithin: whatever Within accepts resolves inside the root by the
// kernel's own rules.
func FuzzWithin(f *testing.F) {
	for _, s := range hostile.LinkTreeSeeds {
		f.Add(s)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	_, team, _, err := hostile.LinkTree(base)
	if err != nil {
		f.Fatal(err)
	}
	fsys := afero.NewOsFs()
	f.Fuzz(func(t *testing.T, rel string) {
		if strings.IndexByte(rel, 0) >= 0 {
			return // not a path the OS can take
		}
		err := Within(fsys, team, rel)
		if err != nil {
			if !errors.Is(err, ErrOutside) && !errors.Is(err, ErrDangling) && !errors.Is(err, ErrLoop) && !errors.Is(err, ErrUnreadableLink) {
				var pe *os.PathError
				if !errors.As(err, &pe) {
					t.Fatalf("unexpected error %v", err)
				}
			}
			return
		}
		real, ok := hostile.KernelResolve(filepath.Join(team, rel))
		if !ok || !strings.HasPrefix(real, team+string(filepath.Separator)) {
			t.Fatalf("accepted %q resolves to %q, outside %q", rel, real, team)
		}
	})
}
