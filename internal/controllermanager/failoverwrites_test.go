package controllermanager

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/binding"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/customization"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
)

// failoverBudget is what one binding's cluster failover may cost the
// control plane, per controller: its writes and its Events (each Event on
// the binding and on its template counts twice), from the taint on the
// failed cluster to the replacement Healthy, the eviction task closed and
// the old copy's Work deleted. docs/performance.md ("The write budget of
// one failover") names each of them: a change that needs one more says why
// there too.
var failoverBudget = map[string]struct{ writes, events int }{
	// The eviction task, with the failed cluster out of spec.clusters.
	"taint-manager": {writes: 1, events: 0},
	// The history entry with FailoverTargetAvailable=True; the entry
	// healed with the condition removed; the task removed. Events:
	// EvictWorkloadFromCluster, EvictWorkloadFromClusterSucceed.
	"graceful-eviction": {writes: 3, events: 4},
	// The new placement, its status, and the status after the task's
	// removal (schedulerObservedGeneration). Event: ScheduleBindingSucceed.
	"scheduler": {writes: 3, events: 2},
	// The new copy's Work; the old copy's Work deleted.
	"binding": {writes: 2, events: 0},
	// The member's report of the new copy: one Work status write (the
	// execution and work-status controllers, simulated here).
	"member": {writes: 1, events: 0},
	// The binding's and the template's status with the replacement
	// Healthy, then without the evicted cluster.
	"binding-status": {writes: 4, events: 0},
}

// TestOneClusterFailoverStaysWithinItsWriteBudget runs the control plane's
// controllers on a fake API server, in turns until none has anything left
// to write, through one Deployment's cluster failover (member1 tainted
// NoExecute, the workload moved to member2), and counts each controller's
// writes and Events. The budget cannot creep back unnoticed.
func TestOneClusterFailoverStaysWithinItsWriteBudget(t *testing.T) {
	// Under load the binding status controller can see the eviction before
	// the scheduler has placed the replacement: the budget holds in both
	// orders.
	for name, statusFirst := range map[string]bool{"in the order of the wiring": false, "binding status before the scheduler": true} {
		t.Run(name, func(t *testing.T) { oneFailoverWithinBudget(t, statusFirst) })
	}
}

func oneFailoverWithinBudget(t *testing.T, statusFirst bool) {
	p := newPipeline(t, statusFirst)

	// Placed on member1 and Healthy there.
	p.settle()
	rb := p.binding()
	if got := clusterNames(rb); got != "member1" {
		t.Fatalf("before the failure: scheduled to %q, want member1", got)
	}
	if !workv1alpha2.IsPlacementHealthy(rb.Spec.Clusters, rb.Status.AggregatedStatus) {
		t.Fatalf("before the failure: not Healthy: %+v", rb.Status.AggregatedStatus)
	}
	p.reset()

	// member1 fails: its Ready turns False and the NoExecute taint lands.
	p.fail("member1")
	p.settle()

	rb = p.binding()
	if got := clusterNames(rb); got != "member2" {
		t.Fatalf("after the failover: scheduled to %q, want member2", got)
	}
	if len(rb.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("after the failover: eviction tasks left: %+v", rb.Spec.GracefulEvictionTasks)
	}
	if len(rb.Status.FailoverHistory) != 1 || rb.Status.FailoverHistory[0].ReplacementHealthyTime == nil {
		t.Errorf("after the failover: history %+v, want one entry with the replacement Healthy", rb.Status.FailoverHistory)
	}
	if !workv1alpha2.IsPlacementHealthy(rb.Spec.Clusters, rb.Status.AggregatedStatus) {
		t.Errorf("after the failover: not Healthy: %+v", rb.Status.AggregatedStatus)
	}

	total, totalEvents := 0, 0
	for _, name := range p.order {
		got, budget := p.writes[name], failoverBudget[name]
		total += len(got)
		totalEvents += len(p.events[name])
		t.Logf("%s: %d writes %v; %d Events %v", name, len(got), got, len(p.events[name]), p.events[name])
		if len(got) > budget.writes {
			t.Errorf("%s wrote %d times in one failover, budget %d: %v", name, len(got), budget.writes, got)
		}
		if len(p.events[name]) > budget.events {
			t.Errorf("%s recorded %d Events in one failover, budget %d: %v", name, len(p.events[name]), budget.events, p.events[name])
		}
	}
	t.Logf("one failover: %d control-plane writes and %d Events", total, totalEvents)
}

// pipeline is the control plane's binding controllers on one fake API
// server, each with a counter of its writes and a recorder of its Events.
type pipeline struct {
	t       *testing.T
	c       client.Client
	clock   *clocktesting.FakeClock
	steps   []step
	order   []string
	current string
	writes  map[string][]string
	events  map[string][]string
}

