package undecodable

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// metrics are the package's Prometheus metrics.
type metrics struct {
	objects *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lifeboat_undecodable_objects",
		Help: "Objects in the control plane that the controllers cannot decode into their Go type, by API group and kind: " +
			"left out of the caches, or kept at their last decodable version.",
	}, []string{"group", "kind"})}
	if err := reg.Register(m.objects); err != nil {
		return nil, fmt.Errorf("registering lifeboat_undecodable_objects: %w", err)
	}
	return m, nil
}

func (m *metrics) add(gk schema.GroupKind, n int) {
	if n != 0 {
		m.objects.WithLabelValues(gk.Group, gk.Kind).Add(float64(n))
	}
}
