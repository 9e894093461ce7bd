package teamserver

import (
	"context"
	"sync"
)

// keyLocks serializes, within one process, the writers of one key (a
// memory store, a repo) before they take a database connection: a writer that
// waits for the database's lock holds a connection while it waits, so
// many writers of one store would hold the whole pool and leave the
// readers none. Across servers the database's lock still decides.
type keyLocks struct {
	mu    sync.Mutex
	byKey map[string]*keyLock
}

type keyLock struct {
	ch    chan struct{} // holds a token while the key is locked
	users int           // writers holding or waiting for it
}

// lock waits for key, or for ctx to end; it returns the unlock.
func (k *keyLocks) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.byKey == nil {
		k.byKey = map[string]*keyLock{}
	}
	l := k.byKey[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		k.byKey[key] = l
	}
	l.users++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.byKey, key)
		}
		k.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