type step struct {
	name string
	run  func(ctx context.Context, req ctrl.Request) (ctrl.Result, error)
	rec  *record.FakeRecorder
}

var budgetRB = types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}

// newPipeline builds the pipeline; statusFirst runs the binding status
// controller right after the taint manager, before the scheduler.
func newPipeline(t *testing.T, statusFirst bool) *pipeline {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{t: t, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), writes: map[string][]string{}, events: map[string][]string{}}

	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nginx", UID: "nginx-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
	placement := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Spread("cluster", 1, 1).Obj()
	rb := st.MakeBinding("default", "nginx").Replicas(1).Placement(placement).Obj()
	rb.Spec.Resource.ResourceVersion = "1"
	clusters := []client.Object{
		st.MakeCluster("member1").APIs("apps/v1", "Deployment").APIsComplete(metav1.ConditionTrue).Obj(),
		st.MakeCluster("member2").APIs("apps/v1", "Deployment").APIsComplete(metav1.ConditionTrue).Obj(),
	}

	b := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(append(clusters, deploy, rb)...).
		WithStatusSubresource(&workv1alpha2.ResourceBinding{}, &workv1alpha1.Work{}, &appsv1.Deployment{}, &clusterv1alpha1.Cluster{})
	ctx := context.Background()
	idx := clienttest.Indexer{Builder: b}
	workIndex := &binding.WorkIndex{}
	if err := workIndex.Register(ctx, idx); err != nil {
		t.Fatal(err)
	}
	b.WithIndex(&workv1alpha2.ResourceBinding{}, scheduler.IndexScheduled, scheduler.ScheduledIndexValue)
	count := clienttest.CountWrites(func(verb string, obj client.Object) {
		p.writes[p.current] = append(p.writes[p.current], fmt.Sprintf("%s %T", verb, obj))
	})
	b.WithInterceptorFuncs(withGenerations(count))
	p.c = b.Build()

	gates := features.New()
	hooks := failover.NewHooks(gates)
	quiet := &record.FakeRecorder{}
	interp, err := customization.NewInterpreter(customization.NewLayer(lua.New(lua.DefaultOptions()), quiet, p.clock))
	if err != nil {
		t.Fatal(err)
	}
	reader := &templates.Reader{Live: p.c}
	rec := func() *record.FakeRecorder { return record.NewFakeRecorder(100) }

	tm := &failover.TaintManager{Client: p.c, Clock: p.clock, Gates: gates, Enabled: true, Recorder: rec()}
	sched := &scheduler.Reconciler{Client: p.c, Clock: p.clock, Gates: gates, Recorder: rec()}
	bind := &binding.Reconciler{Client: p.c, Templates: reader, Interpreter: interp, InjectState: hooks.InjectLabels, Eviction: hooks, WorkIndex: workIndex, Recorder: rec()}
	status := &binding.StatusReconciler{Client: p.c, Templates: reader, Interpreter: interp, Eviction: hooks, Clock: p.clock, WorkIndex: workIndex, Recorder: rec(),
		Starting: coalesce.NewQuiet(binding.StartingGrace, p.clock)}
	ge := &failover.GracefulEvictionReconciler{Client: p.c, Clock: p.clock, Wave: failover.NewWave(time.Minute), Recorder: rec()}
	p.steps = []step{
		{"taint-manager", tm.ReconcileResourceBinding, tm.Recorder.(*record.FakeRecorder)},
		{"graceful-eviction", ge.ReconcileResourceBinding, ge.Recorder.(*record.FakeRecorder)},
		{"scheduler", sched.ReconcileResourceBinding, sched.Recorder.(*record.FakeRecorder)},
		{"binding", bind.Reconcile, bind.Recorder.(*record.FakeRecorder)},
		{"member", p.reportMember, nil},
		{"binding-status", status.Reconcile, status.Recorder.(*record.FakeRecorder)},
	}
	if statusFirst {
		last := p.steps[len(p.steps)-1]
		p.steps = append([]step{p.steps[0], last}, p.steps[1:len(p.steps)-1]...)
	}
	for _, s := range p.steps {
		p.order = append(p.order, s.name)
	}
	return p
}

