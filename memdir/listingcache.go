package memdir

import (
	"context"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/spf13/afero"
)

// The team listing in the combined prompt is rebuilt on every prompt, yet a
// team directory changes only when someone saves or a sync pulls. On the
// real disk a folder's mtime moves whenever an entry is created, removed or
// renamed in it, so a listing stays good while every folder it read keeps
// its identity and mtime. Only the real disk is cached: other filesystems
// (afero's in-memory one does not move a folder's mtime) are listed every
// time.

// listingSettle is how old a folder's mtime must be, when the listing
// starts, for the listing to be kept. A change in the same clock tick as
// the last one leaves the mtime as it was, so a folder changed this moment
// is listed again next time (git's rule for racily clean entries).
const listingSettle = 2 * time.Second

// maxCachedListings bounds the cache; past it, the cache starts over.
const maxCachedListings = 64

type cachedListing struct {
	names   []string
	folders []folderStamp
}

// folderStamp is one folder the listing read, as it was then.
type folderStamp struct {
	path string
	info os.FileInfo
}

var listingCache struct {
	sync.Mutex
	byDir map[string]cachedListing
}

// teamFileNames lists the memory files below dir as memoryFileNames does,
// sorted, served from the cache while no folder it read has changed. The
// slice may be shared: callers must not change it.
func teamFileNames(ctx context.Context, fsys afero.Fs, dir string) ([]string, error) {
	if _, disk := fsys.(*afero.OsFs); !disk {
		names, err := memoryFileNames(ctx, fsys, dir, "", nil)
		sortNames(names)
		return names, err
	}
	listingCache.Lock()
	c, ok := listingCache.byDir[dir]
	listingCache.Unlock()
	if ok && c.unchanged() {
		return c.names, nil
	}
	start := time.Now()
	var folders []string
	names, err := memoryFileNames(ctx, fsys, dir, "", &folders)
	if err != nil {
		return nil, err
	}
	sortNames(names)
	fresh := cachedListing{names: names}
	for _, f := range folders {
		info, err := os.Lstat(f)
		if err != nil || !info.IsDir() || start.Sub(info.ModTime()) < listingSettle {
			return names, nil // changing now: list again next time
		}
		fresh.folders = append(fresh.folders, folderStamp{path: f, info: info})
	}
	listingCache.Lock()
	if listingCache.byDir == nil || len(listingCache.byDir) >= maxCachedListings {
		listingCache.byDir = map[string]cachedListing{}
	}
	listingCache.byDir[dir] = fresh
	listingCache.Unlock()
	return names, nil
}

// unchanged reports whether every folder the listing read is still the
// same folder with the same mtime.
func (c cachedListing) unchanged() bool {
	for _, f := range c.folders {
		now, err := os.Lstat(f.path)
		if err != nil || !os.SameFile(now, f.info) || !now.ModTime().Equal(f.info.ModTime()) {
			return false
		}
	}
	return true
}

// sortNames sorts names unless the walk already listed them in order (a
// folder "a" and a file "a-b.md" come out of the walk as "a/x.md" before
// "a-b.md").
func sortNames(names []string) {
	if !slices.IsSorted(names) {
		slices.Sort(names)
	}
}
