package teamserver

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStorageFaultClassification: the drivers' words for a full disk and
// a read-only database are told apart from any other failure.
func TestStorageFaultClassification(t *testing.T) {
	for msg, want := range map[string]error{
		"database or disk is full (13)":                            ErrStorageFull,
		"write /srv/team.db-wal: no space left on device":          ErrStorageFull,
		"ERROR: could not extend file (SQLSTATE 53100)":            ErrStorageFull,
		"attempt to write a readonly database (8)":                 ErrStoreReadOnly,
		"open /srv/team.db: read-only file system":                 ErrStoreReadOnly,
		"cannot execute INSERT in a read-only transaction (25006)": ErrStoreReadOnly,
		"database is locked (5) (SQLITE_BUSY)":                     ErrOverloaded,
	} {
		got := overloaded(errors.New(msg))
		assert.ErrorIs(t, got, want, msg)
	}
	assert.Nil(t, overloaded(nil))
	other := errors.New("syntax error")
	assert.Equal(t, other, overloaded(other))
}
