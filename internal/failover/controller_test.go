package failover

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// env is a fake control plane for one controller test.
type env struct {
	t        *testing.T
	client   client.Client
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	registry *prometheus.Registry
	metrics  *Metrics
}

func newEnv(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *env {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{})
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, client: b.Build(), clock: clocktesting.NewFakeClock(t0), recorder: record.NewFakeRecorder(100), registry: reg, metrics: m}
}

func (e *env) appFailover(gates *features.Gates) *ApplicationFailoverReconciler {
	return &ApplicationFailoverReconciler{Client: e.client, Recorder: e.recorder, Clock: e.clock, Gates: gates}
}

func (e *env) gracefulEviction() *GracefulEvictionReconciler {
	return &GracefulEvictionReconciler{Client: e.client, Recorder: e.recorder, Clock: e.clock, Metrics: e.metrics}
}

func (e *env) rb(name string) *workv1alpha2.ResourceBinding {
	e.t.Helper()
	b := &workv1alpha2.ResourceBinding{}
	if err := e.client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, b); err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) update(b *workv1alpha2.ResourceBinding) {
	e.t.Helper()
	if err := e.client.Update(context.Background(), b); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) updateStatus(b *workv1alpha2.ResourceBinding) {
	e.t.Helper()
	if err := e.client.Status().Update(context.Background(), b); err != nil {
		e.t.Fatal(err)
	}
}

// events drains the recorded events.
func (e *env) events() []string {
	return eventstest.Drain(e.recorder)
}

