package orphans

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// Event reasons recorded on Clusters.
const (
	EventOrphansFound     = "OrphansFound"
	EventOrphansKept      = "OrphansKept"
	EventOrphansRemoved   = "OrphansRemoved"
	EventNamespaceRemoved = "NamespaceRemoved"
)

// namesInEvents bounds how many objects an Event names.
const namesInEvents = 5

// NamespaceQueue receives the member namespaces to check;
// *NamespaceReconciler implements it.
type NamespaceQueue interface {
	Enqueue(cluster, namespace string)
}

// ObjectReconciler scans a member cluster when its Cluster is created,
// whenever it becomes Ready, and every ScanInterval while Ready: it removes
// the objects the orphan rule (Judge) calls orphans once they have been
// orphans for Grace, reports the others, and hands the namespaces Lifeboat
// created to the namespace rule.
type ObjectReconciler struct {
	// Client reads Clusters, Works and bindings (the manager's cache).
	Client client.Client
	// APIReader reads Works and bindings again right before a removal.
	APIReader client.Reader
	Members   MemberCache
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Metrics   *Metrics
	// Namespaces checks the namespaces Lifeboat created (may be nil).
	Namespaces NamespaceQueue
	Options    Options

	sightings Sightings

	mu sync.Mutex
	// reported is the last report of each kind per cluster, so that an
	// unchanged scan records no Event.
	reported map[string]map[string]string
}

// SetupWithManager watches Clusters: creations, Ready turning True and
// deletions.
func (r *ObjectReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("member-orphans").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(becameReady())).
		WithOptions(controller.Options{NewQueue: queue.New}).
		Complete(r)
}

// becameReady passes creations, deletions, and updates whose Ready
// condition turned True.
func becameReady() predicate.Predicate {
	ready := func(o client.Object) bool {
		c, ok := o.(*clusterv1alpha1.Cluster)
		return ok && meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return (!ready(e.ObjectOld) && ready(e.ObjectNew)) || e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}

// scannable says whether Lifeboat sweeps the member of cluster: a Push
// cluster with credentials, not being deleted, Ready.
func scannable(cluster *clusterv1alpha1.Cluster) bool {
	return cluster != nil && cluster.DeletionTimestamp.IsZero() &&
		cluster.Spec.SyncMode == clusterv1alpha1.Push && cluster.Spec.SecretRef != nil &&
		meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
}

// Reconcile scans one member:
//  1. a Cluster that is gone or being deleted is forgotten; one that is not
//     Ready, or in pull mode, is left alone;
//  2. every object labelled managed is judged (Judge);
//  3. orphans found at least Grace ago, by an earlier scan, are removed
//     (Sweeper.Remove reads their owners again first);
//  4. what was found, kept and removed is reported (Events when it
//     changed, metrics), and the namespaces Lifeboat created are checked;
//  5. the next scan is after ScanInterval (plus up to a tenth, see spread),
//     or when the next orphan's grace ends if sooner.
func (r *ObjectReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	var cluster clusterv1alpha1.Cluster
	err := r.Client.Get(ctx, req.NamespacedName, &cluster)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("reading Cluster %s: %w", req.Name, err)
	}
	if apierrors.IsNotFound(err) || !cluster.DeletionTimestamp.IsZero() {
		r.forget(req.Name)
		return reconcile.Result{}, nil
	}
	if !scannable(&cluster) {
		return reconcile.Result{}, nil
	}

	sweeper := r.sweeper(req.Name)
	scan, err := sweeper.Scan(ctx)
	if err != nil {
		if after, ok := membercluster.RetryAfter(err); ok {
			log.V(1).Info("member unreachable; scanning later", "after", after.String())
			return reconcile.Result{RequeueAfter: after}, nil
		}
		return reconcile.Result{}, fmt.Errorf("scanning member %s: %w", req.Name, err)
	}
	if scan.Incomplete != nil {
		log.Info("some objects of the member could not be listed", "reason", scan.Incomplete.Error())
	}

	now := r.Clock.Now()
	var orphanUIDs []types.UID
	for _, f := range scan.Findings {
		if f.Verdict == Orphan {
			orphanUIDs = append(orphanUIDs, f.UID)
		}
	}
	first := r.sightings.Observe(req.Name, orphanUIDs, now)
	var pending, kept, removed []Finding
	var next time.Duration
	namespaces := map[string]bool{}
	for _, ns := range scan.CreatedNamespaces {
		namespaces[ns] = true
	}
	var errs []error
	for _, f := range scan.Findings {
		switch {
		case f.Verdict.Kept() || f.Verdict == Foreign:
			kept = append(kept, f)
		case f.Verdict != Orphan:
		default:
			due, left := Due(first[f.UID], now, r.Options.Grace)
			if !due {
				pending = append(pending, f)
				next = shortest(next, left)
				continue
			}
			ok, err := sweeper.Remove(ctx, f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				removed = append(removed, f)
				if f.Namespace != "" {
					namespaces[f.Namespace] = true
				}
			}
		}
	}
	r.report(&cluster, scan, pending, kept, removed)
	if r.Namespaces != nil {
		for ns := range namespaces {
			r.Namespaces.Enqueue(req.Name, ns)
		}
	}
	if len(errs) > 0 {
		if after, ok := membercluster.RetryAfter(errs[0]); ok {
			return reconcile.Result{RequeueAfter: after}, nil
		}
		return reconcile.Result{}, fmt.Errorf("removing orphans from member %s: %w", req.Name, errs[0])
	}
	return reconcile.Result{RequeueAfter: shortest(spread(r.Options.ScanInterval), next)}, nil
}

