package teamserver

import (
	"errors"
	"net/http"
	"time"
)

// faultRetry is how long after a write met a storage fault /readyz says
// not ready, and the Retry-After of the answer: past it, the next write
// tries the store again.
const faultRetry = 30 * time.Second

// storeFault is a store failure the operator must mend, as answered.
type storeFault struct {
	status             int
	typ, code, message string
	at                 time.Time
}

// storageFault answers a full disk (507) or a read-only database (503)
// with its own code and words, logs the cause and records it for
// /readyz; nil for any other error.
func (h *Handler) storageFault(err error) *storeFault {
	var f storeFault
	switch {
	case errors.Is(err, ErrStorageFull):
		f = storeFault{status: http.StatusInsufficientStorage, typ: "api_error", code: "storage_full",
			message: "the server's disk is full: nothing was written; retry once its operator has freed space"}
	case errors.Is(err, ErrStoreReadOnly):
		f = storeFault{status: http.StatusServiceUnavailable, typ: "api_error", code: "store_read_only",
			message: "the server's database is read-only: nothing was written; retry once its operator has made it writable"}
	default:
		return nil
	}
	f.at = h.cfg.Now()
	if prev := h.fault.Swap(&f); prev == nil || f.at.Sub(prev.at) >= faultRetry {
		h.log.Error("team memory store cannot write", "error", err)
	}
	return &f
}
