package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// LeaseNamespace holds the heartbeat Lease of each Pull cluster, named after
// the cluster. The Lease is created when the cluster is registered; the
// cluster's agent renews it.
const LeaseNamespace = SecretNamespace

// ReasonClusterHeartbeatResumed is the reason of the ProbeSucceeded=True
// condition the lease monitor writes over its own ProbeSucceeded=Unknown
// once the agent of a Pull cluster is heard from again.
const ReasonClusterHeartbeatResumed = "ClusterHeartbeatResumed"

// LeaseMonitor watches the agents of Pull clusters, the control plane's
// counterpart of Karmada's monitorClusterHealth. A Pull cluster's agent
// writes the cluster's status itself and renews its Lease
// karmada-cluster/<cluster>; when the agent goes silent for longer than
// GracePeriod (StartupGracePeriod for one that never reported), the monitor
// sets the Ready and ProbeSucceeded conditions to Unknown (see
// MonitorDecision). It writes only those two conditions of Pull clusters'
// status, never Ready=True or False, and never touches Push clusters
// (StatusReconciler probes those).
//
// It remembers one thing per cluster: when, by its own clock, it saw the
// agent's heartbeat change (see heard). The grace counts from then, not
// from the time the agent wrote with the member's clock, so that an agent
// whose clock runs ahead cannot keep a dead cluster Ready. A restart gives
// a silent agent a new grace period, counted from the first check.
type LeaseMonitor struct {
	// Client reads Clusters from the manager's cache and writes their
	// status.
	Client client.Client
	// Leases reads the Leases of LeaseNamespace. SetupWithManager sets it
	// to a cache of that one namespace.
	Leases   client.Reader
	Recorder events.EventRecorder
	Clock    clock.PassiveClock

	// MonitorPeriod is the longest time between two checks of a cluster
	// (--cluster-monitor-period); a check is also made when the Cluster or
	// its Lease changes, and when a grace period runs out.
	MonitorPeriod time.Duration
	// GracePeriod is how long an agent may go silent
	// (--cluster-monitor-grace-period).
	GracePeriod time.Duration
	// StartupGracePeriod is how long a new cluster's agent has to first
	// report (--cluster-startup-grace-period).
	StartupGracePeriod time.Duration
	ConcurrentSyncs    int
	// Metrics counts the Ready transitions the monitor writes; nil records
	// nothing.
	Metrics *Metrics

	heard heardTimes
}

// heardTimes remembers, per cluster, the agent's last heartbeat seen and the
// control plane's time when it was first seen, as Kubernetes' node
// lifecycle controller does for node Leases.
type heardTimes struct {
	mu     sync.Mutex
	byName map[string]heardAt
}

type heardAt struct{ heartbeat, at time.Time }

// observe returns when the heartbeat hb of the cluster was first seen: now
// when it differs from the one seen last.
func (h *heardTimes) observe(name string, hb, now time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byName == nil {
		h.byName = map[string]heardAt{}
	}
	last, ok := h.byName[name]
	if !ok || !last.heartbeat.Equal(hb) {
		last = heardAt{heartbeat: hb, at: now}
		h.byName[name] = last
	}
	return last.at
}

func (h *heardTimes) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byName, name)
}

// SetupWithManager watches Pull Clusters and the Leases of LeaseNamespace.
// The Leases are cached for that namespace only: the control plane holds
// other Leases (leader election, and a host cluster's node leases) that
// are renewed every few seconds and that this controller has no use for.
func (r *LeaseMonitor) SetupWithManager(mgr ctrl.Manager) error {
	leases, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		HTTPClient:        mgr.GetHTTPClient(),
		DefaultNamespaces: map[string]cache.Config{LeaseNamespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("creating the cache of Leases in %s: %w", LeaseNamespace, err)
	}
	if err := mgr.Add(leases); err != nil {
		return fmt.Errorf("adding the cache of Leases in %s: %w", LeaseNamespace, err)
	}
	r.Leases = leases
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster-lease-monitor").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(pullClusterEvents())).
		WatchesRawSource(source.Kind(leases, &coordinationv1.Lease{},
			handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, l *coordinationv1.Lease) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: l.Name}}}
			}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.ConcurrentSyncs, NewQueue: queue.New}).
		Complete(r)
}

