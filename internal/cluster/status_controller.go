package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// StatusReconciler probes each Push member every StatusUpdateFrequency and
// writes the Cluster's status: Ready (smoothed by the thresholds), and while
// Ready, kubernetesVersion, apiEnablements with CompleteAPIEnablements,
// nodeSummary and resourceSummary (refreshed every CollectInterval). It
// writes only when something changed.
type StatusReconciler struct {
	Client   client.Client
	Members  MemberFactory
	Recorder events.EventRecorder
	Clock    clock.PassiveClock

	StatusUpdateFrequency  time.Duration
	FailureThreshold       time.Duration
	SuccessThreshold       time.Duration
	ProbeTimeout           time.Duration
	CollectInterval        time.Duration
	EnableResourceModeling bool
	ConcurrentSyncs        int
	// Metrics counts Ready transitions; nil records nothing.
	Metrics *Metrics
	// Agent is set in the agent of a Pull cluster: it reports the status
	// of the Pull cluster it runs in (Members reaches it from inside)
	// instead of the Push clusters the control plane reaches.
	Agent bool

	initOnce  sync.Once
	tracker   *readyTracker
	collected *collectTimes
	probes    *probes
}

func (r *StatusReconciler) init() {
	r.initOnce.Do(func() {
		r.tracker = newReadyTracker(thresholds{failure: r.FailureThreshold, success: r.SuccessThreshold})
		r.collected = &collectTimes{byName: map[string]time.Time{}}
		r.probes = newProbes(nil)
	})
}

// connectionLossNotifier is a MemberFactory that can tell when a member's
// API server stopped answering between probes.
type connectionLossNotifier interface {
	OnConnectionLost(fn func(name string, first bool))
}

// stopper is a MemberFactory holding resources until the manager stops.
type stopper interface {
	Stop()
}

// SetupWithManager watches Clusters. Status writes do not trigger a
// reconcile (they would cause an extra probe); the periodic requeue drives
// the probes. A member whose connection is lost (see
// MemberClients.OnConnectionLost) is probed at once.
func (r *StatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.init()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cluster-status").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return specOrLifecycleChanged(e.ObjectOld, e.ObjectNew) },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.ConcurrentSyncs, NewQueue: queue.New})
	if n, ok := r.Members.(connectionLossNotifier); ok {
		lost := make(chan event.TypedGenericEvent[*clusterv1alpha1.Cluster], 64)
		log := mgr.GetLogger().WithValues("controller", "cluster-status")
		n.OnConnectionLost(func(name string, first bool) {
			if first {
				log.Info("lost the connection to the member's API server; probing it now", "cluster", name)
			}
			c := &clusterv1alpha1.Cluster{}
			c.Name = name
			select {
			case lost <- event.TypedGenericEvent[*clusterv1alpha1.Cluster]{Object: c}:
			default: // full: probes for this burst are queued already
			}
		})
		b = b.WatchesRawSource(source.Channel(lost, &handler.TypedEnqueueRequestForObject[*clusterv1alpha1.Cluster]{}))
	}
	// The end of a probe triggers the reconcile that records its result.
	probed := make(chan event.TypedGenericEvent[*clusterv1alpha1.Cluster])
	r.probes.done = func(name string) {
		c := &clusterv1alpha1.Cluster{}
		c.Name = name
		select {
		case probed <- event.TypedGenericEvent[*clusterv1alpha1.Cluster]{Object: c}:
		case <-r.probes.ctx.Done():
		}
	}
	b = b.WatchesRawSource(source.Channel(probed, &handler.TypedEnqueueRequestForObject[*clusterv1alpha1.Cluster]{}))
	if err := mgr.Add(stopOnShutdown{r.probes}); err != nil {
		return fmt.Errorf("adding the probes' stop: %w", err)
	}
	if s, ok := r.Members.(stopper); ok {
		if err := mgr.Add(stopOnShutdown{s}); err != nil {
			return fmt.Errorf("adding the member inventories' stop: %w", err)
		}
	}
	return b.Complete(r)
}

// stopOnShutdown stops s when the manager stops, leader or not.
type stopOnShutdown struct{ s stopper }

func (o stopOnShutdown) Start(ctx context.Context) error {
	<-ctx.Done()
	o.s.Stop()
	return nil
}

func (stopOnShutdown) NeedLeaderElection() bool { return false }