func (e *env) gauge(name string) float64 {
	e.t.Helper()
	mfs, err := e.registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func containsEvent(events []string, parts ...string) bool {
	for _, ev := range events {
		all := true
		for _, p := range parts {
			if !strings.Contains(ev, p) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func reqFor(name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
}

const nginx = "nginx-deployment"

// The seed walkthrough: Never, tolerationSeconds 120, the application
// unhealthy in member2.
func TestApplicationFailoverSeedWalkthrough(t *testing.T) {
	e := newEnv(t, nil, makeBinding("nginx").appFailover(120, policyv1alpha1.PurgeModeNever).
		clusters("member2").health("member2", workv1alpha2.ResourceUnhealthy).obj())
	r := e.appFailover(features.New())
	ctx := context.Background()

	// First observation: the timer starts, nothing is evicted.
	res, err := r.reconcile(ctx, resourceBindingKind, reqFor(nginx))
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 120*time.Second {
		t.Errorf("requeueAfter = %s, want 120s", res.RequeueAfter)
	}
	b := e.rb(nginx)
	if len(b.Status.UnhealthyClusters) != 1 || !b.Status.UnhealthyClusters[0].UnhealthySince.Time.Equal(t0) {
		t.Fatalf("unhealthyClusters = %+v, want member2 since t0", b.Status.UnhealthyClusters)
	}
	if len(b.Spec.GracefulEvictionTasks) != 0 || len(b.Spec.Clusters) != 1 {
		t.Fatalf("evicted before the toleration: %+v", b.Spec)
	}

	// Nothing new: a second pass writes nothing.
	rv := b.ResourceVersion
	e.clock.Step(60 * time.Second)
	res, err = r.reconcile(ctx, resourceBindingKind, reqFor(nginx))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.rb(nginx).ResourceVersion; got != rv {
		t.Errorf("a reconcile with nothing to do wrote the binding (rv %s → %s)", rv, got)
	}
	if res.RequeueAfter != 60*time.Second {
		t.Errorf("requeueAfter = %s, want 60s (the original deadline)", res.RequeueAfter)
	}

	// At the deadline: evicted, as the seed shows.
	e.clock.Step(60 * time.Second)
	if _, err := r.reconcile(ctx, resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b = e.rb(nginx)
	if len(b.Spec.Clusters) != 0 {
		t.Errorf("clusters = %+v, want member2 removed", b.Spec.Clusters)
	}
	if len(b.Spec.GracefulEvictionTasks) != 1 {
		t.Fatalf("tasks = %+v, want one", b.Spec.GracefulEvictionTasks)
	}
	task := b.Spec.GracefulEvictionTasks[0]
	if task.FromCluster != "member2" || task.Producer != workv1alpha2.EvictionProducerRBApplicationFailover ||
		task.Reason != workv1alpha2.EvictionReasonApplicationFailure || task.SuppressDeletion == nil || !*task.SuppressDeletion ||
		task.CreationTimestamp == nil || !task.CreationTimestamp.Time.Equal(at(120)) || task.PurgeMode != policyv1alpha1.PurgeModeNever {
		t.Errorf("task = %+v", task)
	}
	if len(b.Status.UnhealthyClusters) != 0 {
		t.Errorf("timer of the evicted cluster kept: %+v", b.Status.UnhealthyClusters)
	}
}

func TestApplicationFailoverMustNotEvict(t *testing.T) {
	off := features.New()
	if err := off.Set("Failover=false"); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		binding *workv1alpha2.ResourceBinding
		gates   *features.Gates
	}{
		"healthy cluster": {
			binding: makeBinding("nginx").appFailover(0, policyv1alpha1.PurgeModeDirectly).clusters("member1").
				health("member1", workv1alpha2.ResourceHealthy).obj(),
		},
		"Unknown without a running timer": {
			binding: makeBinding("nginx").appFailover(0, policyv1alpha1.PurgeModeDirectly).clusters("member1").
				health("member1", workv1alpha2.ResourceUnknown).obj(),
		},
		"gate Failover off": {
			binding: makeBinding("nginx").appFailover(0, policyv1alpha1.PurgeModeDirectly).clusters("member1").
				health("member1", workv1alpha2.ResourceUnhealthy).obj(),
			gates: off,
		},
		"no application failover in the policy": {
			binding: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).obj(),
		},
		"no policy claims the binding any more": {
			binding: makeBinding("nginx").appFailover(0, policyv1alpha1.PurgeModeDirectly).clusters("member1", "member2").
				health("member1", workv1alpha2.ResourceUnhealthy).released().obj(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, tc.binding)
			gates := tc.gates
			if gates == nil {
				gates = features.New()
			}
			rv := e.rb(nginx).ResourceVersion
			res, err := e.appFailover(gates).reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
			if err != nil {
				t.Fatal(err)
			}
			b := e.rb(nginx)
			if b.ResourceVersion != rv {
				t.Errorf("binding written: %+v / %+v", b.Spec, b.Status)
			}
			if res.RequeueAfter != 0 {
				t.Errorf("requeueAfter = %s, want none", res.RequeueAfter)
			}
		})
	}
}

func TestApplicationFailoverRestartKeepsDeadline(t *testing.T) {
	// The timer was persisted at t0+10 by an earlier leader; the new one
	// starts at t0+100.
	e := newEnv(t, nil, makeBinding("nginx").appFailover(120, policyv1alpha1.PurgeModeGracefully).clusters("member1", "member2").
		health("member1", workv1alpha2.ResourceUnknown).health("member2", workv1alpha2.ResourceHealthy).
		unhealthySince("member1", 10).obj())
	e.clock.SetTime(at(100))
	r := e.appFailover(features.New())
	res, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 30*time.Second {
		t.Errorf("requeueAfter = %s, want 30s (deadline t0+130)", res.RequeueAfter)
	}
	e.clock.SetTime(at(130))
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b := e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 1 || b.Spec.GracefulEvictionTasks[0].FromCluster != "member1" {
		t.Fatalf("tasks = %+v, want member1 evicted at the original deadline", b.Spec.GracefulEvictionTasks)
	}
	task := b.Spec.GracefulEvictionTasks[0]
	if task.GracePeriodSeconds == nil || *task.GracePeriodSeconds != 600 || task.PurgeMode != policyv1alpha1.PurgeModeGracefully {
		t.Errorf("task = %+v, want Gracefully with the default 600s grace", task)
	}
	if got := clusterNames(b.Spec.Clusters); len(got) != 1 || got[0] != "member2" {
		t.Errorf("clusters = %v, want [member2]", got)
	}
	if strings.Join(task.ClustersBeforeFailover, ",") != "member1,member2" {
		t.Errorf("clustersBeforeFailover = %v", task.ClustersBeforeFailover)
	}
}

func TestApplicationFailoverStateProblemsDoNotBlock(t *testing.T) {
	e := newEnv(t, nil, makeBinding("flink").appFailover(0, policyv1alpha1.PurgeModeDirectly,
		rule("application.karmada.io/failover-jobid", "{ .jobStatus.jobID }"), rule("state", "{.lifecycleState}")).
		clusters("member1").reflected("member1", map[string]interface{}{
		"jobStatus": map[string]interface{}{"jobId": "0123abcd", "state": "FAILED"}, "lifecycleState": "STABLE"}).obj())
	if _, err := e.appFailover(features.New()).reconcile(context.Background(), resourceBindingKind, reqFor("flink-deployment")); err != nil {
		t.Fatal(err)
	}
	b := &workv1alpha2.ResourceBinding{}
	if err := e.client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "flink-deployment"}, b); err != nil {
		t.Fatal(err)
	}
	if len(b.Spec.GracefulEvictionTasks) != 1 {
		t.Fatalf("failover blocked by a bad rule: %+v", b.Spec)
	}
	task := b.Spec.GracefulEvictionTasks[0]
	if task.PreservedLabelState["state"] != "STABLE" || len(task.PreservedLabelState) != 1 {
		t.Errorf("preservedLabelState = %v, want only state=STABLE", task.PreservedLabelState)
	}
	if !strings.Contains(task.Message, "jobID not found; did you mean jobId?") {
		t.Errorf("task message = %q, want the missing field explained", task.Message)
	}
	if task.PurgeMode != policyv1alpha1.PurgeModeDirectly {
		t.Errorf("purgeMode = %s", task.PurgeMode)
	}
	events := e.events()
	if !containsEvent(events, "Warning", EventReasonStatePreservationFailed, "application.karmada.io/failover-jobid", "did you mean jobId?") {
		t.Errorf("no Warning event naming the rule: %v", events)
	}
}

