package teamserver

import (
	"database/sql"
	"time"
)

// Metrics receives the handler's measurements. Module
// github.com/agentmem-sdk/agentmem/teamserver/prommetrics implements it
// with Prometheus (agentmem team serve --metrics-addr); nil means none.
// Its methods are called on every request and must not block.
type Metrics interface {
	// Request reports one request: its route (method and view), status
	// and latency.
	Request(route string, status int, d time.Duration)
	// StoreCall reports the latency of one store operation (put, stream,
	// hashes).
	StoreCall(op string, d time.Duration)
}

// PoolStats is what a store may implement to report its connection pool;
// the store NewSQLStore returns does.
type PoolStats interface {
	PoolStats() sql.DBStats
}

type noMetrics struct{}

func (noMetrics) Request(string, int, time.Duration) {}
func (noMetrics) StoreCall(string, time.Duration)    {}