// Reconcile probes one cluster and updates its status.
func (r *StatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.init()
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	// Every member is probed every StatusUpdateFrequency, and most probes
	// change nothing: read the cached Cluster without copying it. Its
	// slices, maps and pointers are the cache's own, so nothing here
	// writes to cluster; what is written goes through copies
	// (cluster.Status.DeepCopy, cluster.DeepCopy).
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cluster, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading cluster %s: %w", req.Name, err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		r.forget(cluster.Name)
		return ctrl.Result{}, nil
	}
	// Collection starts once the cluster controller owns the cluster, and
	// only for the clusters this process reports (see reports).
	if !controllerutil.ContainsFinalizer(&cluster, clusterv1alpha1.ClusterControllerFinalizer) || !r.reports(&cluster) {
		return ctrl.Result{}, nil
	}

	// The probe runs in its own goroutine (see probes): this reconcile
	// starts it, and the one that its end triggers records its result, as
	// of when it started.
	now := r.Clock.Now()
	member, clientErr := r.Members.For(ctx, &cluster)
	var probe ProbeResult
	if clientErr == nil {
		run, running := r.probes.take(cluster.Name)
		if run == nil {
			if !running {
				r.probes.start(ctx, cluster.Name, now, member.Probe)
			}
			return ctrl.Result{}, nil
		}
		now, probe = run.started, run.result
		if !probe.Online {
			log.V(1).Info("member cluster is not reachable", "error", probe.Err.Error())
		}
	} else {
		r.probes.forget(cluster.Name)
		log.V(1).Info("cannot build a client for the member cluster", "error", clientErr.Error())
	}
	observed := observedReadyCondition(probe, clientErr)
	ready, held := r.tracker.adjust(&cluster, observed, now)

	ready.LastTransitionTime = metav1.NewTime(now)
	ready.ObservedGeneration = 0
	// The unsmoothed result: its lastTransitionTime (the start of the first
	// probe with this result) tells the storm guard since when a cluster
	// that is still Ready has been failing.
	probed := probeCondition(observed)
	probed.LastTransitionTime = metav1.NewTime(now)
	collect := ready.Status == metav1.ConditionTrue && probe.Healthy && r.collected.due(cluster.Name, now, r.CollectInterval, &cluster)
	if !collect && conditionHolds(cluster.Status.Conditions, ready) && conditionHolds(cluster.Status.Conditions, probed) {
		// Most probes: nothing collected, both conditions as stored.
		return ctrl.Result{RequeueAfter: r.nextProbe(now, held)}, nil
	}

	status := cluster.Status.DeepCopy()
	if collect {
		r.collect(ctx, member, status)
		r.collected.mark(cluster.Name, now)
	}
	previous := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	meta.SetStatusCondition(&status.Conditions, ready)
	meta.SetStatusCondition(&status.Conditions, probed)

	if equality.Semantic.DeepEqual(&cluster.Status, status) {
		return ctrl.Result{RequeueAfter: r.nextProbe(now, held)}, nil
	}
	updated := cluster.DeepCopy()
	updated.Status = *status
	if err := r.Client.Status().Update(ctx, updated); err != nil {
		if apierrors.IsConflict(err) {
			// Someone else wrote the Cluster: observe it again soon.
			return requeueOnConflict(ctrl.LoggerInto(ctx, log))
		}
		return ctrl.Result{}, fmt.Errorf("updating status of cluster %s: %w", cluster.Name, err)
	}
	if previous != nil && previous.Status != ready.Status {
		r.Metrics.readyChanged(cluster.Name, ready.Status)
	}
	if previous == nil || previous.Status != ready.Status {
		r.recordReadyChange(updated, ready)
		log.Info("cluster Ready condition changed", "status", ready.Status, "reason", ready.Reason)
	}
	return ctrl.Result{RequeueAfter: r.nextProbe(now, held)}, nil
}

// conditionHolds says whether meta.SetStatusCondition would leave
// conditions as they are when setting c: one of c's type is there with the
// same status, reason, message and observedGeneration.
func conditionHolds(conditions []metav1.Condition, c metav1.Condition) bool {
	old := meta.FindStatusCondition(conditions, c.Type)
	return old != nil && old.Status == c.Status && old.Reason == c.Reason &&
		old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration
}

// reports says whether this reconciler reports the cluster's status: the
// control plane's reports Push clusters with credentials, an agent's the
// Pull cluster it runs in.
func (r *StatusReconciler) reports(cluster *clusterv1alpha1.Cluster) bool {
	if r.Agent {
		return cluster.Spec.SyncMode == clusterv1alpha1.Pull
	}
	return cluster.Spec.SyncMode == clusterv1alpha1.Push && cluster.Spec.SecretRef != nil
}