// withGenerations adds to count what the API server does and the fake
// client does not: a write that changes a binding's spec increments its
// metadata.generation.
func withGenerations(count interceptor.Funcs) interceptor.Funcs {
	bump := func(ctx context.Context, c client.WithWatch, obj client.Object, write func() error) error {
		rb, ok := obj.(*workv1alpha2.ResourceBinding)
		if !ok {
			return write()
		}
		var before workv1alpha2.ResourceBinding
		if err := c.Get(ctx, client.ObjectKeyFromObject(rb), &before); err != nil {
			return write()
		}
		if err := write(); err != nil {
			return err
		}
		var after workv1alpha2.ResourceBinding
		if err := c.Get(ctx, client.ObjectKeyFromObject(rb), &after); err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(before.Spec, after.Spec) {
			return nil
		}
		after.Generation = before.Generation + 1
		if err := c.Update(ctx, &after); err != nil {
			return err
		}
		rb.Generation, rb.ResourceVersion = after.Generation, after.ResourceVersion
		return nil
	}
	return interceptor.Funcs{
		Create: count.Create,
		Delete: count.Delete,
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return bump(ctx, c, obj, func() error { return count.Update(ctx, c, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return bump(ctx, c, obj, func() error { return count.Patch(ctx, c, obj, patch, opts...) })
		},
		SubResourceUpdate: count.SubResourceUpdate,
		SubResourcePatch:  count.SubResourcePatch,
		SubResourceCreate: count.SubResourceCreate,
	}
}

// settle runs the controllers in turns, a second apart on the fake clock,
// until ten turns in a row write nothing. Every controller watches the
// binding, so each write wakes them all: a turn starts again from the
// first controller after any write, and the controllers act in the order
// in which a change reaches them.
func (p *pipeline) settle() {
	p.t.Helper()
	ctx := context.Background()
	quiet := 0
	for turn := 0; turn < 300 && quiet < 10; turn++ {
		start := p.count()
		for i := 0; i < len(p.steps); i++ {
			s := p.steps[i]
			before := p.count()
			p.current = s.name
			if _, err := s.run(ctx, ctrl.Request{NamespacedName: budgetRB}); err != nil {
				p.t.Logf("%s: %v", s.name, err)
			}
			p.current = ""
			if s.rec != nil {
				p.events[s.name] = append(p.events[s.name], eventstest.Drain(s.rec)...)
			}
			if p.count() != before {
				i = -1
			}
		}
		if p.count() == start {
			quiet++
		} else {
			quiet = 0
		}
		p.clock.Step(time.Second)
	}
	if quiet < 10 {
		p.t.Fatalf("the controllers still write after 300 turns: %v", p.writes)
	}
}

func (p *pipeline) count() int {
	n := 0
	for _, w := range p.writes {
		n += len(w)
	}
	return n
}

// reset forgets what was counted so far.
func (p *pipeline) reset() {
	p.writes, p.events = map[string][]string{}, map[string][]string{}
}

// fail marks cluster Ready=False and taints it NoExecute, as the cluster
// status and taint controllers do.
func (p *pipeline) fail(cluster string) {
	p.t.Helper()
	ctx := context.Background()
	var c clusterv1alpha1.Cluster
	if err := p.c.Get(ctx, types.NamespacedName{Name: cluster}, &c); err != nil {
		p.t.Fatal(err)
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse, Reason: "ClusterNotReachable"})
	if err := p.c.Status().Update(ctx, &c); err != nil {
		p.t.Fatal(err)
	}
	now := metav1.NewTime(p.clock.Now())
	c.Spec.Taints = append(c.Spec.Taints,
		corev1.Taint{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now},
		corev1.Taint{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now})
	if err := p.c.Update(ctx, &c); err != nil {
		p.t.Fatal(err)
	}
}

// reportMember is the execution and work-status controllers of every Ready
// member: the Work's object applied and Healthy, in one status write of
// the Work, as they report a new object.
func (p *pipeline) reportMember(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var works workv1alpha1.WorkList
	if err := p.c.List(ctx, &works); err != nil {
		return ctrl.Result{}, err
	}
	for i := range works.Items {
		w := &works.Items[i]
		cluster := strings.TrimPrefix(w.Namespace, clusterv1alpha1.ExecutionSpacePrefix)
		var c clusterv1alpha1.Cluster
		if err := p.c.Get(ctx, types.NamespacedName{Name: cluster}, &c); err != nil {
			return ctrl.Result{}, err
		}
		if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkApplied); applied != nil && applied.ObservedGeneration == w.Generation {
			continue
		}
		w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedSuccessful",
			ObservedGeneration: w.Generation, LastTransitionTime: metav1.NewTime(p.clock.Now())}}
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
			Identifier:         workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "nginx"},
			Status:             &runtime.RawExtension{Raw: []byte(`{"replicas":1,"readyReplicas":1,"availableReplicas":1}`)},
			Health:             workv1alpha1.ResourceHealthy,
			ObservedGeneration: w.Generation,
		}}
		if err := p.c.Status().Update(ctx, w); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

func (p *pipeline) binding() *workv1alpha2.ResourceBinding {
	p.t.Helper()
	var rb workv1alpha2.ResourceBinding
	if err := p.c.Get(context.Background(), budgetRB, &rb); err != nil {
		p.t.Fatal(err)
	}
	return &rb
}

func clusterNames(rb *workv1alpha2.ResourceBinding) string {
	var names []string
	for _, c := range rb.Spec.Clusters {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
