package orphans

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the orphans controllers' Prometheus metrics. A nil *Metrics
// records nothing.
type Metrics struct {
	found             *prometheus.GaugeVec
	removed           *prometheus.CounterVec
	namespacesRemoved *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them on reg (in the
// controller manager: sigs.k8s.io/controller-runtime/pkg/metrics.Registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		found: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lifeboat_member_orphans",
			Help: "Objects labelled managed in a member whose Work does not exist, at the last scan, by cluster and verdict (Orphan: to be removed after the grace period; Kept*: kept, and why; Foreign: names another cluster's Work).",
		}, []string{"cluster", "verdict"}),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lifeboat_member_orphans_removed_total",
			Help: "Orphaned objects removed from a member cluster.",
		}, []string{"cluster"}),
		namespacesRemoved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lifeboat_member_namespaces_removed_total",
			Help: "Namespaces Lifeboat created in a member cluster and removed once empty.",
		}, []string{"cluster"}),
	}
	for _, c := range []prometheus.Collector{m.found, m.removed, m.namespacesRemoved} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering orphans metrics: %w", err)
		}
	}
	return m, nil
}

// scanned sets the found gauges of cluster from one scan's counts.
func (m *Metrics) scanned(cluster string, counts map[Verdict]int) {
	if m == nil {
		return
	}
	m.found.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	for v, n := range counts {
		m.found.WithLabelValues(cluster, string(v)).Set(float64(n))
	}
}

// forget drops the gauges of a cluster that is gone.
func (m *Metrics) forget(cluster string) {
	if m == nil {
		return
	}
	m.found.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}

func (m *Metrics) removedObjects(cluster string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.removed.WithLabelValues(cluster).Add(float64(n))
}

func (m *Metrics) removedNamespace(cluster string) {
	if m == nil {
		return
	}
	m.namespacesRemoved.WithLabelValues(cluster).Inc()
}