// nextProbe keeps the probes of a cluster StatusUpdateFrequency apart from
// start to start, so that a member timing out is not probed less often than
// a healthy one. When a change of Ready is held back by a threshold (held
// is not zero), the probe that may pass it comes when the threshold ends,
// not at the next period after it: a probe triggered between periods (by a
// lost connection) would otherwise shift the change by up to one period.
func (r *StatusReconciler) nextProbe(started, held time.Time) time.Duration {
	elapsed := r.Clock.Since(started)
	next := max(r.StatusUpdateFrequency-elapsed, r.StatusUpdateFrequency/10)
	if !held.IsZero() {
		next = min(next, max(held.Sub(r.Clock.Now()), minProbeDelay))
	}
	return next
}

// minProbeDelay is the least delay of a scheduled probe (a RequeueAfter of
// zero would schedule none).
const minProbeDelay = 10 * time.Millisecond

// collect refreshes the collected fields of status in place. A failed part
// keeps its previous value: a Ready member with a flaky discovery endpoint
// must not lose its API enablements.
func (r *StatusReconciler) collect(ctx context.Context, member Member, status *clusterv1alpha1.ClusterStatus) {
	log := ctrl.LoggerFrom(ctx)
	if v, err := member.Version(ctx); err != nil {
		log.Info("cannot read the member's version", "error", err.Error())
	} else {
		status.KubernetesVersion = v
	}
	if lists, partial, err := member.Discover(ctx); err != nil {
		log.Info("cannot discover the member's APIs", "error", err.Error())
	} else {
		status.APIEnablements = apiEnablements(lists)
		c := apiEnablementsCondition(status.APIEnablements, partial)
		c.LastTransitionTime = metav1.NewTime(r.Clock.Now())
		meta.SetStatusCondition(&status.Conditions, c)
	}
	if !r.EnableResourceModeling {
		return
	}
	b := newSummaryBuilder()
	if err := member.EachNode(ctx, b.addNode); err != nil {
		log.Info("cannot read the member's nodes", "error", err.Error())
		return
	}
	if err := member.EachPod(ctx, b.addUsage); err != nil {
		log.Info("cannot read the member's pods", "error", err.Error())
		return
	}
	status.NodeSummary = b.nodeSummary()
	summary := b.resourceSummary()
	if status.ResourceSummary != nil {
		summary.AllocatableModelings = status.ResourceSummary.AllocatableModelings
	}
	status.ResourceSummary = summary
}

func (r *StatusReconciler) recordReadyChange(cluster *clusterv1alpha1.Cluster, ready metav1.Condition) {
	if r.Recorder == nil {
		return
	}
	eventType := corev1.EventTypeWarning
	if ready.Status == metav1.ConditionTrue {
		eventType = corev1.EventTypeNormal
	}
	r.Recorder.Eventf(cluster, nil, eventType, ready.Reason, "UpdateClusterStatus", "Ready is %s: %s", ready.Status, ready.Message)
}

func (r *StatusReconciler) forget(name string) {
	r.Metrics.forget(name)
	r.tracker.forget(name)
	r.collected.forget(name)
	r.probes.forget(name)
	if r.Members != nil {
		r.Members.Forget(name)
	}
}

// collectTimes remembers when each cluster's inventory was last collected.
type collectTimes struct {
	mu     sync.Mutex
	byName map[string]time.Time
}

// due says whether the inventory of a Ready cluster should be collected:
// never collected by this process, never written (no kubernetesVersion), or
// older than interval.
func (c *collectTimes) due(name string, now time.Time, interval time.Duration, cluster *clusterv1alpha1.Cluster) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.byName[name]
	return collectDue(ok, last, now, interval, cluster)
}

func (c *collectTimes) mark(name string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byName[name] = now
}

func (c *collectTimes) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byName, name)
}

// collectDue is the pure rule behind collectTimes.due. A cluster whose stored
// Ready is not True is just recovering: its inventory may be stale.
func collectDue(collected bool, last, now time.Time, interval time.Duration, cluster *clusterv1alpha1.Cluster) bool {
	switch {
	case !collected, cluster.Status.KubernetesVersion == "":
		return true
	case !meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady):
		return true
	default:
		return now.Sub(last) >= interval
	}
}

// specOrLifecycleChanged filters Cluster updates down to those that change
// what a controller does: spec (generation), finalizers or deletion.
func specOrLifecycleChanged(oldObj, newObj client.Object) bool {
	return oldObj.GetGeneration() != newObj.GetGeneration() ||
		!equality.Semantic.DeepEqual(oldObj.GetFinalizers(), newObj.GetFinalizers()) ||
		!oldObj.GetDeletionTimestamp().Equal(newObj.GetDeletionTimestamp())
}
