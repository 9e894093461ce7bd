package teamserver_test

import (
	"testing"

	"github.com/agentmem-sdk/agentmem/teamserver"
	"github.com/agentmem-sdk/agentmem/teamserver/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) teamserver.TeamStore { return teamserver.NewMemoryStore() })
}

func TestMemoryStoreTrust(t *testing.T) {
	storetest.RunTrust(t, func(*testing.T) teamserver.TeamStore { return teamserver.NewMemoryStore() })
}

func TestMemoryStoreRefusals(t *testing.T) {
	storetest.RunRefusals(t, func(*testing.T) teamserver.TeamStore { return teamserver.NewMemoryStore() })
}

func TestMemoryStoreMemoryStores(t *testing.T) {
	storetest.RunMemoryStores(t, func(*testing.T) teamserver.MemoryStores { return teamserver.NewMemoryStore() })
}

func TestMemoryStoreMemoryStoresAPI(t *testing.T) {
	storetest.RunMemoryStoresAPI(t, func(*testing.T) teamserver.TeamStore { return teamserver.NewMemoryStore() })
	storetest.RunClaudeCodeRoute(t, func(*testing.T) teamserver.TeamStore { return teamserver.NewMemoryStore() })
}

func TestMemoryStoreLoad(t *testing.T) {
	storetest.RunMemoryStoresLoad(t, []teamserver.TeamStore{teamserver.NewMemoryStore()}, storetest.LoadOptions{})
}
