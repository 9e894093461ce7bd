package filehistory_test

import (
	"errors"
	"io/fs"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentmem-sdk/agentmem/filehistory"
)

func TestReadStateRules(t *testing.T) {
	r := filehistory.NewReadState(filehistory.ReadStateOptions{})
	assert.NoError(t, r.CheckWrite("/m/new.md", nil, false, true), "creating a file needs no read")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("x"), true, false), filehistory.ErrNotRead)

	r.RecordRead("/m/a.md", []byte("x"), filehistory.View{Offset: 2, Limit: 1, Partial: true})
	assert.NoError(t, r.CheckWrite("/m/a.md", []byte("x"), true, false), "an edit needs any read")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("x"), true, true), filehistory.ErrNotRead, "a Write needs a whole read")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("y"), true, false), filehistory.ErrModifiedSinceRead)

	r.RecordWrite("/m/a.md", []byte("z"))
	assert.NoError(t, r.CheckWrite("/m/a.md", []byte("z"), true, true))
	r.Forget("/m/a.md")
	assert.ErrorIs(t, r.CheckWrite("/m/a.md", []byte("z"), true, true), filehistory.ErrNotRead)
}

func TestReadStateBounds(t *testing.T) {
	r := filehistory.NewReadState(filehistory.ReadStateOptions{MaxFiles: 3, MaxBytes: 10})
	for i := range 4 {
		r.RecordRead("/m/"+strconv.Itoa(i), []byte("ab"), filehistory.View{})
	}
	assert.ErrorIs(t, r.CheckWrite("/m/0", []byte("ab"), true, true), filehistory.ErrNotRead, "the least recently used file is forgotten")
	assert.NoError(t, r.CheckWrite("/m/3", []byte("ab"), true, true))

	r.RecordRead("/m/big", []byte("0123456789"), filehistory.View{}) // all 10 bytes
	for _, p := range []string{"/m/1", "/m/2", "/m/3"} {
		assert.ErrorIs(t, r.CheckWrite(p, []byte("ab"), true, true), filehistory.ErrNotRead, "bytes bound: %s", p)
	}
	r.RecordRead("/m/huge", make([]byte, 11), filehistory.View{})
	assert.ErrorIs(t, r.CheckWrite("/m/huge", make([]byte, 11), true, true), filehistory.ErrNotRead, "a file over the bound is never remembered")
}

func TestReadStateChanges(t *testing.T) {
	r := filehistory.NewReadState(filehistory.ReadStateOptions{})
	disk := map[string]string{"/m/a": "mine", "/m/b": "mine", "/m/c": "read only"}
	r.RecordWrite("/m/a", []byte("mine"))
	r.RecordWrite("/m/b", []byte("mine"))
	r.RecordRead("/m/c", []byte("read only"), filehistory.View{})
	read := func(p string) ([]byte, error) {
		s, ok := disk[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	assert.Empty(t, r.Changes(read))
	disk["/m/a"] = "theirs"
	delete(disk, "/m/b")
	disk["/m/c"] = "changed, but never written by the agent"
	ch := r.Changes(read)
	assert.ElementsMatch(t, []filehistory.Change{{Path: "/m/a", Content: []byte("theirs")}, {Path: "/m/b", Deleted: true}}, ch)
	assert.Empty(t, r.Changes(read))
	assert.Empty(t, r.Changes(func(string) ([]byte, error) { return nil, errors.New("io") }), "an unreadable file is not a change")
}
