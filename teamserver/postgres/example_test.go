package postgres_test

import (
	"context"
	"log"
	"net/http"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/postgres"
)

// Several server processes share one PostgreSQL database (compiled, not
// run: it needs a database).
func ExampleOpen() {
	store, err := postgres.Open(context.Background(), "postgres://agentmem@db.internal/agentmem")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	h, err := teamserver.NewHandler(store, teamserver.Options{})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:8787", h))
}
