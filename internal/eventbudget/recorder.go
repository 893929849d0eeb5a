package eventbudget

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// Recorder is the summaries' own Event recorder: a broadcaster of its own,
// so that a summary does not wait behind the per-object Events queued in
// the controllers' recorder, with the correlator's spam filter keyed by
// reason as well. client-go's default filter lets 25 Events per object and
// type through and then one every 5 minutes, which every summary about
// one Cluster or policy would share; a Budget records at most one per
// reason and subject every summary period.
type Recorder struct {
	record.EventRecorder
	broadcaster record.EventBroadcaster
}

// NewRecorder starts a recorder that writes through cfg as component.
func NewRecorder(cfg *rest.Config, scheme *runtime.Scheme, component string) (*Recorder, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the Event summaries' client: %w", err)
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{
		SpamKeyFunc: func(e *corev1.Event) string {
			o := e.InvolvedObject
			return e.Source.Component + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name + "/" + string(o.UID) + "/" + e.Type + "/" + e.Reason
		},
		// Bursts of 25 per reason and subject, one more every 10 s: a
		// Budget says less than that.
		BurstSize: 25,
		QPS:       0.1,
		// More than this many summaries of one kind within 10 minutes
		// would be folded into one.
		MaxEvents: 100,
	}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return &Recorder{EventRecorder: b.NewRecorder(scheme, corev1.EventSource{Component: component}), broadcaster: b}, nil
}

// Stop stops the broadcaster: what it has not sent yet is dropped.
func (r *Recorder) Stop() {
	if r != nil {
		r.broadcaster.Shutdown()
	}
}

// ForProcess returns the Budget of a process's controllers with burst, and
// its own Recorder of summaries writing through cfg as
// "lifeboat-event-summary"; reader reads the summaries' subjects. nil when
// burst is not positive (every Event recorded). The caller runs it (Start)
// for the summaries to be recorded.
func ForProcess(cfg *rest.Config, scheme *runtime.Scheme, reader client.Reader, burst int, reg prometheus.Registerer) (*Budget, error) {
	if burst <= 0 {
		return nil, nil
	}
	rec, err := NewRecorder(cfg, scheme, SummaryComponent)
	if err != nil {
		return nil, err
	}
	b, err := New(Options{
		Burst:        burst,
		Reader:       reader,
		Recorder:     rec,
		StopRecorder: rec.Stop,
		Registerer:   reg,
	})
	if err != nil {
		rec.Stop()
		return nil, err
	}
	return b, nil
}

// SummaryComponent is the source of the summaries' Events.
const SummaryComponent = "lifeboat-event-summary"

// RecordBoth records an Event on a binding and on the resource template its
// spec.resource names (when it names one): what a user watching either sees.
func RecordBoth(rec record.EventRecorder, binding client.Object, spec *workv1alpha2.ResourceBindingSpec, eventType, reason, message string) {
	if rec == nil {
		return
	}
	rec.Event(binding, eventType, reason, message)
	res := spec.Resource
	if res.Kind == "" || res.Name == "" {
		return
	}
	rec.Event(&corev1.ObjectReference{
		APIVersion: res.APIVersion, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name, UID: res.UID, ResourceVersion: res.ResourceVersion,
	}, eventType, reason, message)
}
