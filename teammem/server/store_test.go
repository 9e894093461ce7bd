package server_test

import (
	"testing"

	"github.com/agentmem/agentmem/teammem/server"
	"github.com/agentmem/agentmem/teammem/server/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) server.Store { return server.NewMemoryStore() })
}
