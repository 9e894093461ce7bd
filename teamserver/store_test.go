package teamserver_test

import (
	"testing"

	"github.com/agentmem/agentmem/teamserver"
	"github.com/agentmem/agentmem/teamserver/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) teamserver.Store { return teamserver.NewMemoryStore() })
}