func TestApplicationFailoverClusterResourceBinding(t *testing.T) {
	w := makeBinding("ns").appFailover(0, "").clusters("member1", "member2").health("member1", workv1alpha2.ResourceUnhealthy)
	crb := &workv1alpha2.ClusterResourceBinding{Spec: w.Spec, Status: w.Status}
	crb.Name, crb.Generation = "ns-namespace", 2
	crb.Labels = map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cpp-id"}
	e := newEnv(t, nil, crb)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: "ns-namespace"}}
	if _, err := e.appFailover(features.New()).reconcile(context.Background(), clusterResourceBindingKind, req); err != nil {
		t.Fatal(err)
	}
	got := &workv1alpha2.ClusterResourceBinding{}
	if err := e.client.Get(context.Background(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.GracefulEvictionTasks) != 1 || got.Spec.GracefulEvictionTasks[0].Producer != workv1alpha2.EvictionProducerCRBApplicationFailover {
		t.Errorf("tasks = %+v, want one by the CRB producer", got.Spec.GracefulEvictionTasks)
	}
}

func TestApplicationFailoverConflictRereads(t *testing.T) {
	conflicts := 1
	funcs := &interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if conflicts > 0 {
			conflicts--
			return apierrors.NewConflict(schema.GroupResource{Group: "work.karmada.io", Resource: "resourcebindings"}, obj.GetName(), nil)
		}
		return c.Update(ctx, obj, opts...)
	}}
	e := newEnv(t, funcs, makeBinding("nginx").appFailover(0, policyv1alpha1.PurgeModeNever).clusters("member1").
		health("member1", workv1alpha2.ResourceUnhealthy).obj())
	r := e.appFailover(features.New())
	res, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
	if err != nil || res.RequeueAfter != conflictRetry {
		t.Fatalf("conflict: result %+v, err %v; want a quiet retry", res, err)
	}
	if len(e.rb(nginx).Spec.GracefulEvictionTasks) != 0 {
		t.Fatal("task written despite the conflict")
	}
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if len(e.rb(nginx).Spec.GracefulEvictionTasks) != 1 {
		t.Fatal("retry did not evict")
	}
}