// pullClusterEvents lets through the events of Pull clusters (before or
// after the update) that can change the monitor's decision: spec,
// finalizers, deletion, and the Ready and ProbeSucceeded conditions (the
// agent's reports, and the monitor's own writes, which then find nothing
// to do).
func pullClusterEvents() predicate.Funcs {
	isPull := func(o client.Object) bool {
		c, ok := o.(*clusterv1alpha1.Cluster)
		return ok && c.Spec.SyncMode == clusterv1alpha1.Pull
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isPull(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return isPull(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !isPull(e.ObjectOld) && !isPull(e.ObjectNew) {
				return false
			}
			o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
			n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
			return !ok1 || !ok2 || specOrLifecycleChanged(o, n) ||
				!equality.Semantic.DeepEqual(healthConditions(o), healthConditions(n))
		},
	}
}

// healthConditions are the conditions the monitor reads and writes.
func healthConditions(c *clusterv1alpha1.Cluster) [2]*metav1.Condition {
	return [2]*metav1.Condition{
		meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady),
		meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionProbeSucceeded),
	}
}

// Reconcile checks the heartbeat of one Pull cluster.
func (r *LeaseMonitor) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.heard.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !leaseMonitored(&cluster) {
		r.heard.forget(req.Name)
		return ctrl.Result{}, nil
	}
	lease, err := r.lease(ctx, cluster.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	hb := lastHeartbeat(meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady), lease)
	var heardAt time.Time
	if !hb.at.IsZero() {
		heardAt = r.heard.observe(cluster.Name, hb.at, now)
	}
	ready, probe, due := monitorDecision(&cluster, lease, now, heardAt, r.GracePeriod, r.StartupGracePeriod)
	result := ctrl.Result{RequeueAfter: r.MonitorPeriod}
	if due > 0 {
		result.RequeueAfter = min(due, r.MonitorPeriod)
	}

	status := cluster.Status.DeepCopy()
	previous := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready != nil {
		meta.SetStatusCondition(&status.Conditions, *ready)
	}
	if probe != nil {
		meta.SetStatusCondition(&status.Conditions, *probe)
	}
	if equality.Semantic.DeepEqual(&cluster.Status, status) {
		return result, nil
	}
	updated := cluster.DeepCopy()
	updated.Status = *status
	if err := r.Client.Status().Update(ctx, updated); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil
		case apierrors.IsConflict(err):
			// The agent (or another controller) wrote the Cluster: decide
			// again from what it wrote.
			return requeueOnConflict(ctx)
		}
		return ctrl.Result{}, fmt.Errorf("updating status of cluster %s: %w", cluster.Name, err)
	}
	if ready != nil && (previous == nil || previous.Status != ready.Status) {
		if previous != nil {
			r.Metrics.readyChanged(cluster.Name, ready.Status)
		}
		r.recordReadyChange(updated, *ready)
		log.Info("cluster Ready condition changed", "status", ready.Status, "reason", ready.Reason, "message", ready.Message)
	}
	if probe != nil {
		log.Info("cluster ProbeSucceeded condition changed", "status", probe.Status, "reason", probe.Reason)
	}
	return result, nil
}

// lease reads the cluster's Lease; nil when there is none.
func (r *LeaseMonitor) lease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	var lease coordinationv1.Lease
	if err := r.Leases.Get(ctx, types.NamespacedName{Namespace: LeaseNamespace, Name: name}, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Lease %s/%s: %w", LeaseNamespace, name, err)
	}
	return &lease, nil
}

func (r *LeaseMonitor) recordReadyChange(cluster *clusterv1alpha1.Cluster, ready metav1.Condition) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, ready.Reason, "MonitorClusterHealth", "Ready is %s: %s", ready.Status, ready.Message)
}

// leaseMonitored says whether the monitor watches the cluster's agent: a
// Pull cluster that the cluster controller owns (it has the finalizer, as
// StatusReconciler requires of Push clusters) and that is not being
// deleted.
func leaseMonitored(c *clusterv1alpha1.Cluster) bool {
	return c.Spec.SyncMode == clusterv1alpha1.Pull && c.DeletionTimestamp.IsZero() &&
		controllerutil.ContainsFinalizer(c, clusterv1alpha1.ClusterControllerFinalizer)
}

