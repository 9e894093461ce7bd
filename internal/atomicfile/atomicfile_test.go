package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errInjected = errors.New("injected fault")

// faultFs fails the chosen step of the protocol, to simulate a crash or a
// full disk in the middle of a replacement.
type faultFs struct {
	afero.Fs
	failWrite, failSync, failRename bool
}

type faultFile struct {
	afero.File
	fs *faultFs
}

func (f *faultFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	file, err := f.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFs) Rename(oldname, newname string) error {
	if f.failRename {
		return errInjected
	}
	return f.Fs.Rename(oldname, newname)
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.failWrite {
		return len(p) / 2, errInjected
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if f.fs.failSync {
		return errInjected
	}
	return f.File.Sync()
}

func TestWriteFileReplaces(t *testing.T) {
	writers := map[string]func(afero.Fs, string, []byte, os.FileMode) error{"sync": WriteFile, "nosync": WriteFileNoSync}
	for name, fsys := range map[string]afero.Fs{
		"mem/sync": afero.NewMemMapFs(), "mem/nosync": afero.NewMemMapFs(),
		"os/sync":   afero.NewBasePathFs(afero.NewOsFs(), t.TempDir()),
		"os/nosync": afero.NewBasePathFs(afero.NewOsFs(), t.TempDir()),
	} {
		write := writers[name[strings.Index(name, "/")+1:]]
		t.Run(name, func(t *testing.T) {
			require.NoError(t, fsys.MkdirAll("/d", 0o755))
			require.NoError(t, write(fsys, "/d/f.md", []byte("one"), 0o644))
			require.NoError(t, write(fsys, "/d/f.md", []byte("two"), 0o600))
			got, err := afero.ReadFile(fsys, "/d/f.md")
			require.NoError(t, err)
			assert.Equal(t, "two", string(got))
			info, err := fsys.Stat("/d/f.md")
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
			entries, err := afero.ReadDir(fsys, "/d")
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file may be left behind")
		})
	}
}

func TestWriteFileFaultKeepsOldContent(t *testing.T) {
	cases := map[string]*faultFs{
		"write":  {failWrite: true},
		"sync":   {failSync: true},
		"rename": {failRename: true},
	}
	for name, fsys := range cases {
		t.Run(name, func(t *testing.T) {
			fsys.Fs = afero.NewMemMapFs()
			require.NoError(t, afero.WriteFile(fsys.Fs, "/f.md", []byte("old"), 0o644))
			err := WriteFile(fsys, "/f.md", []byte("new content"), 0o644)
			require.ErrorIs(t, err, errInjected)
			got, err := afero.ReadFile(fsys.Fs, "/f.md")
			require.NoError(t, err)
			assert.Equal(t, "old", string(got))
			entries, err := afero.ReadDir(fsys.Fs, "/")
			require.NoError(t, err)
			assert.Len(t, entries, 1, "the temporary file must be removed")
		})
	}
}

func TestWriteFileMissingDir(t *testing.T) {
	fsys := afero.NewOsFs()
	err := WriteFile(fsys, filepath.Join(t.TempDir(), "missing", "f.md"), []byte("x"), 0o644)
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestWriteFileWithALongName writes targets whose names are as long as a
// filesystem allows (255 bytes, ASCII and multi-byte): the temporary
// file's name must fit too.
func TestWriteFileWithALongName(t *testing.T) {
	dir := t.TempDir()
	fsys := afero.NewOsFs()
	for _, name := range []string{
		strings.Repeat("n", 252) + ".md",
		strings.Repeat("é", 126) + ".md", // 255 bytes, cut inside no character
		"short.md",
	} {
		path := filepath.Join(dir, name)
		require.NoError(t, WriteFile(fsys, path, []byte("content"), 0o644), "a name of %d bytes", len(name))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "content", string(got))
		assert.LessOrEqual(t, len("."+tempBase(name)+".tmp-4294967295"), 255)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "no temporary file is left")
}

// TestIsTemp: the names of WriteFile's temporary files, and no others.
func TestIsTemp(t *testing.T) {
	fsys := afero.NewMemMapFs()
	tmp, err := afero.TempFile(fsys, "/", "."+tempBase("notes.md")+".tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	if name := filepath.Base(tmp.Name()); !IsTemp(name) {
		t.Fatalf("IsTemp(%q) = false for a temporary file's own name", name)
	}
	for name, want := range map[string]bool{
		".notes.md.tmp-123": true, ".a.tmp-1": true,
		"notes.md.tmp-123": false, ".notes.md.tmp-": false, ".notes.md.tmp-12a": false,
		".notes.md": false, ".tmp-123": false, "notes.md": false,
	} {
		if IsTemp(name) != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, !want, want)
		}
	}
}
