// Package prommetrics exports the sync server's measurements to
// Prometheus: request counts and latency by route and status, store
// latency, the store's connection pool and size, and the Go runtime. It
// is a module of its own so that the core module does not depend on the
// Prometheus client.
//
//	m := prommetrics.New(store)
//	h, _ := teamserver.NewHandler(store, teamserver.Options{Metrics: m, ...})
//	go http.ListenAndServe("127.0.0.1:9090", m.Handler())
package prommetrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentmem-sdk/agentmem/teamserver"
)

// Metrics is a teamserver.Metrics with a Prometheus registry of its own. Safe
// for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	store    *prometheus.HistogramVec
}

var _ teamserver.Metrics = (*Metrics)(nil)

// New returns the metrics of a server over store: its size (Counts) and,
// when it implements teamserver.PoolStats (the SQL store does), its
// connection pool.
func New(store teamserver.TeamStore) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentmem_team_requests_total",
			Help: "Sync requests by route (method and view) and status."}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentmem_team_request_seconds",
			Help: "Sync request latency by route.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		store: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentmem_team_store_seconds",
			Help: "Store call latency by operation.", Buckets: prometheus.DefBuckets}, []string{"op"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.store, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if ps, ok := store.(teamserver.PoolStats); ok {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentmem_team_store_connections_in_use",
			Help: "Store connections in use."}, func() float64 { return float64(ps.PoolStats().InUse) }))
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agentmem_team_store_connection_waits_total",
			Help: "Requests that waited for a free store connection."}, func() float64 { return float64(ps.PoolStats().WaitCount) }))
	}
	m.reg.MustRegister(&countCollector{c: store,
		repos:      prometheus.NewDesc("agentmem_team_repos", "Repos held.", nil, nil),
		entries:    prometheus.NewDesc("agentmem_team_entries", "Live entries held.", nil, nil),
		tombstones: prometheus.NewDesc("agentmem_team_tombstones", "Tombstones held.", nil, nil)})
	return m
}

// Request implements teamserver.Metrics.
func (m *Metrics) Request(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// StoreCall implements teamserver.Metrics.
func (m *Metrics) StoreCall(op string, d time.Duration) {
	m.store.WithLabelValues(op).Observe(d.Seconds())
}

// Handler serves the metrics page; serve it on an address of its own.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// countCollector reads the store's size at scrape time.
type countCollector struct {
	c                          teamserver.TeamStore
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
