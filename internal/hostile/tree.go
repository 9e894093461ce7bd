package hostile

import (
	"os"
	"path/filepath"
)

// KernelResolve resolves p with the kernel's own symlink rules
// (filepath.EvalSymlinks) as far as it exists, then appends the rest: an
// oracle for containment checks that shares no code with them. ok is
// false for a dangling link, which no check may accept.
func KernelResolve(p string) (real string, ok bool) {
	rest := ""
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest), true
		}
		if info, err := os.Lstat(cur); err == nil && info.Mode()&os.ModeSymlink != 0 {
			return "", false
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", false
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// LinkTree builds, below base on the real disk, memory/team/in and
// outside/, and inside team/ a set of links that lead in, out, through
// chains, into a loop or nowhere. It returns the memory directory, the
// team directory and the outside directory.
func LinkTree(base string) (mem, team, outside string, err error) {
	mem = filepath.Join(base, "memory")
	team = filepath.Join(mem, "team")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(team, "in"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", "", err
		}
	}
	links := map[string]string{
		"out": outside, "chain": "out", "dang": filepath.Join(outside, "nope"), "self": ".", "up": "..",
		"rt": "../team/in", "absin": filepath.Join(team, "in"), "in/back": "../absin", "in/esc": "../../outside",
		"danin": "in/missing", "loop": "loop", "../toteam": "team/in", "../out": "../outside",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(team, name)); err != nil {
			return "", "", "", err
		}
	}
	return mem, team, outside, nil
}

// LinkTreeSeeds are relative paths worth starting a fuzzer from in a
// LinkTree's team directory.
var LinkTreeSeeds = []string{"ok.md", "in/x.md", "out/x.md", "chain/x.md", "dang.md", "self/../x.md", "in/../../outside/x", "rt/x.md", "absin/x.md", "in/back/x.md", "in/esc/x", "danin", "loop/x", "up/team/in/x.md", "../toteam/x.md", "../out/x.md"}
