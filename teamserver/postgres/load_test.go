package postgres_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/postgres"
	"github.com/agentmem-sdk/agentmem/teamserver/storetest"
)

// 128 clients on the Memory Stores routes of two servers sharing one
// PostgreSQL database lose no acknowledged write and get no 5xx.
func TestMemoryStoresLoadOnTwoServers(t *testing.T) {
	dsn := freshSchema(t, postgresDSN(t))
	var stores []teamserver.TeamStore
	for range 2 {
		s, err := postgres.Open(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	d := 2 * time.Second
	if v, err := strconv.ParseFloat(os.Getenv("AGENTMEM_LOAD_SECONDS"), 64); err == nil && v > 0 {
		d = time.Duration(v * float64(time.Second))
	}
	storetest.RunMemoryStoresLoad(t, stores, storetest.LoadOptions{Duration: d})
}
