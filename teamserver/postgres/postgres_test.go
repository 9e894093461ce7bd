package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/postgres"
	"github.com/agentmem-sdk/agentmem/teamserver/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// postgresDSN returns the test database from AGENTMEM_TEST_POSTGRES_DSN.
// .ci/run starts PostgreSQL and sets it, together with
// AGENTMEM_REQUIRE_POSTGRES=1, which makes a missing database a failure
// rather than a skip. Both are read here, inside the test, where Go's test
// cache records them: a cached result from a run without a database is
// not reused once they are set.
func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("AGENTMEM_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("AGENTMEM_REQUIRE_POSTGRES") != "" {
			t.Fatal("AGENTMEM_TEST_POSTGRES_DSN is not set but PostgreSQL is required")
		}
		t.Skip("set AGENTMEM_TEST_POSTGRES_DSN to run the PostgreSQL store tests (.ci/run does)")
	}
	return dsn
}

// freshSchema creates an empty schema and returns a DSN that uses it.
func freshSchema(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "agentmem_test_" + hex.EncodeToString(b[:])
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			_ = c.Close(context.Background())
		}
	})
	u, err := url.Parse(dsn)
	require.NoError(t, err, "AGENTMEM_TEST_POSTGRES_DSN must be a postgres:// URL")
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestPostgresStore(t *testing.T) {
	dsn := postgresDSN(t)
	storetest.Run(t, func(t *testing.T) teamserver.TeamStore {
		s, err := postgres.Open(context.Background(), freshSchema(t, dsn))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestPostgresTwoServersShareTheDatabase(t *testing.T) {
	// Two store instances (as two server processes would have) on one
	// database: a conditional write from one sees the other's.
	ctx := context.Background()
	schemaDSN := freshSchema(t, postgresDSN(t))
	a, err := postgres.Open(ctx, schemaDSN)
	require.NoError(t, err)
	defer a.Close()
	b, err := postgres.Open(ctx, schemaDSN)
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, a.ID(), b.ID(), "servers on one database report one store identity")
	repo := teamserver.Repo{Tenant: "acme", Name: "acme/shop"}
	first, err := a.Put(ctx, repo, teamserver.PutRequest{Entries: map[string]string{"x.md": "1"}})
	require.NoError(t, err)
	_, err = b.Put(ctx, repo, teamserver.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"x.md": "2"}})
	require.NoError(t, err)
	_, err = a.Put(ctx, repo, teamserver.PutRequest{IfMatch: first.Checksum, Entries: map[string]string{"x.md": "3"}})
	require.ErrorIs(t, err, teamserver.ErrPreconditionFailed)
	got, err := a.Get(ctx, repo, true)
	require.NoError(t, err)
	require.Equal(t, "2", got.Entries["x.md"])
}

func TestPostgresTrust(t *testing.T) {
	dsn := postgresDSN(t)
	storetest.RunTrust(t, func(t *testing.T) teamserver.TeamStore {
		s, err := postgres.Open(context.Background(), freshSchema(t, dsn))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// The PostgreSQL store serves the Memory Stores protocol's interface.
func TestPostgresMemoryStores(t *testing.T) {
	dsn := postgresDSN(t)
	storetest.RunMemoryStores(t, func(t *testing.T) teamserver.MemoryStores {
		s, err := postgres.Open(context.Background(), freshSchema(t, dsn))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// The Memory Stores API answers on PostgreSQL as the official SDKs
// document.
func TestPostgresMemoryStoresAPI(t *testing.T) {
	dsn := postgresDSN(t)
	storetest.RunMemoryStoresAPI(t, func(t *testing.T) teamserver.TeamStore {
		s, err := postgres.Open(context.Background(), freshSchema(t, dsn))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Claude Code's store route answers on PostgreSQL as on SQLite.
func TestPostgresClaudeCodeRoute(t *testing.T) {
	dsn := postgresDSN(t)
	storetest.RunClaudeCodeRoute(t, func(t *testing.T) teamserver.TeamStore {
		s, err := postgres.Open(context.Background(), freshSchema(t, dsn))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Both protocols refuse on PostgreSQL what some store could not hold,
// as they do on SQLite.
func TestPostgresRefusals(t *testing.T) {
	dsn := postgresDSN(t)
	storetest.RunRefusals(t, func(t *testing.T) teamserver.TeamStore {
		s, err := postgres.Open(context.Background(), freshSchema(t, dsn))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// A database made before provenance and review opens with its data, and
// records both from then on.
func TestPostgresMigratesAnOldDatabase(t *testing.T) {
	ctx := context.Background()
	schemaDSN := freshSchema(t, postgresDSN(t))
	conn, err := pgx.Connect(ctx, schemaDSN)
	require.NoError(t, err)
	defer conn.Close(ctx)
	storetest.RunMigration(t, func(ddl string) error {
		_, err := conn.Exec(ctx, ddl)
		return err
	}, func() teamserver.TeamStore {
		s, err := postgres.Open(ctx, schemaDSN)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

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