// After the seed's eviction (Never): the task stays even when the
// replacement is healthy, until the user sets suppressDeletion to false.
func TestGracefulEvictionNeverUntilUserConfirms(t *testing.T) {
	e := newEnv(t, nil, makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
		health("member2", workv1alpha2.ResourceUnhealthy).
		task(makeTask("member2", policyv1alpha1.PurgeModeNever, 0, "member2")).obj())
	e.clock.SetTime(at(100000))
	r := e.gracefulEviction()
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b := e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 1 {
		t.Fatalf("Never task removed without the user: %+v", b.Spec.GracefulEvictionTasks)
	}
	if len(b.Status.FailoverHistory) != 1 || b.Status.FailoverHistory[0].ReplacementHealthyTime == nil ||
		strings.Join(b.Status.FailoverHistory[0].ClustersAfter, ",") != "member1" {
		t.Errorf("history = %+v, want one entry member2 → member1, healthy", b.Status.FailoverHistory)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, ConditionFailoverTargetAvailable); c == nil || c.Status != "True" {
		t.Errorf("condition = %+v, want True", c)
	}
	events := e.events()
	if !containsEvent(events, "Warning", EventReasonEvicted, "member2") || !containsEvent(events, EventReasonReplacementHealthy) {
		t.Errorf("events = %v", events)
	}
	if e.gauge("lifeboat_eviction_tasks_open") != 1 || e.gauge("lifeboat_evictions_total") != 1 || e.gauge("lifeboat_failover_duration_seconds") != 1 {
		t.Errorf("metrics: open %v evictions %v durations %v", e.gauge("lifeboat_eviction_tasks_open"), e.gauge("lifeboat_evictions_total"), e.gauge("lifeboat_failover_duration_seconds"))
	}

	// A pass with nothing new writes nothing.
	rv := b.ResourceVersion
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if e.rb(nginx).ResourceVersion != rv {
		t.Error("a reconcile with nothing to do wrote the binding")
	}

	// The user confirms.
	b.Spec.GracefulEvictionTasks[0].SuppressDeletion = ptr.To(false)
	e.update(b)
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b = e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("task kept after suppressDeletion: false: %+v", b.Spec.GracefulEvictionTasks)
	}
	if !containsEvent(e.events(), "Normal", EventReasonEvictionSucceed, "member2") {
		t.Error("no EvictWorkloadFromClusterSucceed event")
	}
	if e.gauge("lifeboat_eviction_tasks_open") != 0 {
		t.Error("open tasks gauge not back to 0")
	}
	if len(b.Status.FailoverHistory) != 1 {
		t.Errorf("history lost with the task: %+v", b.Status.FailoverHistory)
	}
}

// Only one cluster is allowed, so nothing can take the workload: the old
// copy must stay, even past the grace period, and the binding says why.
func TestGracefulEvictionNoTargetKeepsLastCopy(t *testing.T) {
	e := newEnv(t, nil, makeBinding("nginx").health("member2", workv1alpha2.ResourceUnhealthy).unscheduled().
		noClusterFit("0/1 clusters are available: 1 cluster(s) is in the process of eviction.").
		task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)).obj())
	e.clock.SetTime(at(7200))
	r := e.gracefulEviction()
	res, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
	if err != nil {
		t.Fatal(err)
	}
	b := e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 1 {
		t.Fatal("task removed with no target: the last copy would be deleted")
	}
	if !NewHooks(nil).KeepWorkFor(&b.Spec, "member2") {
		t.Error("KeepWorkFor(member2) = false with no target")
	}
	c := meta.FindStatusCondition(b.Status.Conditions, ConditionFailoverTargetAvailable)
	if c == nil || c.Status != "False" || c.Reason != ReasonNoFailoverTarget || !strings.Contains(c.Message, "in the process of eviction") ||
		!strings.Contains(c.Message, "kept") {
		t.Errorf("condition = %+v", c)
	}
	if !containsEvent(e.events(), "Warning", EventReasonNoFailoverTarget) {
		t.Error("no NoFailoverTarget Warning event")
	}
	if res.RequeueAfter != 0 {
		t.Errorf("requeueAfter = %s; with no target the scheduler's change triggers the next pass", res.RequeueAfter)
	}

	// Again: no write, no second Warning.
	rv := b.ResourceVersion
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if e.rb(nginx).ResourceVersion != rv || len(e.events()) != 0 {
		t.Error("repeated pass wrote or warned again")
	}

	// A target appears long after the grace period: the grace period runs
	// from the placement, so the old copy stays until the replacement is
	// Healthy or the grace period has passed since it was placed.
	placedAt := 7300
	e.clock.SetTime(at(placedAt))
	b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
	e.update(b)
	b = e.rb(nginx)
	b.Status.SchedulerObservedGeneration = b.Generation
	b.Status.LastScheduledTime = mt(placedAt)
	meta.RemoveStatusCondition(&b.Status.Conditions, workv1alpha2.Scheduled)
	e.updateStatus(b)
	res, err = r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
	if err != nil {
		t.Fatal(err)
	}
	b = e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 1 {
		t.Fatal("the task was closed the moment a target appeared, past its grace period counted from its creation: the old copy would go before its replacement exists")
	}
	c = meta.FindStatusCondition(b.Status.Conditions, ConditionFailoverTargetAvailable)
	if c == nil || c.Status != "True" || !c.LastTransitionTime.Time.Equal(at(placedAt)) {
		t.Errorf("condition = %+v, want True since the placement at %s", c, at(placedAt))
	}
	if res.RequeueAfter != 600*time.Second {
		t.Errorf("requeueAfter = %s, want the grace period from the placement (10m)", res.RequeueAfter)
	}

	// A restart does not reset it: the condition keeps the placement time.
	e.clock.SetTime(at(placedAt + 599))
	if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if len(e.rb(nginx).Spec.GracefulEvictionTasks) != 1 {
		t.Fatal("task closed before the grace period since the placement passed")
	}
	e.clock.SetTime(at(placedAt + 600))
	if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b = e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("task kept after the grace period since the placement: %+v", b.Spec.GracefulEvictionTasks)
	}
	// The pass that removes the task removes the condition too, in the
	// same status write.
	if c := meta.FindStatusCondition(b.Status.Conditions, ConditionFailoverTargetAvailable); c != nil {
		t.Errorf("condition left with the task removed: %+v", c)
	}
	// Next pass: nothing left to write.
	rv = b.ResourceVersion
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if got := e.rb(nginx).ResourceVersion; got != rv {
		t.Errorf("the pass after the task's removal wrote the binding (resourceVersion %s -> %s)", rv, got)
	}
}

