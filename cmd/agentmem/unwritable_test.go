package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockFolder makes dir unwritable for this process as the kernel would
// for a folder of another user: immutable when the tests run as root
// (whom mode bits do not stop), read-only by its mode otherwise. The
// cleanup unlocks it.
func lockFolder(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() == 0 {
		out, err := exec.Command("chattr", "+i", dir).CombinedOutput()
		require.NoError(t, err, "chattr +i (e2fsprogs) makes a folder unwritable for root: %s", out)
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
	} else {
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	}
	require.Error(t, os.WriteFile(filepath.Join(dir, ".probe"), nil, 0o644), "the folder is locked")
}

// TestUnwritableFolderIsOneSkip runs, on both protocols through the
// built binary and server, a user one of whose folders this process may
// not write while a teammate adds and changes memories there and
// elsewhere: the round skips the locked paths (exit 9, said as
// unwritable), pulls the rest, pushes the user's new memory, and a
// read-only (0444) file the teammate changed keeps its mode.
func TestUnwritableFolderIsOneSkip(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, url, token := fixedServer(t, root)
	stores := storeMount(t, url, token, "locked-store")
	for _, pr := range bothProtocols(url) {
		t.Run(pr.name, func(t *testing.T) {
			base := t.TempDir()
			ana := newPerson(t, base, "ana", token, stores)
			ben := newPerson(t, base, "ben", token, stores)
			ana.ok(pr.round...)
			ben.ok(pr.round...)
			writeRaw(t, ben.team, pr.dir+"theirs/a.md", []byte("a, v1\n"))
			writeRaw(t, ben.team, pr.dir+"ro.md", []byte("read-only, v1\n"))
			ben.ok(pr.round...)
			ana.ok(pr.round...)
			require.NoError(t, os.Chmod(filepath.Join(ana.team, pr.dir+"ro.md"), 0o444))
			lockFolder(t, filepath.Join(ana.team, pr.dir+"theirs"))

			writeRaw(t, ben.team, pr.dir+"theirs/a.md", []byte("a, v2\n"))
			writeRaw(t, ben.team, pr.dir+"theirs/b.md", []byte("b, new\n"))
			writeRaw(t, ben.team, pr.dir+"free.md", []byte("free\n"))
			writeRaw(t, ben.team, pr.dir+"ro.md", []byte("read-only, v2\n"))
			ben.ok(pr.round...)
			writeRaw(t, ana.team, pr.dir+"mine.md", []byte("my new memory\n"))

			out, code := ana.run(pr.round...)
			assert.Equal(t, exitRefused, code, out)
			assert.Contains(t, out, "unwritable")
			files := memoryFiles(t, ana.team)
			assert.Equal(t, "free\n", files[pr.dir+"free.md"], "the rest is pulled:\n%s", out)
			assert.Equal(t, "read-only, v2\n", files[pr.dir+"ro.md"])
			assert.Equal(t, "a, v1\n", files[pr.dir+"theirs/a.md"], "the locked folder is left as it is")
			info, err := os.Stat(filepath.Join(ana.team, pr.dir+"ro.md"))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o444), info.Mode().Perm(), "a pulled file keeps its mode")
			ben.ok(pr.round...)
			assert.Equal(t, "my new memory\n", memoryFiles(t, ben.team)[pr.dir+"mine.md"], "the user's new memory was pushed")
		})
	}
}
