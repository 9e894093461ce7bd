package recall

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// diskTree writes memories on the real disk and backdates every file and
// folder by an hour, so their mtimes are settled (older than the racy
// window) as on a directory nobody touched lately.
func diskTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(memoryText(rel, body)), 0o644))
	}
	backdate(t, dir)
	return dir
}

func memoryText(name, body string) string {
	return "---\nname: " + name + "\ndescription: " + body + "\ntype: project\n---\n\n" + body + "\n"
}

// backdate sets every mtime below dir (dir included) to one fixed time
// long past.
func backdate(t *testing.T, dir string) {
	t.Helper()
	old := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
}

func names(f *Finder, query string) []string {
	var out []string
	for _, h := range f.Find(context.Background(), query, nil, nil) {
		out = append(out, h.Filename)
	}
	return out
}

// TestFinderSeesChangesWithoutAFullWalk: on the real disk a Find after a
// file is added, removed or renamed (its folder's mtime moved), or after a
// new subfolder, sees the change at once; an edit in place is seen through
// the change notice.
func TestFinderSeesChangesWithoutAFullWalk(t *testing.T) {
	dir := diskTree(t, map[string]string{
		"deploy.md":       "deploys happen on tuesday",
		"team/oncall.md":  "the pager moves weekly",
		"team/grafana.md": "dashboards live in grafana",
	})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))

	// Added: the folder's mtime moves.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team", "kafka.md"), []byte(memoryText("kafka", "kafka consumer lag alerts")), 0o644))
	assert.Equal(t, []string{"team/kafka.md"}, names(f, "kafka consumer lag"))

	// A new subfolder: its parent's mtime moves.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "team", "infra"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team", "infra", "vault.md"), []byte(memoryText("vault", "vault secret storage")), 0o644))
	assert.Equal(t, []string{"team/infra/vault.md"}, names(f, "vault secret storage"))

	// Removed and renamed.
	require.NoError(t, os.Remove(filepath.Join(dir, "team", "grafana.md")))
	assert.Empty(t, names(f, "grafana dashboards"))
	require.NoError(t, os.Rename(filepath.Join(dir, "team", "oncall.md"), filepath.Join(dir, "pager.md")))
	assert.Equal(t, []string{"pager.md"}, names(f, "pager moves weekly"))

	// Edited in place, with every folder settled again: only the change
	// notice tells.
	backdate(t, dir)
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.md"), []byte(memoryText("deploy.md", "releases ship on thursday now")), 0o644))
	eventuallyFinds(t, f, "releases ship thursday", "deploy.md", "an edit in place is seen through its change notice")
}

// TestFinderSkipsTheWalkAndWalksOnSchedule: with every folder settled and
// no notice, Find reads nothing (a change hidden from both is not seen),
// and the periodic full walk finds it.
func TestFinderSkipsTheWalkAndWalksOnSchedule(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: 300 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, f.Close()) // no more notices
	require.NoError(t, f.Close(), "a second Close does nothing")

	// A change that neither moves a folder nor sends a notice.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.md"), []byte(memoryText("deploy.md", "releases ship on thursday now")), 0o644))
	backdate(t, dir)
	assert.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"), "no walk: the old text is still indexed")
	eventuallyFinds(t, f, "releases ship thursday", "deploy.md", "the periodic full walk finds it")
}

// TestFinderRacyFolder: a folder whose mtime is within the racy window is
// walked on every Find, so a change in the same clock tick is not missed.
func TestFinderRacyFolder(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	require.NoError(t, f.Close()) // no notices: only the folders tell
	now := time.Now()
	require.NoError(t, os.Chtimes(dir, now, now))
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	// Add a file and put the folder's mtime back where the last Find saw
	// it, as a change within one clock tick would leave it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kafka.md"), []byte(memoryText("kafka", "kafka consumer lag alerts")), 0o644))
	require.NoError(t, os.Chtimes(dir, now, now))
	assert.Equal(t, []string{"kafka.md"}, names(f, "kafka consumer lag"))
}

// TestFinderOnMemMapFsWalksEveryTime: another filesystem gives no notices
// and its folders' mtimes do not move, so every Find walks.
func TestFinderOnMemMapFsWalksEveryTime(t *testing.T) {
	fsys, dir := sampleTree(t)
	f, err := NewFinder(mustDir(fsys, dir), FinderOptions{})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "deploys tuesdays"))
	require.NoError(t, afero.WriteFile(fsys, "/mem/deploy.md", []byte(memoryText("deploy.md", "releases ship thursday")), 0o644))
	assert.Equal(t, []string{"deploy.md"}, names(f, "releases ship thursday"))
}

// TestFinderSeesADirectoryReplaced: the memory directory removed and made
// again (a restore, a sync that swaps folders) is read anew, even when
// its mtime is set back to the old one.
func TestFinderSeesADirectoryReplaced(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, os.RemoveAll(dir))
	assert.Empty(t, names(f, "when do deploys happen"), "gone")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kafka.md"), []byte(memoryText("kafka", "kafka consumer lag alerts")), 0o644))
	backdate(t, dir)
	assert.Equal(t, []string{"kafka.md"}, names(f, "kafka consumer lag"), "the new directory is read")

	// Replaced between two Finds, the new one's mtime set to the old one's.
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vault.md"), []byte(memoryText("vault", "vault secret storage")), 0o644))
	backdate(t, dir)
	eventuallyFinds(t, f, "vault secret storage", "vault.md", "found")
}

// TestAnUnclosedFinderReleasesItsWatcher: a Finder dropped without Close
// stops its watcher once it is collected.
func TestAnUnclosedFinderReleasesItsWatcher(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	var d *changeDetector // held past the Finder, which it does not reach
	func() {
		f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
		require.NoError(t, err)
		require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen")) // starts the watcher
		d = f.corpus.changes
	}()
	released := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.closed && d.watcher == nil
	}
	require.False(t, released(), "the watcher runs while the Finder is in use")
	require.Eventually(t, func() bool {
		runtime.GC()
		return released()
	}, 5*time.Second, 20*time.Millisecond, "the watcher is closed once the Finder is collected")
	d.loop.Wait() // and its goroutine has ended
}

// TestACancelledWalkKeepsTheNotice: a change notice that a Find's walk
// was cancelled before acting on is still acted on by the next Find.
func TestACancelledWalkKeepsTheNotice(t *testing.T) {
	dir := diskTree(t, map[string]string{"deploy.md": "deploys happen on tuesday"})
	f, err := NewFinder(mustDir(afero.NewOsFs(), dir), FinderOptions{FullWalkEvery: time.Hour})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"deploy.md"}, names(f, "when do deploys happen"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.md"), []byte(memoryText("deploy.md", "releases ship on thursday now")), 0o644))
	backdate(t, dir)
	require.Eventually(t, f.corpus.changes.dirty.Load, 5*time.Second, 5*time.Millisecond, "the notice arrives")

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Empty(t, f.Find(cancelled, "releases ship thursday", nil, nil), "a cancelled Find finds nothing")
	assert.Equal(t, []string{"deploy.md"}, names(f, "releases ship thursday"), "the next Find walks")
}

// eventuallyFinds waits (up to 5 s) for query to find exactly want: what
// a change notice or a scheduled walk brings is not there at once.
func eventuallyFinds(t *testing.T, f *Finder, query, want, msg string) {
	t.Helper()
	assert.Eventually(t, func() bool {
		got := names(f, query)
		return len(got) == 1 && got[0] == want
	}, 5*time.Second, 10*time.Millisecond, msg)
}