// scanSpread is how much later than ScanInterval a periodic scan may come.
const scanSpread = 0.1

// spread returns a random interval in [interval, interval×(1+scanSpread)):
// members that joined together are scanned at once the first time, and
// drift apart from then on instead of sharing the API load and the
// transient memory of every scan. Zero (no periodic scans) stays zero.
func spread(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	return wait.Jitter(interval, scanSpread)
}

func (r *ObjectReconciler) sweeper(cluster string) Sweeper {
	return Sweeper{
		Cluster:      cluster,
		Member:       CachedMember(r.Members, cluster),
		ControlPlane: ControlPlane{Reader: r.Client, Live: r.APIReader},
	}
}

// shortest is the shorter of two waits, 0 meaning none.
func shortest(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0 || a < b:
		return a
	}
	return b
}

// report records metrics and, when what they say changed, Events.
func (r *ObjectReconciler) report(cluster *clusterv1alpha1.Cluster, scan Scan, pending, kept, removed []Finding) {
	counts := map[Verdict]int{}
	for _, f := range scan.Findings {
		counts[f.Verdict]++
	}
	counts[Orphan] -= len(removed)
	r.Metrics.scanned(cluster.Name, counts)
	r.Metrics.removedObjects(cluster.Name, len(removed))

	if len(removed) > 0 {
		r.event(cluster, corev1.EventTypeNormal, EventOrphansRemoved, "", fmt.Sprintf(
			"Removed %d object(s) whose Work no longer exists and whose binding does not place them here: %s", len(removed), names(removed, false)))
	}
	pendingMsg := ""
	if len(pending) > 0 {
		pendingMsg = fmt.Sprintf("%d object(s) in the member name Works that do not exist; each is removed once it has stayed so for %s, unless a Work adopts it: %s",
			len(pending), r.Options.Grace, names(pending, false))
	}
	r.event(cluster, corev1.EventTypeWarning, EventOrphansFound, pendingMsg, pendingMsg)
	keptMsg := ""
	if len(kept) > 0 {
		keptMsg = fmt.Sprintf("%d object(s) in the member name Works that do not exist and are kept (delete them by hand if they are not wanted): %s",
			len(kept), names(kept, true))
	}
	r.event(cluster, corev1.EventTypeWarning, EventOrphansKept, keptMsg, keptMsg)
}

// event records an Event. With a non-empty key it is recorded only when key
// differs from the last one of that reason for the cluster (an empty key
// resets it, recording nothing).
func (r *ObjectReconciler) event(cluster *clusterv1alpha1.Cluster, eventType, reason, key, note string) {
	if reason != EventOrphansRemoved {
		r.mu.Lock()
		if r.reported == nil {
			r.reported = map[string]map[string]string{}
		}
		if r.reported[cluster.Name] == nil {
			r.reported[cluster.Name] = map[string]string{}
		}
		same := r.reported[cluster.Name][reason] == key
		r.reported[cluster.Name][reason] = key
		r.mu.Unlock()
		if same || key == "" {
			return
		}
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(cluster, nil, eventType, reason, "SweepMember", "%s", note)
	}
}

// names lists the first findings, with their verdict's reason when why.
func names(fs []Finding, why bool) string {
	parts := make([]string, 0, min(len(fs), namesInEvents)+1)
	for i, f := range fs {
		if i == namesInEvents {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-i))
			break
		}
		s := f.String()
		if why {
			s += " (" + f.Verdict.Reason() + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// forget drops what is known of a cluster that is gone or going.
func (r *ObjectReconciler) forget(cluster string) {
	r.sightings.Forget(cluster)
	r.Metrics.forget(cluster)
	r.mu.Lock()
	delete(r.reported, cluster)
	r.mu.Unlock()
}
