package failback

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the failback controller's Prometheus metrics. A nil
// *Metrics records nothing.
type Metrics struct {
	started    prometheus.Counter
	completed  prometheus.Counter
	abandoned  prometheus.Counter
	incomplete prometheus.Counter
	duration   prometheus.Histogram
}

// NewMetrics creates the metrics and registers them on reg (in the
// controller manager: sigs.k8s.io/controller-runtime/pkg/metrics.Registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lifeboat_failbacks_started_total",
			Help: "Failbacks asked for: workloads moved back to a cluster they failed over away from.",
		}),
		completed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lifeboat_failbacks_completed_total",
			Help: "Failbacks whose copy moved back became Healthy.",
		}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lifeboat_failbacks_abandoned_total",
			Help: "Failbacks given up because the copy moved back was not Healthy within the grace period.",
		}),
		incomplete: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lifeboat_failbacks_incomplete_total",
			Help: "Failbacks that moved the workload but ended neither completed nor abandoned: the cluster failed again, the placement changed, or the new placement was kept without all of it Healthy.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lifeboat_failback_duration_seconds",
			Help:    "Time from a cluster becoming Ready again to a workload that failed over away from it being Healthy there.",
			Buckets: prometheus.ExponentialBuckets(5, 2, 12), // 5s .. ~2.8h
		}),
	}
	for _, c := range []prometheus.Collector{m.started, m.completed, m.abandoned, m.incomplete, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering failback metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) start() {
	if m != nil {
		m.started.Inc()
	}
}

func (m *Metrics) complete(took time.Duration) {
	if m == nil {
		return
	}
	m.completed.Inc()
	if took >= 0 {
		m.duration.Observe(took.Seconds())
	}
}

func (m *Metrics) abandon() {
	if m != nil {
		m.abandoned.Inc()
	}
}

func (m *Metrics) endIncomplete() {
	if m != nil {
		m.incomplete.Inc()
	}
}
