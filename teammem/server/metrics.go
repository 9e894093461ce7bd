package server

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the handler's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	store    *prometheus.HistogramVec
}

// Counter is what a Store may implement to report its size on the
// metrics page: repos, live entries and tombstones.
type Counter interface {
	Counts(ctx context.Context) (repos, entries, tombstones int64, err error)
}

// PoolStats is what a Store may implement to report its connection pool.
type PoolStats interface {
	PoolStats() sql.DBStats
}

func newMetrics(store Store) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentmem_team_requests_total",
			Help: "Sync requests by route (method and view) and status."}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentmem_team_request_seconds",
			Help: "Sync request latency by route.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		store: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentmem_team_store_seconds",
			Help: "Store call latency by operation.", Buckets: prometheus.DefBuckets}, []string{"op"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.store, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if ps, ok := store.(PoolStats); ok {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentmem_team_store_connections_in_use",
			Help: "Store connections in use."}, func() float64 { return float64(ps.PoolStats().InUse) }))
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agentmem_team_store_connection_waits_total",
			Help: "Requests that waited for a free store connection."}, func() float64 { return float64(ps.PoolStats().WaitCount) }))
	}
	if c, ok := store.(Counter); ok {
		m.reg.MustRegister(&countCollector{c: c,
			repos:      prometheus.NewDesc("agentmem_team_repos", "Repos held.", nil, nil),
			entries:    prometheus.NewDesc("agentmem_team_entries", "Live entries held.", nil, nil),
			tombstones: prometheus.NewDesc("agentmem_team_tombstones", "Tombstones held.", nil, nil)})
	}
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) storeTime(op string, d time.Duration) {
	m.store.WithLabelValues(op).Observe(d.Seconds())
}

// MetricsHandler serves the Prometheus metrics: request counts and
// latency by route and status, store latency, pool use, repos, entries
// and tombstones, and the Go runtime. Serve it on an address of its own
// (agentmem team serve --metrics-addr).
func (h *Handler) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(h.metrics.reg, promhttp.HandlerOpts{})
}

// countCollector reads the store's size at scrape time.
type countCollector struct {
	c                          Counter
	repos, entries, tombstones *prometheus.Desc
}

func (cc *countCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cc.repos
	ch <- cc.entries
	ch <- cc.tombstones
}

func (cc *countCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	repos, entries, tombs, err := cc.c.Counts(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(cc.repos, prometheus.GaugeValue, float64(repos))
	ch <- prometheus.MustNewConstMetric(cc.entries, prometheus.GaugeValue, float64(entries))
	ch <- prometheus.MustNewConstMetric(cc.tombstones, prometheus.GaugeValue, float64(tombs))
}