func TestGracefulEvictionGracefullyAndDirectly(t *testing.T) {
	for name, tc := range map[string]struct {
		binding     *workv1alpha2.ResourceBinding
		now         int
		wantTasks   int
		wantRequeue time.Duration
	}{
		"Gracefully: replacement unhealthy, requeue at the grace deadline": {
			binding: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
				health("member2", workv1alpha2.ResourceUnhealthy).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)).obj(),
			now:         100,
			wantTasks:   1,
			wantRequeue: 500 * time.Second,
		},
		"Gracefully: replacement healthy, task removed": {
			binding: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
				health("member2", workv1alpha2.ResourceUnhealthy).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)).obj(),
			now: 100,
		},
		"Gracefully: grace period passed, task removed": {
			binding: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
				health("member2", workv1alpha2.ResourceUnhealthy).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)).obj(),
			now: 600,
		},
		"Directly: old copy still there": {
			binding: makeBinding("nginx").clusters("member1").health("member2", workv1alpha2.ResourceUnhealthy).
				task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")).obj(),
			now:         100,
			wantTasks:   1,
			wantRequeue: DefaultGracePeriod - 100*time.Second,
		},
		"Directly: old copy gone, task removed before the new copy is healthy": {
			binding: makeBinding("nginx").clusters("member1").
				task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")).obj(),
			now: 100,
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, tc.binding)
			e.clock.SetTime(at(tc.now))
			res, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
			if err != nil {
				t.Fatal(err)
			}
			b := e.rb(nginx)
			if len(b.Spec.GracefulEvictionTasks) != tc.wantTasks {
				t.Errorf("tasks = %+v, want %d", b.Spec.GracefulEvictionTasks, tc.wantTasks)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			if len(b.Status.FailoverHistory) != 1 {
				t.Errorf("history = %+v, want the eviction recorded", b.Status.FailoverHistory)
			}
		})
	}
}

