package memdir

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/realpath"
	"github.com/spf13/afero"
	"golang.org/x/text/unicode/norm"
)

// maxGitFileSize bounds how much of a .git, commondir or gitdir file is read:
// these hold one path, and a hostile tree must not make us read gigabytes.
const maxGitFileSize = 4096

// FindGitRoot walks up from start (an absolute directory) to the first
// directory that contains a ".git" entry, file or directory. ok is false
// when start is not inside a git checkout.
func FindGitRoot(fsys afero.Fs, start string) (root string, ok bool) {
	dir := filepath.Clean(start)
	for {
		if _, err := fsys.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// FindCanonicalGitRoot returns the root that every worktree of the checkout
// containing start shares, so all worktrees of one repository use one
// memory directory. ok is false when start is not inside a git checkout.
//
// For a linked worktree (".git" is a file "gitdir: <path>") the main
// repository is found through <gitdir>/commondir. The answer is trusted only
// if the worktree's git dir sits in <common>/worktrees/ and its "gitdir"
// file points back at this checkout's .git; otherwise a crafted ".git" file
// could borrow another repository's memory, and the checkout's own root is
// used. A submodule (no commondir) keeps its own root. For a bare
// repository the common dir itself is returned. Any read error keeps the
// checkout's own root.
func FindCanonicalGitRoot(fsys afero.Fs, start string) (string, bool) {
	root, ok := FindGitRoot(fsys, start)
	if !ok {
		return "", false
	}
	return norm.NFC.String(canonicalize(fsys, root)), true
}

func canonicalize(fsys afero.Fs, root string) string {
	dotGit := filepath.Join(root, ".git")
	info, err := fsys.Stat(dotGit)
	if err != nil || info.IsDir() {
		return root
	}
	head, err := readSmallFile(fsys, dotGit)
	if err != nil || !strings.HasPrefix(head, "gitdir:") {
		return root
	}
	worktreeGitDir := resolveAgainst(root, strings.TrimSpace(strings.TrimPrefix(head, "gitdir:")))
	commondir, err := readSmallFile(fsys, filepath.Join(worktreeGitDir, "commondir"))
	if err != nil {
		return root // a submodule: no commondir
	}
	common := resolveAgainst(worktreeGitDir, strings.TrimSpace(commondir))

	// Check 1: the worktree's git dir must be <common>/worktrees/<name>.
	if filepath.Dir(worktreeGitDir) != filepath.Join(common, "worktrees") {
		return root
	}
	// Check 2: its gitdir file must point back at this checkout's .git.
	backlink, err := readSmallFile(fsys, filepath.Join(worktreeGitDir, "gitdir"))
	if err != nil {
		return root
	}
	backReal, err := realpath.Resolve(fsys, resolveAgainst(worktreeGitDir, strings.TrimSpace(backlink)))
	if err != nil {
		return root
	}
	rootReal, err := realpath.Resolve(fsys, root)
	if err != nil || backReal != filepath.Join(rootReal, ".git") {
		return root
	}
	if filepath.Base(common) != ".git" {
		return common // bare repository
	}
	return filepath.Dir(common)
}

func resolveAgainst(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func readSmallFile(fsys afero.Fs, p string) (string, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxGitFileSize))
	return string(b), err
}

// GitBranch returns the branch checked out in the git checkout that holds
// start, as `git rev-parse --abbrev-ref HEAD` prints it ("HEAD" when the
// head is detached); ok is false outside a checkout or when its HEAD
// cannot be read. A linked worktree's own HEAD is read.
func GitBranch(fsys afero.Fs, start string) (branch string, ok bool) {
	root, ok := FindGitRoot(fsys, start)
	if !ok {
		return "", false
	}
	gitDir := filepath.Join(root, ".git")
	if info, err := fsys.Stat(gitDir); err == nil && !info.IsDir() {
		head, err := readSmallFile(fsys, gitDir)
		if err != nil || !strings.HasPrefix(head, "gitdir:") {
			return "", false
		}
		gitDir = resolveAgainst(root, strings.TrimSpace(strings.TrimPrefix(head, "gitdir:")))
	}
	head, err := readSmallFile(fsys, filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	head = strings.TrimSpace(head)
	if ref, isRef := strings.CutPrefix(head, "ref:"); isRef {
		ref = strings.TrimSpace(ref)
		return strings.TrimPrefix(ref, "refs/heads/"), ref != ""
	}
	return "HEAD", head != ""
}
