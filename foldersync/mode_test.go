package foldersync_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem-sdk/agentmem/foldersync"
	"github.com/agentmem-sdk/agentmem/foldersync/memremote"
	"github.com/agentmem-sdk/agentmem/foldersync/remotetest"
	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

func skipOf(res foldersync.Result, p string) string {
	for _, s := range res.Skipped {
		if s.Path == p {
			return s.Reason
		}
	}
	return ""
}

func contains(list []string, p string) bool {
	for _, s := range list {
		if s == p {
			return true
		}
	}
	return false
}

// modeClients returns a folder synced both ways and the same folder's
// engines for one side only, all agreed on a.md, b.md and c.md.
func modeClients(t *testing.T, r *memremote.Remote) (both *remotetest.Client, pull, push *foldersync.Engine) {
	t.Helper()
	both = remotetest.NewClient(t, r, foldersync.Options{})
	for _, p := range []string{"a.md", "b.md", "c.md"} {
		both.Write(t, p, p+" v1\n")
	}
	both.Round(t)
	d, err := memdir.NewDir(afero.NewOsFs(), both.Dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pull, err = foldersync.New(d, both.Dir, r, foldersync.Options{Mode: foldersync.ModePull}); err != nil {
		t.Fatal(err)
	}
	if push, err = foldersync.New(d, both.Dir, r, foldersync.Options{Mode: foldersync.ModePush}); err != nil {
		t.Fatal(err)
	}
	return both, pull, push
}

func TestModePullChangesTheFolderOnly(t *testing.T) {
	r := memremote.New("m")
	c, pull, _ := modeClients(t, r)
	c.Write(t, "a.md", "a local edit\n")  // waits for a push
	c.Remove(t, "b.md")                   // waits for a push
	r.Write("c.md", []byte("c remote\n")) // pulled
	r.Write("d.md", []byte("d remote\n")) // pulled
	c.Write(t, "e.md", "e local\n")       // waits
	res, err := pull.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !contains(res.Pulled, "c.md") || !contains(res.Pulled, "d.md") || len(res.Pushed)+len(res.DeletedRemote) != 0 {
		t.Fatalf("a pull-only round pulled %v, pushed %v, deleted on the remote %v", res.Pulled, res.Pushed, res.DeletedRemote)
	}
	if got, _ := r.Read("a.md"); string(got) != "a.md v1\n" {
		t.Fatalf("a pull-only round sent a.md: the remote holds %q", got)
	}
	if _, ok := r.Read("b.md"); !ok {
		t.Fatal("a pull-only round deleted b.md on the remote")
	}
	if _, ok := r.Read("e.md"); ok {
		t.Fatal("a pull-only round pushed e.md")
	}
	// A path both sides changed is left alone and reported.
	c.Write(t, "c.md", "c local\n")
	r.Write("c.md", []byte("c remote 2\n"))
	res, err = pull.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if skipOf(res, "c.md") != foldersync.SkipConflict || len(res.Conflicts) != 0 {
		t.Fatalf("c.md changed on both sides: skipped %q, conflicts %v; want %q and none", skipOf(res, "c.md"), res.Conflicts, foldersync.SkipConflict)
	}
	if got, _ := c.Read(t, "c.md"); got != "c local\n" {
		t.Fatalf("a pull-only round overwrote a local edit: c.md holds %q", got)
	}
	// A round both ways then sends what waited.
	res = c.Round(t)
	if !contains(res.Pushed, "a.md") || !contains(res.Pushed, "e.md") || !contains(res.DeletedRemote, "b.md") || len(res.Conflicts) != 1 {
		t.Fatalf("the round both ways after the pull pushed %v, deleted %v, conflicts %v", res.Pushed, res.DeletedRemote, res.Conflicts)
	}
}

func TestModePushChangesTheRemoteOnly(t *testing.T) {
	r := memremote.New("m")
	c, _, push := modeClients(t, r)
	c.Write(t, "a.md", "a local edit\n")  // pushed
	c.Remove(t, "b.md")                   // deleted on the remote
	r.Write("c.md", []byte("c remote\n")) // waits for a pull
	r.Remove("c.md")
	r.Write("d.md", []byte("d remote\n")) // waits
	res, err := push.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !contains(res.Pushed, "a.md") || !contains(res.DeletedRemote, "b.md") || len(res.Pulled)+len(res.DeletedLocal) != 0 {
		t.Fatalf("a push-only round pushed %v, deleted on the remote %v, pulled %v, deleted here %v", res.Pushed, res.DeletedRemote, res.Pulled, res.DeletedLocal)
	}
	if _, ok := c.Read(t, "c.md"); !ok {
		t.Fatal("a push-only round deleted c.md here")
	}
	if _, ok := c.Read(t, "d.md"); ok {
		t.Fatal("a push-only round wrote d.md here")
	}
	if _, ok := r.Read("c.md"); ok {
		t.Fatal("a push-only round brought c.md back to the remote")
	}
	// A path both sides changed is left alone on both.
	c.Write(t, "a.md", "a local 2\n")
	r.Write("a.md", []byte("a remote 2\n"))
	res, err = push.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if skipOf(res, "a.md") != foldersync.SkipConflict {
		t.Fatalf("a.md changed on both sides: skipped %q, want %q", skipOf(res, "a.md"), foldersync.SkipConflict)
	}
	if got, _ := r.Read("a.md"); string(got) != "a remote 2\n" {
		t.Fatalf("a push-only round overwrote the remote's edit: a.md holds %q", got)
	}
	if (foldersync.Skip{Reason: foldersync.SkipConflict}).Refused() {
		t.Fatal("a conflict skip is reported as refused; a round both ways settles it")
	}
	res = c.Round(t)
	if !contains(res.Pulled, "d.md") || !contains(res.DeletedLocal, "c.md") || len(res.Conflicts) != 1 {
		t.Fatalf("the round both ways after the push pulled %v, deleted here %v, conflicts %v", res.Pulled, res.DeletedLocal, res.Conflicts)
	}
}

func TestModeOutOfRange(t *testing.T) {
	dir := t.TempDir()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := foldersync.New(d, dir, memremote.New("m"), foldersync.Options{Mode: 7}); err == nil {
		t.Fatal("New took mode 7")
	}
}

// mirror keeps Agreed in memory, as a driver's state would.
type mirror struct {
	a     foldersync.Agreed
	ok    bool
	saves int
}

func (m *mirror) Seed() (foldersync.Agreed, bool) { return m.a, m.ok }
func (m *mirror) Save(_ context.Context, a foldersync.Agreed) error {
	m.a, m.ok = a, true
	m.saves++
	return nil
}

func TestBasisInMemory(t *testing.T) {
	r := memremote.New("m")
	dir := t.TempDir()
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := &mirror{}
	newEngine := func() *foldersync.Engine {
		e, err := foldersync.New(d, dir, r, foldersync.Options{BasisInMemory: true, Mirror: m})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	c := &remotetest.Client{Dir: dir, Engine: newEngine()}
	c.Write(t, "a.md", "a\n")
	c.Write(t, "b.md", "b\n")
	c.Round(t)
	if _, err := os.Stat(filepath.Join(dir, foldersync.DefaultBasisName)); !os.IsNotExist(err) {
		t.Fatalf("a basis kept in memory left a basis file (stat: %v)", err)
	}
	if !m.ok || len(m.a.Entries) != 2 {
		t.Fatalf("the mirror holds %v entries after the first round, want 2", len(m.a.Entries))
	}
	// A new engine starts from the mirror: a deletion there is evidence.
	c.Engine = newEngine()
	c.Remove(t, "a.md")
	res := c.Round(t)
	if !contains(res.DeletedRemote, "a.md") {
		t.Fatalf("an engine seeded by the mirror did not send the deletion of a.md: %+v", res)
	}
	// Without a mirror, a fresh engine deletes nothing on either side.
	e, err := foldersync.New(d, dir, r, foldersync.Options{BasisInMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Remove(t, "b.md")
	res, err = e.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedRemote)+len(res.DeletedLocal) != 0 || !contains(res.Pulled, "b.md") {
		t.Fatalf("a fresh in-memory basis deleted %v/%v, pulled %v; want nothing deleted and b.md back", res.DeletedRemote, res.DeletedLocal, res.Pulled)
	}
}

func TestConflictsIn(t *testing.T) {
	r := memremote.New("m")
	parent := t.TempDir()
	dir := filepath.Join(parent, "team")
	asideDir := filepath.Join(parent, ".team-conflicts")
	for _, p := range []string{dir, asideDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d, err := memdir.NewDir(afero.NewOsFs(), dir, memdir.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := foldersync.New(d, dir, r, foldersync.Options{ConflictsDir: asideDir}); err == nil {
		t.Fatal("New took a conflicts folder outside the memory directory without ConflictsIn")
	}
	ad, err := d.WithPath(asideDir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := foldersync.New(d, dir, r, foldersync.Options{ConflictsDir: asideDir, ConflictsIn: ad})
	if err != nil {
		t.Fatal(err)
	}
	c := &remotetest.Client{Dir: dir, Engine: e}
	c.Write(t, "a.md", "a\n")
	c.Round(t)
	c.Write(t, "a.md", "a local\n")
	r.Write("a.md", []byte("a remote\n"))
	res := c.Round(t)
	if len(res.Conflicts) != 1 || filepath.Dir(res.Conflicts[0].SavedAs) != asideDir {
		t.Fatalf("conflicts %+v, want one kept in %s", res.Conflicts, asideDir)
	}
	raw, err := os.ReadFile(res.Conflicts[0].SavedAs)
	if err != nil || string(raw) != "a local\n" {
		t.Fatalf("the copy kept aside holds %q (%v), want the local edit", raw, err)
	}
}

func TestResetLastsUntilARoundThatPushes(t *testing.T) {
	r := memremote.New("m")
	c, pull, _ := modeClients(t, r)
	// The remote is replaced by an older copy: a.md differs, b.md is gone.
	r.Replace("m2", map[string][]byte{"a.md": []byte("a older\n"), "c.md": []byte("c.md v1\n")})
	res, err := pull.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.BasisReset {
		t.Fatal("the pull did not find the remote replaced")
	}
	// A second pull still keeps the local side: the reset is not settled.
	res, err = pull.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Read(t, "a.md"); got != "a.md v1\n" {
		t.Fatalf("a pull after a reset took the replaced remote's a.md: %q", got)
	}
	if _, ok := c.Read(t, "b.md"); !ok || len(res.DeletedLocal) != 0 {
		t.Fatalf("a pull after a reset deleted b.md here (%v)", res.DeletedLocal)
	}
	// The round both ways settles it: the local side reaches the remote.
	res = c.Round(t)
	if got, _ := r.Read("a.md"); string(got) != "a.md v1\n" {
		t.Fatalf("after the round both ways the remote holds a.md %q, want the local side", got)
	}
	if _, ok := r.Read("b.md"); !ok {
		t.Fatal("after the round both ways the remote lacks b.md")
	}
	// Settled: a deletion now propagates again.
	c.Remove(t, "b.md")
	res = c.Round(t)
	if !contains(res.DeletedRemote, "b.md") {
		t.Fatalf("after the reset settled, deleting b.md did not reach the remote: %+v", res)
	}
}

func TestAsideName(t *testing.T) {
	r := memremote.New("m")
	c := remotetest.NewClient(t, r, foldersync.Options{AsideName: func(rel, stamp string) string { return rel + "." + stamp + ".md" }})
	c.Write(t, "a.md", "a\n")
	c.Round(t)
	c.Write(t, "a.md", "a local\n")
	r.Write("a.md", []byte("a remote\n"))
	res := c.Round(t)
	if len(res.Conflicts) != 1 || !strings.HasPrefix(filepath.Base(res.Conflicts[0].SavedAs), "a.md.") || !strings.HasSuffix(res.Conflicts[0].SavedAs, ".md") {
		t.Fatalf("conflicts %+v, want one kept as a.md.<time>.md", res.Conflicts)
	}
}