// An eviction's history entry waits for the scheduler's answer (at most
// core.EvictionAnswerWait), so that one status write records the entry and
// FailoverTargetAvailable; past the wait it is written alone.
func TestGracefulEvictionHistoryWaitsForTheSchedulersAnswer(t *testing.T) {
	evicted := func() *bindingWrapper {
		return makeBinding("nginx").clusters().unscheduled().task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 100, "member2"))
	}
	cases := map[string]struct {
		binding     *workv1alpha2.ResourceBinding
		now         int
		wantWritten bool
		wantCond    metav1.ConditionStatus
		wantRequeue time.Duration
	}{
		"not answered yet: nothing written": {
			binding: evicted().obj(), now: 103, wantRequeue: 7 * time.Second,
		},
		"not answered within the wait: the entry alone": {
			binding: evicted().obj(), now: 110, wantWritten: true,
		},
		"placed: the entry and the condition together": {
			binding: func() *workv1alpha2.ResourceBinding {
				b := evicted().clusters("member1")
				b.Status.SchedulerObservedGeneration = b.Generation
				return b.obj()
			}(),
			now: 101, wantWritten: true, wantCond: metav1.ConditionTrue,
		},
		"a task closed before the answer: the entry first": {
			binding: func() *workv1alpha2.ResourceBinding {
				task := makeTask("member2", policyv1alpha1.PurgeModeNever, 100, "member2")
				task.SuppressDeletion = ptr.To(false)
				return makeBinding("nginx").clusters().unscheduled().task(task).obj()
			}(),
			now: 101, wantWritten: true,
		},
		"no cluster fits: the entry and the condition together": {
			binding: evicted().noClusterFit("0/3 clusters are available").obj(), now: 101, wantWritten: true, wantCond: metav1.ConditionFalse,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			writes := 0
			e := newEnv(t, &interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					writes++
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
			}, tc.binding)
			e.clock.SetTime(at(tc.now))
			res, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
			if err != nil {
				t.Fatal(err)
			}
			b := e.rb(nginx)
			events := e.events()
			if !tc.wantWritten {
				if writes != 0 || len(b.Status.FailoverHistory) != 0 || len(events) != 0 {
					t.Errorf("%d status writes, history %+v, events %q; want nothing before the scheduler answers", writes, b.Status.FailoverHistory, events)
				}
				if res.RequeueAfter != tc.wantRequeue {
					t.Errorf("requeueAfter = %s, want %s", res.RequeueAfter, tc.wantRequeue)
				}
				return
			}
			if writes != 1 || len(b.Status.FailoverHistory) != 1 {
				t.Errorf("%d status writes, history %+v; want one write with the entry", writes, b.Status.FailoverHistory)
			}
			if !containsEvent(events, "Warning", EventReasonEvicted, "member2") {
				t.Errorf("events = %q, want the eviction", events)
			}
			c := meta.FindStatusCondition(b.Status.Conditions, ConditionFailoverTargetAvailable)
			switch {
			case tc.wantCond == "" && c != nil:
				t.Errorf("condition %+v, want none before the scheduler answers", c)
			case tc.wantCond != "" && (c == nil || c.Status != tc.wantCond):
				t.Errorf("condition %+v, want %s", c, tc.wantCond)
			}
		})
	}
}

// A replacement found Healthy in the pass that closes its task is told in
// one Event, the task's: on the binding and on the template, with where and
// how soon the replacement was healthy. When the task's removal fails, the
// replacement's own Event is recorded instead, so that nothing is lost.
func TestGracefulEvictionReplacementHealthyAndTaskClosedInOneEvent(t *testing.T) {
	binding := func() *workv1alpha2.ResourceBinding {
		return makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
			health("member2", workv1alpha2.ResourceUnhealthy).placementHealthySince(100).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)).obj()
	}
	t.Run("task closed", func(t *testing.T) {
		e := newEnv(t, nil, binding())
		e.clock.SetTime(at(100))
		if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
			t.Fatal(err)
		}
		if tasks := e.rb(nginx).Spec.GracefulEvictionTasks; len(tasks) != 0 {
			t.Fatalf("tasks = %+v, want the task closed", tasks)
		}
		events := e.events()
		want := "Normal EvictWorkloadFromClusterSucceed Evict from cluster member2 succeed: the replacement on [member1] is healthy. The replacement was healthy on member1, 1m40s after the eviction."
		if len(events) != 4 || events[2] != want || events[3] != want {
			t.Errorf("events = %q\nwant Evicted twice, then twice %q", events, want)
		}
		if containsEvent(events, EventReasonReplacementHealthy) {
			t.Errorf("a separate %s Event besides the task's: %q", EventReasonReplacementHealthy, events)
		}
	})
	t.Run("task removal fails", func(t *testing.T) {
		e := newEnv(t, &interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				return apierrors.NewConflict(workv1alpha2.SchemeGroupVersion.WithResource("resourcebindings").GroupResource(), obj.GetName(), errors.New("changed"))
			},
		}, binding())
		e.clock.SetTime(at(100))
		if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
			t.Fatal(err)
		}
		events := e.events()
		if !containsEvent(events, "Normal", EventReasonReplacementHealthy, "healthy on member1, 1m40s after the eviction") {
			t.Errorf("events = %q, want %s", events, EventReasonReplacementHealthy)
		}
		if containsEvent(events, EventReasonEvictionSucceed) {
			t.Errorf("events = %q: the task was not closed", events)
		}
	})
}