// MonitorDecision decides what the lease monitor writes for cluster at now,
// given its Lease (nil when there is none). ready and probe are the Ready
// and ProbeSucceeded conditions to set (nil: leave the condition as it is);
// requeueAfter is how long until the decision changes by itself (the
// grace period runs out), 0 when only a change of the Cluster or the Lease
// can change it.
//
//  1. Only Pull clusters that have the cluster controller's finalizer and
//     are not being deleted are monitored; for others nothing.
//  2. The heartbeat is the agent's last sign of life: the later of the
//     Lease's spec.renewTime and the lastTransitionTime of a Ready
//     condition the agent wrote (any Ready but the monitor's own Unknown).
//     spec.leaseDurationSeconds is ignored: how long a silence is
//     tolerated is the control plane's decision (grace), as in Karmada,
//     not each agent's, so that every Pull cluster fails over within the
//     same bound.
//  3. Without a heartbeat (the Lease was never renewed and the agent never
//     reported Ready), the deadline is startupGrace after the cluster's
//     creation, or the Lease's when that is later (a Lease created again
//     starts a new wait); with one, grace after the heartbeat.
//  4. Once now is past the deadline (strictly), Ready becomes Unknown
//     unless it is Unknown already: reason ClusterStatusNeverUpdated when
//     the agent never reported Ready, ClusterStatusUnknown otherwise;
//     lastTransitionTime now. ProbeSucceeded becomes Unknown too, with the
//     same reason and message, unless it is Unknown already; its
//     lastTransitionTime is the heartbeat (without one, the start of the
//     startup wait): the storm guard reads it as the time the cluster
//     started failing, and an agent fails at its last heartbeat, not a
//     grace period later when the monitor notices.
//  5. Before the deadline, a ProbeSucceeded=Unknown the monitor wrote
//     (one of its reasons) becomes True, reason
//     ClusterHeartbeatResumed, since the heartbeat: the agent is back, and
//     an agent that does not report ProbeSucceeded itself must not leave
//     the cluster failing its probes for the storm guard. Any other
//     ProbeSucceeded is the agent's and is left alone, and Ready is never
//     set to True or False: only the agent reports the cluster's health.
//  6. requeueAfter is the time until the deadline while now has not
//     passed it (at least minProbeDelay, so that a check at the deadline
//     itself is followed by one just after); 0 once it has.
//
// The heartbeat is a time the agent wrote with its own clock: MonitorDecision
// counts the grace from it, so a member whose clock is behind the control
// plane's by more than the grace minus the agent's renew interval would be
// marked Unknown although renewing, and one whose clock is ahead would stay
// Ready that much longer after it died. LeaseMonitor counts the grace from
// when it saw the heartbeat change instead (see monitorDecision).
func MonitorDecision(cluster *clusterv1alpha1.Cluster, lease *coordinationv1.Lease, now time.Time, grace, startupGrace time.Duration) (ready, probe *metav1.Condition, requeueAfter time.Duration) {
	return monitorDecision(cluster, lease, now, time.Time{}, grace, startupGrace)
}

