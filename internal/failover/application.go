package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// decide is application failover's decision for one binding at now:
//
//  1. a scheduled cluster whose application reports Unhealthy starts a
//     timer (unhealthySince = now) unless one runs already;
//  2. only a Healthy report stops a timer: Unknown, or no report, keeps it,
//     so flapping between Unhealthy and Unknown still fails over;
//  3. a cluster that is no longer scheduled drops its timer;
//  4. a cluster whose timer reached unhealthySince + toleration is evicted.
//
// The timers are kept in status.unhealthyClusters, so the deadline is the
// same after a controller restart. The status keeps a timer's start to the
// second; exact holds, by cluster, starts this process observed itself to
// the nanosecond, and a timer whose stored start is exact's truncation runs
// from exact, so that a deadline is not up to a second early. newExact is
// exact for the timers still running. requeueAfter is the time to the next
// deadline (0 for none). newUnhealthy is sorted by cluster and still lists
// the clusters to evict (the caller drops them after evicting).
func decide(now time.Time, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, toleration time.Duration, exact map[string]time.Time) (toEvict []string, newUnhealthy []workv1alpha2.UnhealthyCluster, newExact map[string]time.Time, requeueAfter time.Duration) {
	since := map[string]metav1.Time{}
	for _, u := range status.UnhealthyClusters {
		since[u.ClusterName] = u.UnhealthySince
	}
	stamp := metav1.NewTime(now).Rfc3339Copy()
	newExact = map[string]time.Time{}
	for _, c := range spec.Clusters {
		var health workv1alpha2.ResourceHealth
		if item := aggregatedItem(status, c.Name); item != nil {
			health = item.Health
		}
		t, running := since[c.Name]
		start := t.Time
		if e, ok := exact[c.Name]; running && ok && e.Truncate(time.Second).Equal(t.Time) {
			start = e
		}
		switch {
		case health == workv1alpha2.ResourceHealthy:
			continue
		case health == workv1alpha2.ResourceUnhealthy && !running:
			t, start, running = stamp, now, true
		}
		if !running {
			continue
		}
		newUnhealthy = append(newUnhealthy, workv1alpha2.UnhealthyCluster{ClusterName: c.Name, UnhealthySince: t})
		newExact[c.Name] = start
		deadline := start.Add(toleration)
		if !now.Before(deadline) {
			toEvict = append(toEvict, c.Name)
		} else if d := deadline.Sub(now); requeueAfter == 0 || d < requeueAfter {
			requeueAfter = d
		}
	}
	sort.Slice(newUnhealthy, func(i, j int) bool { return newUnhealthy[i].ClusterName < newUnhealthy[j].ClusterName })
	sort.Strings(toEvict)
	return toEvict, newUnhealthy, newExact, requeueAfter
}

// ApplicationFailoverReconciler moves a workload away from a cluster where
// it stays Unhealthy for longer than the policy's tolerationSeconds, for
// ResourceBindings and ClusterResourceBindings with
// spec.failover.application set.
type ApplicationFailoverReconciler struct {
	// Client reads bindings (from the cache) and writes them.
	Client client.Client
	// Recorder records Events on bindings and resource templates.
	Recorder record.EventRecorder
	// Clock tells the time; clock.RealClock{} in production.
	Clock clock.PassiveClock
	// Gates: Failover enables the controller; GracefulEviction and
	// StatefulFailoverInjection change what an eviction does.
	Gates *features.Gates
	// MaxConcurrentReconciles per binding kind; 0 means 1.
	MaxConcurrentReconciles int

	// exact holds the exact starts of the timers this process started, by
	// binding and cluster (see decide).
	exact exactStarts
}

// exactStarts is a concurrency-safe map from binding to decide's exact.
type exactStarts struct {
	mu sync.Mutex
	m  map[string]map[string]time.Time
}

func (e *exactStarts) get(key string) map[string]time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[key]
}

func (e *exactStarts) set(key string, starts map[string]time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(starts) == 0 {
		delete(e.m, key)
		return
	}
	if e.m == nil {
		e.m = map[string]map[string]time.Time{}
	}
	e.m[key] = starts
}

// SetupWithManager registers one controller for ResourceBindings and one
// for ClusterResourceBindings. With the Failover gate off it registers
// nothing.
func (r *ApplicationFailoverReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if !r.Gates.Enabled(features.Failover) {
		return nil
	}
	return setupPerKind(mgr, "application-failover", applicationFailoverRelevant, false, r.MaxConcurrentReconciles, r.reconcile)
}

// applicationFailoverRelevant: application failover is configured, or
// timers are left to clear.
func applicationFailoverRelevant(obj client.Object) bool {
	spec, status, err := parts(obj)
	if err != nil {
		return false
	}
	return (spec.Failover != nil && spec.Failover.Application != nil) || len(status.UnhealthyClusters) > 0
}

