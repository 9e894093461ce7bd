package memdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 15, 10, 30, 0, 0, time.UTC)

func writeMemory(t *testing.T, fsys afero.Fs, path, header string, mtime time.Time) {
	t.Helper()
	require.NoError(t, fsys.MkdirAll(filepath.Dir(path), 0o755))
	content := "body only\n"
	if header != "" {
		content = "---\n" + header + "\n---\n\nbody\n"
	}
	require.NoError(t, afero.WriteFile(fsys, path, []byte(content), 0o644))
	require.NoError(t, fsys.Chtimes(path, mtime, mtime))
}

func TestScanMemoryFiles(t *testing.T) {
	fsys := afero.NewMemMapFs()
	writeMemory(t, fsys, "/m/testing_policy.md", "name: Testing\ndescription: Integration tests use real DB\ntype: feedback", t0)
	writeMemory(t, fsys, "/m/user_role.md", "description: Data scientist\ntype: user", t0.Add(-26*time.Hour))
	writeMemory(t, fsys, "/m/nested/deeper/freeze.md", "description: Merge freeze\ntype: project", t0.Add(-5*24*time.Hour))
	writeMemory(t, fsys, "/m/team/ci.md", "description: CI rules\ntype: reference", t0.Add(time.Hour))
	writeMemory(t, fsys, "/m/plain.md", "", t0.Add(-time.Hour))
	writeMemory(t, fsys, "/m/broken.md", "name: [\n  bad: {", t0.Add(-2*time.Hour))
	writeMemory(t, fsys, "/m/MEMORY.md", "", t0.Add(2*time.Hour))
	writeMemory(t, fsys, "/m/team/MEMORY.md", "", t0.Add(2*time.Hour))
	writeMemory(t, fsys, "/m/nested/MEMORY.md", "", t0.Add(2*time.Hour))
	require.NoError(t, afero.WriteFile(fsys, "/m/notes.txt", []byte("x"), 0o644))
	require.NoError(t, fsys.MkdirAll("/m/dir.md", 0o755))

	got, err := ScanMemoryFiles(context.Background(), fsys, "/m/", ScanOptions{})
	require.NoError(t, err)
	var names []string
	for _, h := range got {
		names = append(names, h.Filename)
	}
	assert.Equal(t, []string{"team/ci.md", "testing_policy.md", "plain.md", "broken.md", "user_role.md", "nested/deeper/freeze.md"}, names)
	assert.Equal(t, "/m/testing_policy.md", got[1].Path)
	assert.Equal(t, Frontmatter{Name: "Testing", Description: "Integration tests use real DB", Type: TypeFeedback}, got[1].Frontmatter)
	assert.Equal(t, Frontmatter{}, got[3].Frontmatter, "a broken header still scans, without fields")

	assert.Equal(t, "- [reference] team/ci.md (2026-03-15T11:30:00.000Z): CI rules\n"+
		"- [feedback] testing_policy.md (2026-03-15T10:30:00.000Z): Integration tests use real DB\n"+
		"- plain.md (2026-03-15T09:30:00.000Z)\n"+
		"- broken.md (2026-03-15T08:30:00.000Z)\n"+
		"- [user] user_role.md (2026-03-14T08:30:00.000Z): Data scientist\n"+
		"- [project] nested/deeper/freeze.md (2026-03-10T10:30:00.000Z): Merge freeze", FormatManifest(got))

	capped, err := ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{MaxFiles: 2})
	require.NoError(t, err)
	assert.Equal(t, got[:2], capped, "the cap keeps the newest")
}

func TestScanReadsOnlyTheHeaderLines(t *testing.T) {
	fsys := afero.NewMemMapFs()
	// The closing --- is on line 32: beyond the 30 lines read, so no fields.
	long := "---\nname: late\n" + strings.Repeat("x: y\n", 29) + "---\nbody\n"
	require.NoError(t, afero.WriteFile(fsys, "/m/late.md", []byte(long), 0o644))
	got, err := ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Empty(t, got[0].Name)
	got, err = ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{HeaderLines: 40})
	require.NoError(t, err)
	assert.Equal(t, "late", got[0].Name)

	// One enormous line: reading stops at the byte cap, the file still scans.
	require.NoError(t, afero.WriteFile(fsys, "/m/huge.md", []byte(strings.Repeat("z", 5<<20)), 0o644))
	got, err = ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{})
	require.NoError(t, err)
	assert.Len(t, got, 2)
}

func TestReadLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "a\nb\n"},
		{"a\nb", 5, "a\nb"},
		{"", 3, ""},
		{strings.Repeat("l\n", 3000), 30, strings.Repeat("l\n", 30)},
		{strings.Repeat("q", 2000) + "\nx\n", 1, strings.Repeat("q", 2000) + "\n"},
	} {
		got, err := readLines(strings.NewReader(c.in), make([]byte, 0, 7), c.n)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got))
	}
}

type openFailFs struct {
	afero.Fs
	fail string
}

func (f *openFailFs) Open(name string) (afero.File, error) {
	if name == f.fail {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	return f.Fs.Open(name)
}

func TestScanDropsUnreadableFile(t *testing.T) {
	base := afero.NewMemMapFs()
	writeMemory(t, base, "/m/ok.md", "description: ok", t0)
	writeMemory(t, base, "/m/locked.md", "description: locked", t0)
	writeMemory(t, base, "/m/sub/x.md", "description: in an unreadable dir", t0)
	fsys := &openFailFs{Fs: base, fail: "/m/locked.md"}
	got, err := ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "ok.md", got[0].Filename)

	fsys.fail = "/m/sub"
	got, err = ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{})
	require.NoError(t, err)
	assert.Len(t, got, 2, "an unreadable subdirectory is skipped")

	fsys.fail = "/m"
	_, err = ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{})
	assert.ErrorIs(t, err, syscall.EACCES, "an unreadable memory dir is an error")
	assert.NotContains(t, err.Error(), "locked")
}

func TestScanMissingDirAndCancel(t *testing.T) {
	got, err := ScanMemoryFiles(context.Background(), afero.NewMemMapFs(), "/nope", ScanOptions{})
	require.NoError(t, err)
	assert.Empty(t, got)

	fsys := afero.NewMemMapFs()
	writeMemory(t, fsys, "/m/a.md", "", t0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ScanMemoryFiles(ctx, fsys, "/m", ScanOptions{})
	assert.True(t, errors.Is(err, context.Canceled))
}

func TestScanOnDiskSkipsLinksAndSpecialFiles(t *testing.T) {
	root := realTempDir(t)
	outside := realTempDir(t)
	mem := filepath.Join(root, "memory")
	fsys := afero.NewOsFs()
	writeMemory(t, fsys, filepath.Join(mem, "real.md"), "description: real", t0)
	writeMemory(t, fsys, filepath.Join(outside, "secret.md"), "description: outside", t0)
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(mem, "link.md")))
	require.NoError(t, os.Symlink(outside, filepath.Join(mem, "linkdir")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(mem, "pipe.md"), 0o644))

	got, err := ScanMemoryFiles(context.Background(), fsys, mem, ScanOptions{})
	require.NoError(t, err)
	require.Len(t, got, 1, "links and FIFOs are not memory files")
	assert.Equal(t, "real.md", got[0].Filename)
	assert.Equal(t, "real", got[0].Description)
	assert.True(t, got[0].ModTime.Equal(t0))
}

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		mtime time.Time
		days  int
		age   string
		stale bool
	}{
		{now, 0, "today", false},
		{now.Add(time.Hour), 0, "today", false}, // future: clamped
		{now.Add(-23 * time.Hour), 0, "today", false},
		{now.Add(-24 * time.Hour), 1, "yesterday", false},
		{now.Add(-47 * time.Hour), 1, "yesterday", false},
		{now.Add(-48 * time.Hour), 2, "2 days ago", true},
		{now.Add(-47 * 24 * time.Hour), 47, "47 days ago", true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.days, c.age), func(t *testing.T) {
			assert.Equal(t, c.days, MemoryAgeDays(c.mtime, now))
			assert.Equal(t, c.age, MemoryAge(c.mtime, now))
			text := memoryFreshnessText(c.mtime, now)
			note := MemoryFreshnessNote(c.mtime, now)
			header := MemoryHeaderLine("/m/a.md", c.mtime, now)
			if c.stale {
				assert.Contains(t, text, fmt.Sprintf("%d days ago", c.days))
				assert.Contains(t, text, "file:line")
				assert.Equal(t, "<system-reminder>"+text+"</system-reminder>\n", note)
				assert.Equal(t, text+"\n\nMemory: /m/a.md:", header)
			} else {
				assert.Empty(t, text)
				assert.Empty(t, note)
				assert.Equal(t, "Memory: /m/a.md:", header, "2.1.328 dropped the (saved %s) of a fresh memory", c.age)
			}
		})
	}
}

