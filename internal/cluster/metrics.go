package cluster

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metrics are the cluster controllers' Prometheus metrics. A nil *Metrics
// records nothing.
type Metrics struct {
	readyTransitions *prometheus.CounterVec
	flapDamped       *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them on reg (in the
// controller manager: sigs.k8s.io/controller-runtime/pkg/metrics.Registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		readyTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lifeboat_cluster_ready_transitions_total",
			Help: "Changes of a member cluster's Ready condition written by the cluster-status controller (or, for a Pull cluster's Unknown, the lease monitor), by cluster and new status (True, False, Unknown); a member whose count keeps growing is flapping.",
		}, []string{"cluster", "status"}),
		flapDamped: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lifeboat_cluster_flap_damped",
			Help: "1 while a member cluster carries the cluster.lifeboat.dev/flapping:NoSchedule taint (it failed repeatedly and gets no new placements), else 0.",
		}, []string{"cluster"}),
	}
	for _, c := range []prometheus.Collector{m.readyTransitions, m.flapDamped} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering cluster metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) readyChanged(cluster string, status metav1.ConditionStatus) {
	if m == nil {
		return
	}
	m.readyTransitions.WithLabelValues(cluster, string(status)).Inc()
}

func (m *Metrics) setDamped(cluster string, damped bool) {
	if m == nil {
		return
	}
	v := 0.0
	if damped {
		v = 1
	}
	m.flapDamped.WithLabelValues(cluster).Set(v)
}

// forget drops the series of a deleted cluster.
func (m *Metrics) forget(cluster string) {
	if m == nil {
		return
	}
	m.flapDamped.DeleteLabelValues(cluster)
	m.readyTransitions.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}
