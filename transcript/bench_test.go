package transcript

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/internal/fswalk"
	"github.com/spf13/afero"
)

// countingFs counts the bytes read through every file it opens.
type countingFs struct {
	afero.Fs
	mu      sync.Mutex
	perFile map[string]int64
}

type countingFile struct {
	afero.File
	fs   *countingFs
	name string
}

func (c *countingFs) Open(name string) (afero.File, error) {
	f, err := c.Fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c, name: name}, nil
}

func (f *countingFile) add(n int) {
	f.fs.mu.Lock()
	f.fs.perFile[f.name] += int64(n)
	f.fs.mu.Unlock()
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.add(n)
	return n, err
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.add(n)
	return n, err
}

// sparseSessions writes n transcripts of size bytes each on the real disk:
// real entries in the first and last few KiB, a hole between (sparse, so
// 1,000 files of 1 MB cost almost no disk).
func sparseSessions(b testing.TB, n int, size int64) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "projects", "-work")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := NewUUID()
		stamp := Stamp{SessionID: id, Cwd: "/work", GitBranch: "main"}
		first := MessageEntry{Type: TypeUser, Message: Message{Role: "user", Content: mustJSON(fmt.Sprintf("session %d: fix the flaky test", i))}}.Encode(stamp)
		head := string(first.Raw) + "\n"
		tail := "\n" + string(metadataEntry(TypeCustomTitle, id, fmt.Sprintf("Session %d", i)).Raw) + "\n" + string(metadataEntry(TypeTag, id, "ci").Raw) + "\n"
		f, err := os.Create(filepath.Join(dir, id+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = f.WriteString(head)
		_, _ = f.WriteAt([]byte(tail), size-int64(len(tail)))
		f.Close()
	}
	return dir
}

// BenchmarkList lists 1,000 sessions of 1 MB each: it reports the most
// bytes read from one file (at most two 64 KiB windows) and x-floor, the
// time against a bare stat walk plus reading the same windows, in the
// same run.
func BenchmarkList(b *testing.B) {
	dir := sparseSessions(b, 1000, 1<<20)
	ctx := context.Background()
	s, err := NewJSONLStore(afero.NewOsFs(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var list, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		infos, err := s.List(ctx)
		list += time.Since(start)
		if err != nil || len(infos) != 1000 {
			b.Fatalf("listed %d sessions: %v", len(infos), err)
		}
		b.StopTimer()
		start = time.Now()
		fsys := afero.NewOsFs()
		_ = fswalk.Walk(ctx, fsys, dir, func(e fswalk.Entry) error {
			f, err := fsys.Open(e.Abs)
			if err != nil {
				return nil
			}
			info, _ := f.Stat()
			buf := make([]byte, windowBytes)
			_, _ = f.ReadAt(buf, 0)
			_, _ = f.ReadAt(buf, info.Size()-windowBytes)
			f.Close()
			return nil
		})
		floor += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	// The same listing through a filesystem that counts what it reads.
	cfs := &countingFs{Fs: afero.NewOsFs(), perFile: map[string]int64{}}
	cs, err := NewJSONLStore(cfs, dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.List(ctx); err != nil {
		b.Fatal(err)
	}
	var most int64
	for _, n := range cfs.perFile {
		most = max(most, n)
	}
	if most > 2*windowBytes {
		b.Fatalf("read %d bytes of one file", most)
	}
	b.ReportMetric(float64(most), "bytes-read/file")
	b.ReportMetric(float64(list)/float64(floor), "x-floor")
}

// heapPeak samples the live heap while fn runs and returns the peak above
// the heap before it.
func heapPeak(fn func()) int64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := int64(sample[0].Value.Uint64())
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := int64(s[0].Value.Uint64()); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return peak.Load() - base
}

// BenchmarkResume50MB resumes a 50 MB transcript (no compact boundary, so
// all of it counts) and reports the peak live heap over the file's size:
// it must stay under 2.
func BenchmarkResume50MB(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "p")
	s, err := NewJSONLStore(afero.NewOsFs(), dir, Options{BatchEntries: 1 << 20, BatchBytes: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	id := NewUUID()
	stamp := Stamp{SessionID: id, Cwd: "/work"}
	text := strings.Repeat("a line of the conversation about the flaky checkout test. ", 80)
	parent := ""
	for i := 0; i < 10_400; i++ {
		typ, role := TypeUser, "user"
		if i%2 == 1 {
			typ, role = TypeAssistant, "assistant"
		}
		e := MessageEntry{Type: typ, Parent: parent, Message: Message{ID: fmt.Sprintf("msg_%d", i), Role: role,
			Content: mustJSON([]Block{{Type: "text", Text: fmt.Sprintf("%d %s", i, text)}})}}.Encode(stamp)
		parent = e.UUID
		if err := s.Append(ctx, id, e); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(s.Path(id))
	if err != nil {
		b.Fatal(err)
	}
	var worst float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var r *Resumed
		peak := heapPeak(func() {
			var err error
			if r, err = Resume(ctx, s, id); err != nil {
				b.Fatal(err)
			}
		})
		if len(r.Messages) != 10_400 {
			b.Fatalf("resumed %d messages", len(r.Messages))
		}
		worst = max(worst, float64(peak)/float64(info.Size()))
	}
	if worst >= 2 {
		b.Fatalf("peak heap %.2fx the file", worst)
	}
	b.ReportMetric(float64(info.Size())/1e6, "file-MB")
	b.ReportMetric(worst, "x-file-size")
}