func TestScanParallelMatchesSerial(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for i := 0; i < 300; i++ {
		// Many equal mtimes, so the name tie-break matters across workers.
		writeMemory(t, fsys, fmt.Sprintf("/m/d%d/f%03d.md", i%7, i), fmt.Sprintf("description: n%d", i), t0.Add(time.Duration(i%40)*time.Minute))
	}
	before := runtime.NumGoroutine()
	serial, err := ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{MaxFiles: 50, Parallelism: 1})
	require.NoError(t, err)
	require.Len(t, serial, 50)
	for _, par := range []int{2, 3, 4, 0} {
		got, err := ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{MaxFiles: 50, Parallelism: par})
		require.NoError(t, err)
		assert.Equal(t, serial, got, "parallelism %d", par)
	}
	for i := 1; i < len(serial); i++ {
		a, b := serial[i-1], serial[i]
		assert.True(t, a.ModTime.After(b.ModTime) || (a.ModTime.Equal(b.ModTime) && a.Filename < b.Filename))
	}
	assert.True(t, serial[0].ModTime.Equal(t0.Add(39*time.Minute)))
	// Polled by hand (assert.Eventually would count its own goroutines),
	// allowing a finished worker a moment to exit after signalling done.
	for i := 0; i < 200 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "scan workers must end with ScanMemoryFiles")
}

func TestScanSkipsHiddenFolders(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for _, p := range []string{"/m/team/a.md", "/m/.team-conflicts/a.md.20260101T000000.000Z.md", "/m/.team-sync/x.md", "/m/notes/.draft.md", "/m/b.md"} {
		require.NoError(t, afero.WriteFile(fsys, p, []byte("---\nname: x\n---\n"), 0o644))
	}
	headers, err := ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{})
	require.NoError(t, err)
	var names []string
	for _, h := range headers {
		names = append(names, h.Filename)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"b.md", "team/a.md"}, names, "conflict copies and hidden files are no memories")
}

func TestIsHiddenPath(t *testing.T) {
	for rel, want := range map[string]bool{
		"a.md": false, "team/a.md": false, "a.b/c.md": false,
		".MEMORY.md.lock": true, ".team-sync/x.json": true, "notes/.draft.md": true, "x/.y/z.md": true,
	} {
		assert.Equal(t, want, fswalk.Hidden(rel), rel)
	}
}

func TestScanReadsLinks(t *testing.T) {
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/m/freeze.md", []byte("---\nname: deploy-freeze\ndescription: d\nmetadata:\n  type: project\n---\nSee [[release-train]] and [[oncall|who is on call]], again [[release-train]].\n"), 0o644))
	require.NoError(t, afero.WriteFile(fsys, "/m/plain.md", []byte("---\nname: plain\n---\nno links, [not] one\n"), 0o644))
	got, err := ScanMemoryFiles(context.Background(), fsys, "/m", ScanOptions{})
	require.NoError(t, err)
	links := map[string][]string{}
	for _, h := range got {
		links[h.Filename] = h.Links
	}
	assert.Equal(t, map[string][]string{"freeze.md": {"release-train", "oncall"}, "plain.md": nil}, links)
}

