package sqlite_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/sqlite"
	"github.com/agentmem-sdk/agentmem/teamserver/storetest"
)

// loadDuration is how long a load run lasts: AGENTMEM_LOAD_SECONDS, 2 s
// by default.
func loadDuration() time.Duration {
	if v, err := strconv.ParseFloat(os.Getenv("AGENTMEM_LOAD_SECONDS"), 64); err == nil && v > 0 {
		return time.Duration(v * float64(time.Second))
	}
	return 2 * time.Second
}

// 128 clients on the Memory Stores routes of a SQLite server lose no
// acknowledged write and get no 5xx.
func TestMemoryStoresLoad(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "team.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	storetest.RunMemoryStoresLoad(t, []teamserver.TeamStore{s}, storetest.LoadOptions{Duration: loadDuration(), Clients: loadClients()})
}

// loadClients is the number of clients of a load run:
// AGENTMEM_LOAD_CLIENTS, 128 by default.
func loadClients() int {
	if n, err := strconv.Atoi(os.Getenv("AGENTMEM_LOAD_CLIENTS")); err == nil && n > 0 {
		return n
	}
	return 128
}
