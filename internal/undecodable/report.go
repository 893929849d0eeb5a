package undecodable

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

// ReasonDecodeFailed is the reason of the Warning Event on a skipped object.
const ReasonDecodeFailed = "DecodeFailed"

// reporter logs each skipped object and records an Event on it: once, then
// again when its resourceVersion changes or after interval, so that an
// object seen at every relist does not flood the log.
type reporter struct {
	log      logr.Logger
	clock    clock.PassiveClock
	interval time.Duration

	mu       sync.Mutex
	recorder events.EventRecorder
	last     map[reportKey]reported
}

type reportKey struct {
	gk              schema.GroupKind
	namespace, name string
}

type reported struct {
	resourceVersion string
	at              time.Time
}

func newReporter(log logr.Logger, c clock.PassiveClock, interval time.Duration) *reporter {
	return &reporter{log: log, clock: c, interval: interval, last: map[reportKey]reported{}}
}

func (r *reporter) setRecorder(rec events.EventRecorder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recorder = rec
}

// skipped reports the stand-in obj (whose metadata is m) of an object that
// failed to decode with decodeError, which arrived as typ and was handled
// as out, cached being the same object's version in the store.
func (r *reporter) skipped(gvk schema.GroupVersionKind, obj runtime.Object, m metav1.Object, decodeError string, typ watch.EventType, out outcome, cached metav1.Object) {
	key := reportKey{gk: gvk.GroupKind(), namespace: m.GetNamespace(), name: m.GetName()}
	log := r.log.WithValues("group", gvk.Group, "kind", gvk.Kind, "namespace", m.GetNamespace(), "name", m.GetName(),
		"uid", m.GetUID(), "resourceVersion", m.GetResourceVersion())
	decodeErr := errors.New(decodeError)
	if typ == watch.Deleted {
		r.forget(key)
		log.Info("undecodable object deleted", "error", decodeErr.Error())
		return
	}
	now := r.clock.Now()
	r.mu.Lock()
	prev, seen := r.last[key]
	if seen && prev.resourceVersion == m.GetResourceVersion() && now.Sub(prev.at) < r.interval {
		r.mu.Unlock()
		return
	}
	r.last[key] = reported{resourceVersion: m.GetResourceVersion(), at: now}
	rec := r.recorder
	r.mu.Unlock()

	what := consequence(out, cached)
	log.Error(decodeErr, "object cannot be decoded; skipped", "event", eventName(typ), "controllersSee", what)
	if rec != nil {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, ReasonDecodeFailed, "Decode",
			"Lifeboat's controllers cannot decode this %s: %s; they see %s. Correct the value or delete the object.",
			gvk.Kind, decodeErr, what)
	}
}

// has reports whether key is an object reported as undecodable that is not
// known to be gone or decodable again.
func (r *reporter) has(key reportKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.last[key]
	return ok
}

// forget drops key's last report: the object is gone or decodable again,
// so a new problem with it is reported at once.
func (r *reporter) forget(key reportKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, key)
}

// consequence says, for operators and users, what the controllers see of
// an object handled as out.
func consequence(out outcome, cached metav1.Object) string {
	switch out {
	case deliverCached:
		return fmt.Sprintf("its last decodable version (resourceVersion %s)", cached.GetResourceVersion())
	case deliverDeleting:
		return fmt.Sprintf("its deletion, with its last decodable version (resourceVersion %s)", cached.GetResourceVersion())
	}
	if cached != nil {
		return fmt.Sprintf("its last decodable version (resourceVersion %s)", cached.GetResourceVersion())
	}
	return "nothing of it"
}

func eventName(typ watch.EventType) string {
	if typ == listItem {
		return "LIST"
	}
	return string(typ)
}