// The names-only walk that scans and the team listing use finds exactly
// what a full walk finds.
func TestMemoryFileNamesAgreesWithTheScanWalk(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a.md", "b.txt", "MEMORY.md", "notes/c.md", "notes/deep/d.md", ".team-conflicts/x.md", "notes/.hidden/y.md", "z.md"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(root, "notes"), filepath.Join(root, "linked")))
	require.NoError(t, os.Symlink(filepath.Join(root, "a.md"), filepath.Join(root, "link.md")))
	fsys := afero.NewOsFs()
	var want []string // the reference: every entry of a full walk that IsMemoryFile takes
	require.NoError(t, fswalk.Walk(context.Background(), fsys, root, func(e fswalk.Entry) error {
		if IsMemoryFile(e.Rel, e.Type) {
			want = append(want, e.Rel)
		}
		return nil
	}))
	got, err := memoryFileNames(context.Background(), fsys, root, "", nil)
	require.NoError(t, err)
	files, err := memoryFiles(context.Background(), fsys, root)
	require.NoError(t, err)
	for _, f := range files {
		assert.Equal(t, filepath.Join(root, filepath.FromSlash(f.rel)), f.abs)
	}
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"a.md", "notes/c.md", "notes/deep/d.md", "z.md"}, got)
}

// settle dates every folder below dir an hour back, as if the last save
// or sync was long ago, so its listing may be kept.
func settle(t *testing.T, dir string) {
	t.Helper()
	past := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chtimes(p, past, past)
		}
		return err
	}))
}

func TestTeamListingSeesEveryChangeOnDisk(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewOsFs()
	team := filepath.Join(t.TempDir(), "team")
	write := func(rel string) {
		p := filepath.Join(team, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	list := func() []string {
		names, err := teamFileNames(ctx, fsys, team)
		require.NoError(t, err)
		return append([]string(nil), names...)
	}
	write("a.md")
	write("sub/b.md")
	settle(t, team)
	require.Equal(t, []string{"a.md", "sub/b.md"}, list())
	require.True(t, cached(team), "a settled listing is kept")
	require.Equal(t, []string{"a.md", "sub/b.md"}, list(), "served from the cache")

	write("c.md") // the folder's mtime moves to now
	require.Equal(t, []string{"a.md", "c.md", "sub/b.md"}, list())
	require.False(t, cached(team), "a folder changed this second is not kept")
	write("d.md") // same second: the fresh folder was not kept, so this shows too
	require.Equal(t, []string{"a.md", "c.md", "d.md", "sub/b.md"}, list())

	settle(t, team)
	list()
	write("sub/e.md") // a change below a subfolder
	require.Equal(t, []string{"a.md", "c.md", "d.md", "sub/b.md", "sub/e.md"}, list())

	settle(t, team)
	list()
	require.NoError(t, os.Remove(filepath.Join(team, "a.md")))
	require.Equal(t, []string{"c.md", "d.md", "sub/b.md", "sub/e.md"}, list())

	// A subfolder swapped for another one, dated the same: a new folder.
	settle(t, team)
	list()
	other := filepath.Join(filepath.Dir(team), "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "z.md"), []byte("x"), 0o644))
	info, err := os.Stat(filepath.Join(team, "sub"))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(team, "sub")))
	require.NoError(t, os.Rename(other, filepath.Join(team, "sub")))
	for _, d := range []string{team, filepath.Join(team, "sub")} {
		require.NoError(t, os.Chtimes(d, info.ModTime(), info.ModTime()))
	}
	require.Equal(t, []string{"c.md", "d.md", "sub/z.md"}, list())

	// A team folder that goes away lists nothing and is not an error to
	// the prompt.
	require.NoError(t, os.RemoveAll(team))
	_, err = teamFileNames(ctx, fsys, team)
	require.Error(t, err)
}

func TestTeamListingIsSortedWithFoldersAndDashes(t *testing.T) {
	for _, fsys := range []afero.Fs{afero.NewOsFs(), afero.NewMemMapFs()} {
		team := filepath.Join(t.TempDir(), "team")
		for _, rel := range []string{"a/x.md", "a-b.md", "b.md"} {
			require.NoError(t, fsys.MkdirAll(filepath.Dir(filepath.Join(team, rel)), 0o755))
			require.NoError(t, afero.WriteFile(fsys, filepath.Join(team, rel), []byte("x"), 0o644))
		}
		if _, disk := fsys.(*afero.OsFs); disk {
			settle(t, team)
		}
		for range 2 {
			names, err := teamFileNames(context.Background(), fsys, team)
			require.NoError(t, err)
			require.Equal(t, []string{"a-b.md", "a/x.md", "b.md"}, names)
		}
	}
}

func cached(dir string) bool {
	listingCache.Lock()
	defer listingCache.Unlock()
	c, ok := listingCache.byDir[dir]
	return ok && c.unchanged()
}

// TestSaveRefusesWhatLintReports: Save writes nothing that breaks a rule
// lint reports (CheckMemoryFile, CheckIndexLine), and refuses it with the
// same *MemoryError.
func TestSaveRefusesWhatLintReports(t *testing.T) {
	cases := []struct {
		name string
		m    Memory
		want string
	}{
		{"body not UTF-8", Memory{Name: "Deploys", Description: "when we deploy", Body: "Tuesdays \xff\xfe"}, problemNotText},
		{"NUL in the body", Memory{Name: "Deploys", Description: "when we deploy", Body: "Tues\x00days"}, problemNotText},
		{"name too long for the index", Memory{File: "deploys.md", Name: strings.Repeat("n", 5000), Description: "when we deploy", Body: "Tuesdays."}, problemLongEntry},
		{"file name with a control character", Memory{File: "de\x07ploys.md", Name: "Deploys", Description: "d", Body: "Tuesdays."}, problemFileName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			d, err := NewDir(fsys, "/mem", DirOptions{})
			require.NoError(t, err)
			_, err = d.Save(context.Background(), c.m)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidMemory)
			var me *MemoryError
			require.True(t, errors.As(err, &me), "a *MemoryError: %v", err)
			assert.Equal(t, c.want, me.Problem)
			files, _ := afero.ReadDir(fsys, "/mem")
			assert.Empty(t, files, "nothing is written")
		})
	}
}

