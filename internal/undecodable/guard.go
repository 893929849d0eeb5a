package undecodable

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

// DefaultReportInterval is how often an undecodable object that does not
// change is reported again (it is seen again at every relist).
const DefaultReportInterval = 10 * time.Minute

// Options configure a Guard.
type Options struct {
	// Groups are the API groups whose typed informers are guarded.
	Groups []string
	// Registerer registers the lifeboat_undecodable_objects gauge.
	Registerer prometheus.Registerer
	// Log receives the report of each skipped object.
	Log logr.Logger
	// Clock times the reports; the real clock when nil.
	Clock clock.PassiveClock
	// ReportInterval is DefaultReportInterval when zero.
	ReportInterval time.Duration
}

// Guard keeps the objects of its groups that cannot be decoded out of the
// informers it builds, and reports them. Use WrapTransport on the rest
// config and NewInformer as the cache's NewInformer; both are needed.
type Guard struct {
	scheme  *runtime.Scheme
	groups  sets.Set[string]
	check   *checker
	log     logr.Logger
	metrics *metrics
	reports *reporter
}

// New builds a Guard that decodes with scheme.
func New(scheme *runtime.Scheme, o Options) (*Guard, error) {
	if o.Registerer == nil {
		return nil, fmt.Errorf("undecodable objects guard: no metrics registerer")
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	marker, err := newMarker()
	if err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ReportInterval <= 0 {
		o.ReportInterval = DefaultReportInterval
	}
	return &Guard{
		scheme:  scheme,
		groups:  sets.New(o.Groups...),
		check:   newChecker(scheme, marker),
		log:     o.Log,
		metrics: m,
		reports: newReporter(o.Log, o.Clock, o.ReportInterval),
	}, nil
}

// WrapTransport is a rest.Config WrapTransport: it checks the responses of
// the requests this Guard's informers make and passes every other request
// through.
func (g *Guard) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &transport{next: rt, check: g.check, log: g.log}
}

// Stored reports whether the object of gk named namespace/name is stored
// but cannot be decoded: the caches do not hold it (or hold an older
// version), yet it is not gone. Controllers that treat an object missing
// from the cache as deleted ask this first.
func (g *Guard) Stored(gk schema.GroupKind, namespace, name string) bool {
	if g == nil {
		return false
	}
	return g.reports.has(reportKey{gk: gk, namespace: namespace, name: name})
}

// RecordEventsWith sets the recorder of the Warning Events on skipped
// objects; until it is set, they are logged and counted only. The
// recorder usually comes from the manager built with this Guard.
func (g *Guard) RecordEventsWith(rec events.EventRecorder) {
	g.reports.setRecorder(rec)
}