func (r *ApplicationFailoverReconciler) reconcile(ctx context.Context, k bindingKind, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues(k.name, req.NamespacedName)
	ctx = ctrl.LoggerInto(ctx, log)
	if !r.Gates.Enabled(features.Failover) {
		return ctrl.Result{}, nil
	}
	obj := k.newObject()
	exactKey := k.short + "/" + req.String()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.exact.set(exactKey, nil)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading %s %s: %w", k.name, req.NamespacedName, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		r.exact.set(exactKey, nil)
		return ctrl.Result{}, nil
	}
	spec, status := mustParts(obj)
	var app *policyv1alpha1.ApplicationFailoverBehavior
	if spec.Failover != nil {
		app = spec.Failover.Application
	}
	if app == nil || !workv1alpha2.IsClaimed(obj.GetLabels()) {
		// No application failover, or no policy claims the binding any
		// more (no scheduler would place what an eviction takes away).
		r.exact.set(exactKey, nil)
		return r.writeTimers(ctx, obj, status, nil, 0)
	}

	now := r.Clock.Now()
	toleration := time.Duration(app.EffectiveTolerationSeconds()) * time.Second
	toEvict, timers, exact, requeueAfter := decide(now, spec, status, toleration, r.exact.get(exactKey))
	r.exact.set(exactKey, exact)

	if len(toEvict) > 0 {
		if res, done, err := r.evict(ctx, k, obj, app, toEvict, timers, now); done {
			return res, err
		}
	}
	// Timers of clusters no longer scheduled (just evicted) go.
	kept := timers[:0:0]
	for _, t := range timers {
		for _, c := range spec.Clusters {
			if c.Name == t.ClusterName {
				kept = append(kept, t)
				break
			}
		}
	}
	return r.writeTimers(ctx, obj, status, kept, requeueAfter)
}

// evict writes the eviction of clusters in one spec Update. done is true
// when the reconcile must return at once with the result and error.
func (r *ApplicationFailoverReconciler) evict(ctx context.Context, k bindingKind, obj client.Object, app *policyv1alpha1.ApplicationFailoverBehavior, clusters []string, timers []workv1alpha2.UnhealthyCluster, now time.Time) (ctrl.Result, bool, error) {
	spec, status := mustParts(obj)
	since := map[string]metav1.Time{}
	for _, t := range timers {
		since[t.ClusterName] = t.UnhealthySince
	}
	p := PlanApplicationEviction(spec, status, app, clusters, since, k.appFailoverProducer, r.Gates, now)
	return writeEvictions(ctx, r.Client, r.Recorder, obj, spec, p.Spec, clusters, p.reports, p.Mode, "an unhealthy application")
}

// PlanApplicationEviction is application failover's eviction of the given
// clusters from a binding whose application was unhealthy there since
// since: reason ApplicationFailure, the policy's purge mode and grace
// period (Directly when the GracefulEviction gate is off), the state of its
// statePreservation rules when the StatefulFailoverInjection gate is on.
// spec and status are not modified.
func PlanApplicationEviction(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, app *policyv1alpha1.ApplicationFailoverBehavior, clusters []string, since map[string]metav1.Time, producer string, gates *features.Gates, now time.Time) EvictionPlan {
	before := clusterNames(spec.Clusters)
	mode := app.EffectivePurgeMode()
	grace, hasGrace := app.EffectiveGracePeriodSeconds()
	var modeNote string
	if mode == policyv1alpha1.PurgeModeGracefully && !gates.Enabled(features.GracefulEviction) {
		mode, hasGrace = policyv1alpha1.PurgeModeDirectly, false
		modeNote = "feature gate GracefulEviction is off, so the old copy is purged directly"
	}
	var rules []policyv1alpha1.StatePreservationRule
	if app.StatePreservation != nil && gates.Enabled(features.StatefulFailoverInjection) {
		rules = app.StatePreservation.Rules
	}

	p := EvictionPlan{Spec: spec.DeepCopy(), Mode: mode}
	for _, cluster := range clusters {
		state, problems, carried := captureForEviction(spec, status, rules, cluster)
		notes := []string{fmt.Sprintf("the application was unhealthy in %s since %s, longer than the toleration of %s",
			cluster, since[cluster].UTC().Format(time.RFC3339), time.Duration(app.EffectiveTolerationSeconds())*time.Second)}
		if modeNote != "" {
			notes = append(notes, modeNote)
		}
		if carried != "" {
			notes = append(notes, carried)
		}
		for _, pr := range problems {
			notes = append(notes, "state not preserved for "+pr.String())
		}
		o := EvictOptions{
			Reason:              workv1alpha2.EvictionReasonApplicationFailure,
			Producer:            producer,
			PurgeMode:           mode,
			PreservedLabelState: state,
			Message:             strings.Join(notes, "; "),
			ClustersBefore:      before,
			Now:                 now,
		}
		if hasGrace {
			o.GracePeriodSeconds = &grace
		}
		Evict(p.Spec, cluster, o)
		p.Evicted = append(p.Evicted, cluster)
		p.reports = append(p.reports, evictionReport{cluster: cluster, problems: problems, note: carried})
	}
	return p
}

// writeTimers writes status.unhealthyClusters when it changed.
func (r *ApplicationFailoverReconciler) writeTimers(ctx context.Context, obj client.Object, status *workv1alpha2.ResourceBindingStatus, timers []workv1alpha2.UnhealthyCluster, requeueAfter time.Duration) (ctrl.Result, error) {
	if len(timers) == 0 {
		timers = nil
	}
	if equality.Semantic.DeepEqual(status.UnhealthyClusters, timers) {
		return ctrl.Result{RequeueAfter: requeueAfter}, nil
	}
	status.UnhealthyClusters = timers
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("write conflict on unhealthy timers; re-reading")
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing unhealthy timers: %w", err)
	}
	return ctrl.Result{RequeueAfter: requeueAfter}, nil
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
