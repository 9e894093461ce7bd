package realpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmem-sdk/agentmem/internal/hostile"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// symlinkTree builds, in a real temporary directory, the tree both
// resolvers are checked against, and returns its resolved root:
//
//	a/b/f, a/file          plain files
//	abs -> <root>/a        absolute link
//	rel -> a/b             relative link
//	chain -> rel           link to a link
//	loop1 <-> loop2        a cycle
//	dangling -> nowhere/deeper, dangling2 -> a/missing
func symlinkTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	must := func(err error) { t.Helper(); require.NoError(t, err) }
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "b", "f"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(root, "a", "file"), []byte("x"), 0o644))
	must(os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "abs")))
	must(os.Symlink("a/b", filepath.Join(root, "rel")))
	must(os.Symlink("rel", filepath.Join(root, "chain")))
	must(os.Symlink("loop2", filepath.Join(root, "loop1")))
	must(os.Symlink("loop1", filepath.Join(root, "loop2")))
	must(os.Symlink("nowhere/deeper", filepath.Join(root, "dangling")))
	must(os.Symlink("a/missing", filepath.Join(root, "dangling2")))
	return root
}

func TestResolveOnDisk(t *testing.T) {
	root := symlinkTree(t)
	fsys := afero.NewOsFs()
	cases := []resolveCase{
		{in: "a/b/f", want: "a/b/f"},
		{in: "abs/b/f", want: "a/b/f"},
		{in: "rel/f", want: "a/b/f"},
		{in: "chain/f", want: "a/b/f"},
		{in: "chain/../b", want: "a/b"},
		{in: "a/./b/../b", want: "a/b"},
		{in: "loop1", err: ErrLoop},
		{in: "dangling", err: fs.ErrNotExist},
		{in: "a/b/f/g", err: syscall.ENOTDIR},
		{in: "missing/x", err: fs.ErrNotExist},
	}
	runResolveCases(t, root, cases, func(t *testing.T, p string) (string, error) {
		got, err := Resolve(fsys, p)
		if err == nil {
			want, kerr := filepath.EvalSymlinks(p)
			require.NoError(t, kerr)
			assert.Equal(t, want, got, "must agree with the kernel's resolution")
		}
		return got, err
	})
}

type resolveCase struct {
	in, want string
	err      error
}

// runResolveCases resolves root/in for each case (no lexical cleaning
// before resolution) and checks the path or the error.
func runResolveCases(t *testing.T, root string, cases []resolveCase, resolve func(*testing.T, string) (string, error)) {
	for _, c := range cases {
		t.Run(c.in[:min(len(c.in), 20)], func(t *testing.T) {
			got, err := resolve(t, root+"/"+c.in)
			if c.err != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(root, c.want), got)
		})
	}
}

func TestResolveMemMapFs(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, fsys.MkdirAll("/x/y", 0o755))
	got, err := Resolve(fsys, "/x/./y/../y")
	require.NoError(t, err)
	assert.Equal(t, "/x/y", got)
	_, err = Resolve(fsys, "/x/z")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = Resolve(fsys, "relative")
	assert.Error(t, err)
}

func TestResolvePartialOnDisk(t *testing.T) {
	root := symlinkTree(t)
	fsys := afero.NewOsFs()
	cases := []resolveCase{
		{in: "a/b/new/f.md", want: "a/b/new/f.md"},
		{in: "abs/b/new.md", want: "a/b/new.md"},
		{in: "chain/x/y.md", want: "a/b/x/y.md"},
		{in: "a/file/below", want: "a/file/below"},
		{in: "missing/x", want: "missing/x"},
		{in: "a/b", want: "a/b"},
		{in: "loop1/x", err: ErrLoop},
		{in: "dangling", err: ErrDangling},
		{in: "dangling/x.md", err: ErrDangling},
		{in: "dangling2", err: ErrDangling},
		{in: strings.Repeat("n", 300) + "/x", want: strings.Repeat("n", 300) + "/x"},
	}
	runResolveCases(t, root, cases, func(_ *testing.T, p string) (string, error) { return ResolvePartial(fsys, p) })
}

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