// monitorDecision is MonitorDecision with the grace counted from heardAt,
// the control plane's time when it first saw the current heartbeat (zero:
// from the heartbeat itself). The ProbeSucceeded=Unknown it writes is
// then since the heartbeat, or heardAt when that is earlier (a clock
// ahead).
func monitorDecision(cluster *clusterv1alpha1.Cluster, lease *coordinationv1.Lease, now, heardAt time.Time, grace, startupGrace time.Duration) (ready, probe *metav1.Condition, requeueAfter time.Duration) {
	if !leaseMonitored(cluster) {
		return nil, nil, 0
	}
	storedReady := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	storedProbe := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionProbeSucceeded)
	hb := lastHeartbeat(storedReady, lease)

	since, deadline := hb.at, hb.at.Add(grace)
	if !heardAt.IsZero() && !hb.at.IsZero() {
		since, deadline = minTime(hb.at, heardAt), heardAt.Add(grace)
	}
	if hb.at.IsZero() {
		since = cluster.CreationTimestamp.Time
		if lease != nil && lease.CreationTimestamp.After(since) {
			since = lease.CreationTimestamp.Time
		}
		deadline = since.Add(startupGrace)
	}

	if !now.After(deadline) {
		if storedProbe != nil && storedProbe.Status == metav1.ConditionUnknown && monitorReason(storedProbe.Reason) && !hb.at.IsZero() {
			probe = &metav1.Condition{
				Type:               clusterv1alpha1.ClusterConditionProbeSucceeded,
				Status:             metav1.ConditionTrue,
				Reason:             ReasonClusterHeartbeatResumed,
				Message:            fmt.Sprintf("the agent of cluster %s is heard from: it %s at %s", cluster.Name, hb.describe(), formatTime(hb.at)),
				LastTransitionTime: metav1.NewTime(minTime(hb.at, now).Truncate(time.Second)),
			}
		}
		return nil, probe, max(deadline.Sub(now), minProbeDelay)
	}

	reason := clusterv1alpha1.ClusterReasonStatusUnknown
	if storedReady == nil || storedReady.Reason == clusterv1alpha1.ClusterReasonStatusNeverUpdated {
		reason = clusterv1alpha1.ClusterReasonStatusNeverUpdated
	}
	message := silenceMessage(cluster.Name, hb, since, grace, startupGrace)
	if storedReady == nil || storedReady.Status != metav1.ConditionUnknown {
		ready = &metav1.Condition{
			Type:               clusterv1alpha1.ClusterConditionReady,
			Status:             metav1.ConditionUnknown,
			Reason:             reason,
			Message:            message,
			LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
		}
	}
	if storedProbe == nil || storedProbe.Status != metav1.ConditionUnknown {
		probe = &metav1.Condition{
			Type:               clusterv1alpha1.ClusterConditionProbeSucceeded,
			Status:             metav1.ConditionUnknown,
			Reason:             reason,
			Message:            message,
			LastTransitionTime: metav1.NewTime(since.Truncate(time.Second)),
		}
	}
	return ready, probe, 0
}

// heartbeat is an agent's last sign of life.
type heartbeat struct {
	// at is zero when the agent never gave one.
	at time.Time
	// ready is the agent's Ready status when at is its lastTransitionTime;
	// "" when at is the Lease's renewTime.
	ready metav1.ConditionStatus
}

// lastHeartbeat is the later of the Lease's renewTime and the
// lastTransitionTime of a Ready condition the agent wrote.
func lastHeartbeat(ready *metav1.Condition, lease *coordinationv1.Lease) heartbeat {
	var hb heartbeat
	if lease != nil && lease.Spec.RenewTime != nil {
		hb.at = lease.Spec.RenewTime.Time
	}
	if ready != nil && !monitorReason(ready.Reason) && ready.LastTransitionTime.After(hb.at) {
		hb = heartbeat{at: ready.LastTransitionTime.Time, ready: ready.Status}
	}
	return hb
}

// describe says what the agent did at the heartbeat.
func (hb heartbeat) describe() string {
	if hb.ready == "" {
		return "renewed its Lease"
	}
	return "reported Ready " + string(hb.ready)
}

// monitorReason says whether a condition's reason is one the lease monitor
// writes (the agent writes others).
func monitorReason(reason string) bool {
	return reason == clusterv1alpha1.ClusterReasonStatusUnknown || reason == clusterv1alpha1.ClusterReasonStatusNeverUpdated
}

// silenceMessage explains a silent agent. It depends only on the stored
// objects, so that it stays the same from one check to the next.
func silenceMessage(cluster string, hb heartbeat, since time.Time, grace, startupGrace time.Duration) string {
	lease := LeaseNamespace + "/" + cluster
	switch {
	case hb.at.IsZero():
		return fmt.Sprintf("the agent of cluster %s has neither renewed its Lease %s nor reported the cluster's status since %s (startup grace %s)",
			cluster, lease, formatTime(since), startupGrace)
	case hb.ready == "":
		return fmt.Sprintf("the agent of cluster %s has not renewed its Lease %s since %s (grace %s)",
			cluster, lease, formatTime(hb.at), grace)
	default:
		return fmt.Sprintf("the agent of cluster %s has not renewed its Lease %s, and has not reported since Ready turned %s at %s (grace %s)",
			cluster, lease, hb.ready, formatTime(hb.at), grace)
	}
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