// Directly with an OldCopyExists check: the aggregated status forgot the
// old copy but its Work is still there, so the task stays.
func TestGracefulEvictionDirectlyAsksOldCopyExists(t *testing.T) {
	e := newEnv(t, nil, makeBinding("nginx").clusters("member1").
		task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")).obj())
	r := e.gracefulEviction()
	exists := true
	r.OldCopyExists = func(context.Context, client.Object, string) (bool, error) { return exists, nil }
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if len(e.rb(nginx).Spec.GracefulEvictionTasks) != 1 {
		t.Fatal("task removed while the old Work exists")
	}
	exists = false
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if len(e.rb(nginx).Spec.GracefulEvictionTasks) != 0 {
		t.Fatal("task kept after the old Work is gone")
	}
}

// The full chain through both controllers: an eviction's history entry is
// derived from its task even when the application-failover controller
// never writes status after its spec write.
func TestEvictionThenHistory(t *testing.T) {
	e := newEnv(t, nil, makeBinding("nginx").appFailover(0, policyv1alpha1.PurgeModeDirectly, rule("jobid", "{.jobStatus.jobId}")).
		clusters("member1").reflected("member1", map[string]interface{}{"jobStatus": map[string]interface{}{"jobId": "abc123"}}).obj())
	if _, err := e.appFailover(features.New()).reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Second)
	if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b := e.rb(nginx)
	if len(b.Status.FailoverHistory) != 1 {
		t.Fatalf("history = %+v", b.Status.FailoverHistory)
	}
	h := b.Status.FailoverHistory[0]
	if h.FromCluster != "member1" || h.PreservedLabelState["jobid"] != "abc123" || h.PurgeMode != policyv1alpha1.PurgeModeDirectly ||
		h.Producer != workv1alpha2.EvictionProducerRBApplicationFailover || !h.Time.Time.Equal(t0) {
		t.Errorf("history entry = %+v", h)
	}
	// The scheduler places member3; the binding controller would inject.
	b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member3"}}
	if got := NewHooks(features.New()).LabelsToInject(&b.Spec, &b.Status, "member3"); got["jobid"] != "abc123" {
		t.Errorf("LabelsToInject(member3) = %v", got)
	}
}

