package failover

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the failover engine's Prometheus metrics. A nil *Metrics
// records nothing.
type Metrics struct {
	evictions *prometheus.CounterVec
	cancels   *prometheus.CounterVec
	duration  prometheus.Histogram
	openTasks prometheus.Gauge

	mu   sync.Mutex
	open map[string]int // binding key → open eviction tasks
}

// NewMetrics creates the metrics and registers them on reg (in the
// controller manager: sigs.k8s.io/controller-runtime/pkg/metrics.Registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lifeboat_evictions_total",
			Help: "Evictions of a workload from a cluster, by reason (ApplicationFailure, TaintUntolerated) and producer.",
		}, []string{"reason", "producer"}),
		cancels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lifeboat_evictions_cancelled_total",
			Help: "Evictions undone because their cluster recovered before another cluster took the workload, by reason.",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lifeboat_failover_duration_seconds",
			Help:    "Time from the first unhealthy observation of a failed workload to a healthy replacement.",
			Buckets: prometheus.ExponentialBuckets(5, 2, 12), // 5s .. ~2.8h
		}),
		openTasks: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lifeboat_eviction_tasks_open",
			Help: "Graceful eviction tasks not finished yet, over all bindings.",
		}),
		open: map[string]int{},
	}
	for _, c := range []prometheus.Collector{m.evictions, m.cancels, m.duration, m.openTasks} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering failover metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) evicted(reason, producer string) {
	if m == nil {
		return
	}
	m.evictions.WithLabelValues(reason, producer).Inc()
}

func (m *Metrics) cancelled(reason string) {
	if m == nil {
		return
	}
	m.cancels.WithLabelValues(reason).Inc()
}

func (m *Metrics) failoverTook(d time.Duration) {
	if m == nil || d < 0 {
		return
	}
	m.duration.Observe(d.Seconds())
}

// setOpenTasks records the open tasks of one binding; 0 forgets it.
func (m *Metrics) setOpenTasks(binding string, n int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.openTasks.Add(float64(n - m.open[binding]))
	if n == 0 {
		delete(m.open, binding)
	} else {
		m.open[binding] = n
	}
}