// TestCheckMemoryFileAcceptsWhatSaveWrites: a memory Save writes breaks no
// rule, and a body of any valid text stays accepted.
func TestCheckMemoryFileAcceptsWhatSaveWrites(t *testing.T) {
	fsys := afero.NewMemMapFs()
	d, err := NewDir(fsys, "/mem", DirOptions{})
	require.NoError(t, err)
	res, err := d.Save(context.Background(), Memory{Name: "Déploiements: mardi", Description: "quand on déploie", Body: "Le mardi. 日本語"})
	require.NoError(t, err)
	data, err := afero.ReadFile(fsys, res.Path)
	require.NoError(t, err)
	assert.Empty(t, CheckMemoryFile(res.File, data))
	assert.Nil(t, CheckIndexLine(res.IndexLine))
}

// benchTree writes n memory files (about 1 KiB each, 100 per directory) on
// the real disk and returns the directory and the file paths.
func benchTree(b *testing.B, n int) (string, []string) {
	b.Helper()
	dir := b.TempDir()
	paths := make([]string, 0, n)
	body := strings.Repeat("Some remembered detail about the project and why it matters.\n", 14)
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("topic%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		p := filepath.Join(sub, fmt.Sprintf("memory_%05d.md", i))
		content := fmt.Sprintf("---\nname: Memory %d\ndescription: Remembered fact number %d about the build\ntype: project\n---\n\n%s", i, i, body)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	return dir, paths
}

// floorRead is the least any scan must do: open each known file and read
// its first 4 KiB, with no directory walk, parsing or sorting.
func floorRead(b *testing.B, fsys afero.Fs, paths []string, buf []byte) {
	for _, p := range paths {
		f, err := fsys.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(f, buf); err != nil && err != io.ErrUnexpectedEOF {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkScanMemoryFiles reports ns/file for ScanMemoryFiles and for the
// floor, measured alternately in the same run, and their ratio (x-floor).
func BenchmarkScanMemoryFiles(b *testing.B) {
	for _, n := range []int{200, 2_000, 20_000} {
		for _, par := range []int{0, 1} {
			name := fmt.Sprintf("files=%d/parallel", n)
			if par == 1 {
				name = fmt.Sprintf("files=%d/serial", n)
			}
			benchScan(b, name, n, par)
		}
	}
}

func benchScan(b *testing.B, name string, n, parallelism int) {
	b.Run(name, func(b *testing.B) {
		dir, paths := benchTree(b, n)
		fsys := afero.NewOsFs()
		buf := make([]byte, 4096)
		ctx := context.Background()
		floorRead(b, fsys, paths, buf) // warm the page cache
		var scanTime, floorTime time.Duration
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			got, err := ScanMemoryFiles(ctx, fsys, dir, ScanOptions{Parallelism: parallelism})
			scanTime += time.Since(start)
			if err != nil || len(got) != min(n, maxMemoryFiles) {
				b.Fatalf("scan: %d headers, %v", len(got), err)
			}
			b.StopTimer()
			start = time.Now()
			floorRead(b, fsys, paths, buf)
			floorTime += time.Since(start)
			b.StartTimer()
		}
		perFile := float64(scanTime.Nanoseconds()) / float64(b.N*n)
		floor := float64(floorTime.Nanoseconds()) / float64(b.N*n)
		b.ReportMetric(perFile, "ns/file")
		b.ReportMetric(floor, "floor-ns/file")
		b.ReportMetric(perFile/floor, "x-floor")
	})
}

// BenchmarkBuildCombinedMemoryPrompt (buildCombinedMemoryPrompt) builds the combined prompt over two
// full 200-line indexes and 200 team files, and reports the ratio to a
// floor that only reads both indexes from the same filesystem: on the real
// disk, where hosts keep memory, and on afero's in-memory filesystem, whose
// own directory listing (it sorts a map under a lock on every call) costs
// about ten times that floor by itself.
func BenchmarkBuildCombinedMemoryPrompt(b *testing.B) {
	b.Run("fs=disk", func(b *testing.B) {
		benchCombinedPrompt(b, afero.NewOsFs(), b.TempDir())
	})
	b.Run("fs=memmap", func(b *testing.B) {
		benchCombinedPrompt(b, afero.NewMemMapFs(), "/m")
	})
}

func benchCombinedPrompt(b *testing.B, fsys afero.Fs, root string) {
	index := lines(200, indexEntry)
	team := filepath.Join(root, "team")
	if err := fsys.MkdirAll(team, 0o755); err != nil {
		b.Fatal(err)
	}
	indexes := []string{filepath.Join(root, "MEMORY.md"), filepath.Join(team, "MEMORY.md")}
	for _, p := range indexes {
		if err := afero.WriteFile(fsys, p, []byte(index), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		if err := afero.WriteFile(fsys, filepath.Join(team, fmt.Sprintf("topic_%d.md", i)), []byte("---\nname: t\n---\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// The team folder was last changed an hour ago, as between two syncs;
	// a folder changed this very second is listed again on every prompt.
	hourAgo := time.Now().Add(-time.Hour)
	if err := fsys.Chtimes(team, hourAgo, hourAgo); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := LoadPromptRequest{AutoDir: root + string(filepath.Separator)}
	var buildTime, floorTime time.Duration
	size := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := buildCombinedMemoryPrompt(ctx, fsys, req)
		buildTime += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
		b.StopTimer()
		start = time.Now()
		for _, p := range indexes {
			if _, err := afero.ReadFile(fsys, p); err != nil {
				b.Fatal(err)
			}
		}
		floorTime += time.Since(start)
		b.StartTimer()
	}
	if !strings.Contains(out0(fsys, req), "- topic_99.md\n") {
		b.Fatal("the prompt does not list the team files")
	}
	b.ReportMetric(float64(size), "prompt-bytes")
	b.ReportMetric(float64(buildTime)/float64(floorTime), "x-floor")
}

// out0 builds the prompt once, for a check after the timed loop.
func out0(fsys afero.Fs, req LoadPromptRequest) string {
	out, _ := buildCombinedMemoryPrompt(context.Background(), fsys, req)
	return out
}