// A single-cluster workload evicted from a cluster that comes back before
// any other cluster took it: the eviction is undone in one write (task
// gone, cluster back in spec.clusters), announced once, and nothing else is
// written afterwards. While the cluster is still down nothing changes.
func TestGracefulEvictionUndoneWhenTheClusterRecovers(t *testing.T) {
	task := withGrace(makeTask("member1", policyv1alpha1.PurgeModeGracefully, 0, "member1"), 60)
	task.Reason, task.Producer, task.Replicas = workv1alpha2.EvictionReasonTaintUntolerated, workv1alpha2.EvictionProducerTaintManager, ptr.To[int32](2)
	rb := makeBinding("nginx").unscheduled().
		noClusterFit("0/3 clusters are available: 1 cluster(s) is in the process of eviction, 2 cluster(s) did not match the placement cluster affinity constraint.").
		task(task).obj()
	rb.Spec.Replicas = 2
	member1 := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Status: clusterv1alpha1.ClusterStatus{
		Conditions: []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse, Reason: "ClusterNotReachable"}}}}
	e := newEnv(t, nil, rb, member1)
	e.clock.SetTime(at(3600))
	r := e.gracefulEviction()

	// Still down: the task stays, the copy is kept.
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if b := e.rb(nginx); len(b.Spec.GracefulEvictionTasks) != 1 || len(b.Spec.Clusters) != 0 {
		t.Fatalf("changed while the cluster is down: clusters %v, tasks %d", b.Spec.Clusters, len(b.Spec.GracefulEvictionTasks))
	}
	e.events()

	// Back: Ready, no NoExecute taint.
	c := &clusterv1alpha1.Cluster{}
	if err := e.client.Get(context.Background(), types.NamespacedName{Name: "member1"}, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Conditions[0].Status, c.Status.Conditions[0].Reason = metav1.ConditionTrue, "ClusterReady"
	if err := e.client.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b := e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("tasks = %+v, want none", b.Spec.GracefulEvictionTasks)
	}
	if want := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}; !equality.Semantic.DeepEqual(b.Spec.Clusters, want) {
		t.Errorf("spec.clusters = %+v, want %+v", b.Spec.Clusters, want)
	}
	if !NewHooks(nil).KeepWorkFor(&b.Spec, "member1") && !slices.ContainsFunc(b.Spec.Clusters, func(c workv1alpha2.TargetCluster) bool { return c.Name == "member1" }) {
		t.Error("member1's copy is neither kept nor targeted: the binding controller would delete it")
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, ConditionFailoverTargetAvailable); c != nil {
		t.Errorf("FailoverTargetAvailable left: %+v", c)
	}
	if !containsEvent(e.events(), "Normal", EventReasonEvictionCancelled, "member1") {
		t.Error("no EvictionCancelled event")
	}
	if got := e.gauge("lifeboat_evictions_cancelled_total"); got != 1 {
		t.Errorf("lifeboat_evictions_cancelled_total = %v, want 1", got)
	}

	// Again: nothing to write.
	rv := b.ResourceVersion
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	if e.rb(nginx).ResourceVersion != rv || len(e.events()) != 0 {
		t.Error("the pass after the undo wrote or announced again")
	}
}

// A mass failover's per-workload Events past the budget's burst are
// summarised on the evicted Cluster; every binding's status still records
// its eviction, and another cluster's failover keeps its own Events.
func TestGracefulEvictionSummarisesAMassFailoversEvents(t *testing.T) {
	names := []string{"a", "b", "c"}
	var objs []client.Object
	for _, n := range names {
		objs = append(objs, makeBinding(n).clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
			health("member2", workv1alpha2.ResourceUnhealthy).
			task(makeTask("member2", policyv1alpha1.PurgeModeNever, 0, "member2")).obj())
	}
	objs = append(objs, makeBinding("d").clusters("member2").health("member2", workv1alpha2.ResourceHealthy).
		health("member3", workv1alpha2.ResourceUnhealthy).
		task(makeTask("member3", policyv1alpha1.PurgeModeNever, 0, "member3")).obj())
	e := newEnv(t, nil, objs...)
	e.clock.SetTime(at(100000))
	budget, err := eventbudget.New(eventbudget.Options{Burst: 2, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	r := e.gracefulEviction()
	r.Events = budget
	for _, n := range append(names, "d") {
		if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(n+"-deployment")); err != nil {
			t.Fatal(err)
		}
		if h := e.rb(n + "-deployment").Status.FailoverHistory; len(h) != 1 {
			t.Errorf("%s: history = %+v, want its eviction recorded whatever its Events", n, h)
		}
	}
	events := e.events()
	count := func(parts ...string) int {
		n := 0
		for _, ev := range events {
			if containsEvent([]string{ev}, parts...) {
				n++
			}
		}
		return n
	}
	// Binding and template each: the first two workloads of member2's
	// failover, and member3's one.
	if got := count(EventReasonEvicted, "member2"); got != 4 {
		t.Errorf("%d EvictWorkloadFromCluster Events about member2, want 4 (two workloads): %v", got, events)
	}
	if got := count(EventReasonEvicted, "member3"); got != 2 {
		t.Errorf("%d EvictWorkloadFromCluster Events about member3, want 2: %v", got, events)
	}
	sums := budget.Due(true)
	var said []string
	for _, s := range sums {
		said = append(said, s.Subject.Name+" "+s.Reason+" "+s.Message)
	}
	if !containsEvent(said, "member2 "+EventReasonEvicted, "1 more", "Deployment default/c") ||
		!containsEvent(said, "member2 "+EventReasonReplacementHealthy, "1 more") || len(sums) != 2 {
		t.Errorf("summaries = %q, want member2's eviction and replacement of workload c", said)
	}
}
