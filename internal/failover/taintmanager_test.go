package failover

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

const notReadyKey = clusterv1alpha1.TaintClusterNotReady

func noExec(key string, added int) corev1.Taint {
	t := corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
	if added >= 0 {
		t.TimeAdded = mt(added)
	}
	return t
}

// toleration tolerates key:NoExecute (Exists) for seconds (nil: forever).
func toleration(key string, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func TestNoExecuteDeadline(t *testing.T) {
	other := "example.com/maintenance"
	cases := map[string]struct {
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        EvictionDeadline
	}{
		"no taints": {want: EvictionDeadline{Never: true}},
		"NoSchedule only": {
			taints: []corev1.Taint{{Key: notReadyKey, Effect: corev1.TaintEffectNoSchedule}},
			want:   EvictionDeadline{Never: true},
		},
		"untolerated: now": {
			taints: []corev1.Taint{noExec(notReadyKey, 0)},
			want:   EvictionDeadline{Taint: noExec(notReadyKey, 0)},
		},
		"tolerated without seconds: forever": {
			taints:      []corev1.Taint{noExec(notReadyKey, 0)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, nil)},
			want:        EvictionDeadline{Never: true},
		},
		"tolerated 30s: timeAdded + 30s": {
			taints:      []corev1.Taint{noExec(notReadyKey, 10)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, ptr.To[int64](30))},
			want:        EvictionDeadline{At: at(40), Taint: noExec(notReadyKey, 10), Seconds: 30},
		},
		"tolerationSeconds 0: at timeAdded": {
			taints:      []corev1.Taint{noExec(notReadyKey, 10)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, ptr.To[int64](0))},
			want:        EvictionDeadline{At: at(10), Taint: noExec(notReadyKey, 10)},
		},
		"negative tolerationSeconds: before timeAdded": {
			taints:      []corev1.Taint{noExec(notReadyKey, 10)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, ptr.To[int64](-5))},
			want:        EvictionDeadline{At: at(5), Taint: noExec(notReadyKey, 10), Seconds: -5},
		},
		"the earliest deadline over several taints": {
			taints: []corev1.Taint{noExec(notReadyKey, 0), noExec(other, 100)},
			tolerations: []corev1.Toleration{
				toleration(notReadyKey, ptr.To[int64](300)),
				toleration(other, ptr.To[int64](60)),
			},
			want: EvictionDeadline{At: at(160), Taint: noExec(other, 100), Seconds: 60},
		},
		"one taint tolerated forever, one for 60s: 60s": {
			taints: []corev1.Taint{noExec(notReadyKey, 0), noExec(other, 0)},
			tolerations: []corev1.Toleration{
				toleration(notReadyKey, nil),
				toleration(other, ptr.To[int64](60)),
			},
			want: EvictionDeadline{At: at(60), Taint: noExec(other, 0), Seconds: 60},
		},
		"one of two taints untolerated: now": {
			taints:      []corev1.Taint{noExec(notReadyKey, 0), noExec(other, 0)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, nil)},
			want:        EvictionDeadline{Taint: noExec(other, 0)},
		},
		"the first matching toleration of a taint is used": {
			taints: []corev1.Taint{noExec(notReadyKey, 0)},
			tolerations: []corev1.Toleration{
				toleration(notReadyKey, nil),
				{Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](5)},
			},
			want: EvictionDeadline{Never: true},
		},
		"a used wildcard counts for every taint it tolerates": {
			taints: []corev1.Taint{noExec(notReadyKey, 50), noExec(other, 0)},
			tolerations: []corev1.Toleration{
				toleration(notReadyKey, ptr.To[int64](100)),
				{Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](20)},
			},
			// The wildcard is used for "other", and also tolerates not-ready
			// (added at 50): min(150, 70, 20) = 20.
			want: EvictionDeadline{At: at(20), Taint: noExec(other, 0), Seconds: 20},
		},
		"Equal with another value does not tolerate": {
			taints:      []corev1.Taint{{Key: notReadyKey, Value: "a", Effect: corev1.TaintEffectNoExecute, TimeAdded: mt(0)}},
			tolerations: []corev1.Toleration{{Key: notReadyKey, Operator: corev1.TolerationOpEqual, Value: "b"}},
			want:        EvictionDeadline{Taint: corev1.Taint{Key: notReadyKey, Value: "a", Effect: corev1.TaintEffectNoExecute, TimeAdded: mt(0)}},
		},
		"a NoSchedule toleration does not tolerate NoExecute": {
			taints:      []corev1.Taint{noExec(notReadyKey, 0)},
			tolerations: []corev1.Toleration{{Key: notReadyKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			want:        EvictionDeadline{Taint: noExec(notReadyKey, 0)},
		},
		"an empty effect tolerates every effect": {
			taints:      []corev1.Taint{noExec(notReadyKey, 0)},
			tolerations: []corev1.Toleration{{Key: notReadyKey, Operator: corev1.TolerationOpExists}},
			want:        EvictionDeadline{Never: true},
		},
		"a taint without timeAdded counts as added now, never as tolerated forever": {
			taints:      []corev1.Taint{noExec(notReadyKey, -1)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, ptr.To[int64](30))},
			want:        EvictionDeadline{At: at(100 + 30), Taint: noExec(notReadyKey, -1), Seconds: 30},
		},
		"a taint without timeAdded and tolerationSeconds 0: now": {
			taints:      []corev1.Taint{noExec(notReadyKey, -1)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, ptr.To[int64](0))},
			want:        EvictionDeadline{At: at(100), Taint: noExec(notReadyKey, -1)},
		},
		"a taint without timeAdded tolerated without seconds: forever": {
			taints:      []corev1.Taint{noExec(notReadyKey, -1)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, nil)},
			want:        EvictionDeadline{Never: true},
		},
		"tolerationSeconds past what a Duration holds does not wrap into the past": {
			taints:      []corev1.Taint{noExec(notReadyKey, 10)},
			tolerations: []corev1.Toleration{toleration(notReadyKey, ptr.To[int64](math.MaxInt64))},
			want: EvictionDeadline{At: at(10).Add(time.Duration(math.MaxInt64/int64(time.Second)) * time.Second),
				Taint: noExec(notReadyKey, 10), Seconds: math.MaxInt64},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := NoExecuteDeadline(tc.taints, tc.tolerations, at(100))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(EvictionDeadline{})); diff != "" {
				t.Errorf("NoExecuteDeadline (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanTaintEvictions(t *testing.T) {
	clusters := []workv1alpha2.TargetCluster{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}}
	tol30 := []corev1.Toleration{toleration(notReadyKey, ptr.To[int64](30))}
	cases := map[string]struct {
		taints       map[string][]corev1.Taint
		tolerations  []corev1.Toleration
		now          time.Time
		wantEvict    []string
		wantRequeue  time.Duration
		wantMessages []string
	}{
		"untainted": {
			taints: map[string][]corev1.Taint{"m1": nil, "m2": nil, "m3": nil},
		},
		"untolerated on one cluster": {
			taints:       map[string][]corev1.Taint{"m1": nil, "m2": {noExec(notReadyKey, 0)}, "m3": nil},
			wantEvict:    []string{"m2"},
			wantMessages: []string{"cluster m2 has the taint cluster.karmada.io/not-ready:NoExecute, which the placement does not tolerate"},
		},
		"a cluster that does not exist is left alone": {
			taints: map[string][]corev1.Taint{"m1": nil},
		},
		"tolerated: requeue at the earliest deadline": {
			taints:      map[string][]corev1.Taint{"m1": {noExec(notReadyKey, 0)}, "m2": {noExec(notReadyKey, 5)}, "m3": nil},
			tolerations: tol30,
			now:         at(10),
			wantRequeue: 20 * time.Second,
		},
		"one deadline passed, one pending": {
			taints:       map[string][]corev1.Taint{"m1": {noExec(notReadyKey, 0)}, "m2": {noExec(notReadyKey, 25)}, "m3": nil},
			tolerations:  tol30,
			now:          at(30),
			wantEvict:    []string{"m1"},
			wantRequeue:  25 * time.Second,
			wantMessages: []string{"the placement tolerated the taint cluster.karmada.io/not-ready:NoExecute of cluster m1 for 30s, until 2024-05-08T09:00:30Z"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			evict, requeue := PlanTaintEvictions(clusters, tc.taints, tc.tolerations, now)
			var got, msgs []string
			for _, e := range evict {
				got = append(got, e.Cluster)
				msgs = append(msgs, e.Message)
			}
			if diff := cmp.Diff(tc.wantEvict, got); diff != "" {
				t.Errorf("evict (-want +got):\n%s", diff)
			}
			if requeue != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", requeue, tc.wantRequeue)
			}
			if tc.wantMessages != nil {
				if diff := cmp.Diff(tc.wantMessages, msgs); diff != "" {
					t.Errorf("messages (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// tmEnv is a taint manager over a fake control plane.
type tmEnv struct {
	*env
	writes int
	tm     *TaintManager
}

// newTaintManagerEnv builds a taint manager with a real storm guard (rate
// 50/s) over objs; failWrites makes every binding write fail with it.
func newTaintManagerEnv(t *testing.T, failWrites error, objs ...client.Object) *tmEnv {
	t.Helper()
	te := &tmEnv{}
	count := func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		te.writes++
		if failWrites != nil {
			return failWrites
		}
		return c.Update(ctx, obj, opts...)
	}
	funcs := &interceptor.Funcs{
		Update: count,
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			te.writes++
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			te.writes++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
	te.env = newEnv(t, funcs, objs...)
	guard, err := NewStormGuard(te.client, te.recorder, te.clock, defaultGuardConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	te.tm = &TaintManager{Client: te.client, Recorder: te.recorder, Clock: te.clock, Gates: features.New(), Guard: guard, Enabled: true}
	return te
}

func (e *tmEnv) reconcile(k bindingKind, req ctrl.Request) ctrl.Result {
	e.t.Helper()
	res, err := e.tm.reconcile(context.Background(), k, req)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (b *bindingWrapper) tolerate(tols ...corev1.Toleration) *bindingWrapper {
	if b.Spec.Placement == nil {
		b.Spec.Placement = &policyv1alpha1.Placement{}
	}
	b.Spec.Placement.ClusterTolerations = append(b.Spec.Placement.ClusterTolerations, tols...)
	return b
}

func (b *bindingWrapper) clusterFailover(mode policyv1alpha1.PurgeMode, rules ...policyv1alpha1.StatePreservationRule) *bindingWrapper {
	cf := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: mode}
	if len(rules) > 0 {
		cf.StatePreservation = &policyv1alpha1.StatePreservation{Rules: rules}
	}
	b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: cf}
	return b
}

// healthyFleet is member1 with a NoExecute not-ready taint added at t0
// (and Ready False), member2 and member3 Ready.
func healthyFleet() []client.Object {
	return []client.Object{
		makeCluster("member1").down().notReadyNoExecute(0).taint(notReadyKey, corev1.TaintEffectNoSchedule, 0).obj(),
		makeCluster("member2").obj(),
		makeCluster("member3").obj(),
	}
}

func TestTaintManagerEvictsUntolerated(t *testing.T) {
	objs := append(healthyFleet(), makeBinding("nginx").clusters("member1", "member2").obj())
	e := newTaintManagerEnv(t, nil, objs...)
	res := e.reconcile(resourceBindingKind, reqFor(nginx))
	if res.RequeueAfter != 0 {
		t.Errorf("requeueAfter = %s, want 0", res.RequeueAfter)
	}
	if e.writes != 1 {
		t.Errorf("writes = %d, want 1", e.writes)
	}
	b := e.rb(nginx)
	if diff := cmp.Diff([]string{"member2"}, clusterNames(b.Spec.Clusters)); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if len(b.Spec.GracefulEvictionTasks) != 1 {
		t.Fatalf("tasks = %+v, want one", b.Spec.GracefulEvictionTasks)
	}
	task := b.Spec.GracefulEvictionTasks[0]
	want := workv1alpha2.GracefulEvictionTask{
		FromCluster:            "member1",
		PurgeMode:              policyv1alpha1.PurgeModeGracefully,
		Replicas:               ptr.To[int32](2),
		Reason:                 workv1alpha2.EvictionReasonTaintUntolerated,
		Message:                "cluster member1 has the taint cluster.karmada.io/not-ready:NoExecute, which the placement does not tolerate",
		Producer:               workv1alpha2.EvictionProducerTaintManager,
		ClustersBeforeFailover: []string{"member1", "member2"},
		CreationTimestamp:      ptr.To(metav1.NewTime(t0)),
	}
	if diff := cmp.Diff(want, task, cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })); diff != "" {
		t.Errorf("task (-want +got):\n%s", diff)
	}

	// Evicted: another pass writes nothing.
	e.writes = 0
	e.reconcile(resourceBindingKind, reqFor(nginx))
	if e.writes != 0 {
		t.Errorf("second pass wrote %d times", e.writes)
	}
}

func TestTaintManagerToleratedFor30s(t *testing.T) {
	objs := append(healthyFleet(), makeBinding("nginx").clusters("member1").
		tolerate(toleration(notReadyKey, ptr.To[int64](30))).obj())
	e := newTaintManagerEnv(t, nil, objs...)

	e.clock.SetTime(at(10))
	if res := e.reconcile(resourceBindingKind, reqFor(nginx)); res.RequeueAfter != 20*time.Second {
		t.Errorf("requeueAfter = %s, want 20s (timeAdded + 30s)", res.RequeueAfter)
	}
	e.clock.SetTime(at(29))
	if res := e.reconcile(resourceBindingKind, reqFor(nginx)); res.RequeueAfter != time.Second {
		t.Errorf("requeueAfter = %s, want 1s", res.RequeueAfter)
	}
	if e.writes != 0 {
		t.Fatalf("wrote %d times before the deadline", e.writes)
	}
	e.clock.SetTime(at(30))
	e.reconcile(resourceBindingKind, reqFor(nginx))
	b := e.rb(nginx)
	if len(b.Spec.Clusters) != 0 || len(b.Spec.GracefulEvictionTasks) != 1 ||
		b.Spec.GracefulEvictionTasks[0].Reason != workv1alpha2.EvictionReasonTaintUntolerated {
		t.Errorf("at the deadline: clusters %+v tasks %+v, want member1 evicted", b.Spec.Clusters, b.Spec.GracefulEvictionTasks)
	}
}

// The must-not-evict cases: nothing is written.
func TestTaintManagerMustNotEvict(t *testing.T) {
	cases := map[string]struct {
		objs        []client.Object
		gates       map[string]bool
		disabled    bool
		wantRequeue time.Duration
	}{
		"tolerated without tolerationSeconds: never": {
			objs: append(healthyFleet(), makeBinding("nginx").clusters("member1").tolerate(toleration(notReadyKey, nil)).obj()),
		},
		"a NoSchedule taint alone": {
			objs: []client.Object{
				makeCluster("member1").down().taint(notReadyKey, corev1.TaintEffectNoSchedule, 0).obj(),
				makeCluster("member2").obj(),
				makeBinding("nginx").clusters("member1").obj(),
			},
		},
		"every cluster not Ready: the control plane is cut off": {
			objs: []client.Object{
				makeCluster("member1").down().notReadyNoExecute(0).obj(),
				makeCluster("member2").down().notReadyNoExecute(0).obj(),
				makeCluster("member3").ready(metav1.ConditionUnknown).notReadyNoExecute(0).obj(),
				makeBinding("nginx").clusters("member1", "member2").obj(),
			},
			wantRequeue: stormGuardHoldRecheck,
		},
		"three of five down, a small group: held": {
			objs: []client.Object{
				makeCluster("member1").down().notReadyNoExecute(0).obj(),
				makeCluster("member2").down().notReadyNoExecute(0).obj(),
				makeCluster("member3").down().notReadyNoExecute(0).obj(),
				makeCluster("member4").obj(),
				makeCluster("member5").obj(),
				makeBinding("nginx").clusters("member1").obj(),
			},
			wantRequeue: stormGuardHoldRecheck,
		},
		"the cluster does not exist": {
			objs: []client.Object{makeCluster("member2").obj(), makeBinding("nginx").clusters("member1").obj()},
		},
		"the tainted cluster is not scheduled (only an eviction task)": {
			objs: append(healthyFleet(), makeBinding("nginx").clusters("member2").
				task(makeTask("member1", policyv1alpha1.PurgeModeGracefully, 0)).obj()),
		},
		"gate Failover off": {
			objs:  append(healthyFleet(), makeBinding("nginx").clusters("member1").obj()),
			gates: map[string]bool{string(features.Failover): false},
		},
		"--enable-no-execute-taint-eviction=false": {
			objs:     append(healthyFleet(), makeBinding("nginx").clusters("member1").obj()),
			disabled: true,
		},
		// Its policy was deleted: no scheduler would place what an eviction
		// takes away, so the copy stays where it is.
		"no policy claims the binding any more": {
			objs: append(healthyFleet(), makeBinding("nginx").clusters("member1", "member2").released().obj()),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTaintManagerEnv(t, nil, tc.objs...)
			if tc.gates != nil {
				if err := e.tm.Gates.SetFromMap(tc.gates); err != nil {
					t.Fatal(err)
				}
			}
			e.tm.Enabled = !tc.disabled
			before := e.rb(nginx)
			res := e.reconcile(resourceBindingKind, reqFor(nginx))
			if e.writes != 0 {
				t.Errorf("writes = %d, want none", e.writes)
			}
			if diff := cmp.Diff(before, e.rb(nginx)); diff != "" {
				t.Errorf("the binding changed:\n%s", diff)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}

func TestTaintManagerPurgeModeAndState(t *testing.T) {
	cases := map[string]struct {
		binding   *workv1alpha2.ResourceBinding
		flag      policyv1alpha1.PurgeMode
		gates     map[string]bool
		wantMode  policyv1alpha1.PurgeMode
		wantState map[string]string
		wantEvent []string
	}{
		"no failover.cluster: the flag's default": {
			binding:  makeBinding("nginx").clusters("member1").obj(),
			flag:     policyv1alpha1.PurgeModeDirectly,
			wantMode: policyv1alpha1.PurgeModeDirectly,
		},
		"failover.cluster wins, old spelling normalised": {
			binding:  makeBinding("nginx").clusters("member1").clusterFailover(policyv1alpha1.PurgeModeImmediately).obj(),
			flag:     policyv1alpha1.PurgeModeGracefully,
			wantMode: policyv1alpha1.PurgeModeDirectly,
		},
		"failover.cluster without a mode: Gracefully": {
			binding:  makeBinding("nginx").clusters("member1").clusterFailover("").obj(),
			flag:     policyv1alpha1.PurgeModeDirectly,
			wantMode: policyv1alpha1.PurgeModeGracefully,
		},
		"state preserved from the failed copy": {
			binding: makeBinding("nginx").clusters("member1").clusterFailover(policyv1alpha1.PurgeModeDirectly, rule("jobid", "{.jobID}")).
				reflected("member1", map[string]interface{}{"jobID": "abc"}).obj(),
			wantMode:  policyv1alpha1.PurgeModeDirectly,
			wantState: map[string]string{"jobid": "abc"},
		},
		"state that cannot be captured does not block": {
			binding:   makeBinding("nginx").clusters("member1").clusterFailover(policyv1alpha1.PurgeModeDirectly, rule("jobid", "{.jobID}")).obj(),
			wantMode:  policyv1alpha1.PurgeModeDirectly,
			wantEvent: []string{"Warning", EventReasonStatePreservationFailed, "member1"},
		},
		"StatefulFailoverInjection off: no state": {
			binding: makeBinding("nginx").clusters("member1").clusterFailover(policyv1alpha1.PurgeModeDirectly, rule("jobid", "{.jobID}")).
				reflected("member1", map[string]interface{}{"jobID": "abc"}).obj(),
			gates:    map[string]bool{string(features.StatefulFailoverInjection): false},
			wantMode: policyv1alpha1.PurgeModeDirectly,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTaintManagerEnv(t, nil, append(healthyFleet(), tc.binding)...)
			e.tm.DefaultPurgeMode = tc.flag
			if tc.gates != nil {
				if err := e.tm.Gates.SetFromMap(tc.gates); err != nil {
					t.Fatal(err)
				}
			}
			e.reconcile(resourceBindingKind, reqFor(nginx))
			tasks := e.rb(nginx).Spec.GracefulEvictionTasks
			if len(tasks) != 1 {
				t.Fatalf("tasks = %+v, want one", tasks)
			}
			if tasks[0].PurgeMode != tc.wantMode {
				t.Errorf("purgeMode = %q, want %q", tasks[0].PurgeMode, tc.wantMode)
			}
			if diff := cmp.Diff(tc.wantState, tasks[0].PreservedLabelState); diff != "" {
				t.Errorf("preservedLabelState (-want +got):\n%s", diff)
			}
			if tc.wantEvent != nil && !containsEvent(e.events(), tc.wantEvent...) {
				t.Errorf("no event with %v", tc.wantEvent)
			}
		})
	}
}

func TestTaintManagerClusterResourceBinding(t *testing.T) {
	crb := &workv1alpha2.ClusterResourceBinding{}
	crb.Name = "ns-team"
	crb.Generation = 1
	crb.Labels = map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cpp-id"}
	crb.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "team"}
	crb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1"}, {Name: "member3"}}
	e := newTaintManagerEnv(t, nil, append(healthyFleet(), crb)...)
	e.reconcile(clusterResourceBindingKind, ctrl.Request{NamespacedName: types.NamespacedName{Name: "ns-team"}})
	var got workv1alpha2.ClusterResourceBinding
	if err := e.client.Get(context.Background(), types.NamespacedName{Name: "ns-team"}, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"member3"}, clusterNames(got.Spec.Clusters)); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if len(got.Spec.GracefulEvictionTasks) != 1 || got.Spec.GracefulEvictionTasks[0].Producer != workv1alpha2.EvictionProducerTaintManager {
		t.Errorf("tasks = %+v", got.Spec.GracefulEvictionTasks)
	}
}

func TestTaintManagerWriteErrors(t *testing.T) {
	cases := map[string]struct {
		err         error
		wantErr     bool
		wantRequeue time.Duration
		wantEvent   bool
	}{
		"conflict: re-read soon": {
			err:         apierrors.NewConflict(schema.GroupResource{Group: "work.karmada.io", Resource: "resourcebindings"}, nginx, errors.New("changed")),
			wantRequeue: conflictRetry,
		},
		"other error: event and error": {
			err:       errors.New("boom"),
			wantErr:   true,
			wantEvent: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTaintManagerEnv(t, tc.err, append(healthyFleet(), makeBinding("nginx").clusters("member1").obj())...)
			res, err := e.tm.reconcile(context.Background(), resourceBindingKind, reqFor(nginx))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %t", err, tc.wantErr)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			if got := containsEvent(e.events(), "Warning", EventReasonEvictionFailed, "member1"); got != tc.wantEvent {
				t.Errorf("EvictWorkloadFromClusterFailed event = %t, want %t", got, tc.wantEvent)
			}
		})
	}
}

// Many bindings on a failed cluster are paced by the storm guard.
func TestTaintManagerIsPaced(t *testing.T) {
	objs := healthyFleet()
	names := []string{"a", "b", "c"}
	for _, n := range names {
		objs = append(objs, makeBinding(n).clusters("member1").obj())
	}
	e := newTaintManagerEnv(t, nil, objs...)
	cfg := defaultGuardConfig
	cfg.Rate = 1
	guard, err := NewStormGuard(e.client, nil, e.clock, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.tm.Guard = guard

	var requeues []time.Duration
	for _, n := range names {
		requeues = append(requeues, e.reconcile(resourceBindingKind, reqFor(n+"-deployment")).RequeueAfter)
	}
	if diff := cmp.Diff([]time.Duration{0, time.Second, 2 * time.Second}, requeues); diff != "" {
		t.Errorf("requeues (-want +got):\n%s", diff)
	}
	if e.writes != 1 {
		t.Errorf("writes = %d, want 1 (one eviction per second)", e.writes)
	}
	e.clock.Step(time.Second)
	e.reconcile(resourceBindingKind, reqFor("b-deployment"))
	if len(e.rb("b-deployment").Spec.Clusters) != 0 {
		t.Error("b was not evicted at its slot")
	}
}

func TestBindingsOnCluster(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	crb := &workv1alpha2.ClusterResourceBinding{}
	crb.Name = "crb"
	crb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1"}}
	c := fake.NewClientBuilder().WithScheme(s).
		WithObjects(makeBinding("a").clusters("member1", "member2").obj(), makeBinding("b").clusters("member2").obj(),
			makeBinding("c").clusters("member3").task(makeTask("member1", policyv1alpha1.PurgeModeGracefully, 0)).obj(), crb).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexBindingsByScheduledCluster, scheduledClusterValues).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, IndexBindingsByScheduledCluster, scheduledClusterValues).
		Build()
	tm := &TaintManager{Client: c}
	names := func(k bindingKind, cluster string) []string {
		var out []string
		for _, r := range tm.bindingsOnCluster(context.Background(), k, cluster) {
			out = append(out, r.String())
		}
		return out
	}
	if diff := cmp.Diff([]string{"default/a-deployment"}, names(resourceBindingKind, "member1")); diff != "" {
		t.Errorf("RBs on member1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"default/a-deployment", "default/b-deployment"}, names(resourceBindingKind, "member2")); diff != "" {
		t.Errorf("RBs on member2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/crb"}, names(clusterResourceBindingKind, "member1")); diff != "" {
		t.Errorf("CRBs on member1 (-want +got):\n%s", diff)
	}
}

func TestTaintManagerPredicates(t *testing.T) {
	tainted := makeCluster("m1").notReadyNoExecute(0).obj()
	plain := makeCluster("m1").obj()
	noSchedule := makeCluster("m1").taint(notReadyKey, corev1.TaintEffectNoSchedule, 0).obj()
	downTainted := makeCluster("m1").down().notReadyNoExecute(0).obj()
	p := noExecuteTaintsChanged()
	cases := map[string]struct {
		got, want bool
	}{
		"create tainted":                      {got: p.Create(createEvent(tainted)), want: true},
		"create untainted":                    {got: p.Create(createEvent(plain)), want: false},
		"NoExecute added":                     {got: p.Update(updateEvent(plain, tainted)), want: true},
		"NoExecute removed":                   {got: p.Update(updateEvent(tainted, plain)), want: true},
		"NoSchedule added":                    {got: p.Update(updateEvent(plain, noSchedule)), want: false},
		"status change, same NoExecute taint": {got: p.Update(updateEvent(tainted, downTainted)), want: false},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: %t, want %t", name, tc.got, tc.want)
		}
	}
}

func TestTaintManagerSetupWithManager(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	// The index needs a REST mapper; there is no API server to discover.
	mapper := func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
		m := meta.NewDefaultRESTMapper(nil)
		m.Add(workv1alpha2.SchemeGroupVersion.WithKind("ResourceBinding"), meta.RESTScopeNamespace)
		m.Add(workv1alpha2.SchemeGroupVersion.WithKind("ClusterResourceBinding"), meta.RESTScopeRoot)
		m.Add(clusterv1alpha1.SchemeGroupVersion.WithKind("Cluster"), meta.RESTScopeRoot)
		return m, nil
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{Scheme: s, MapperProvider: mapper, Metrics: metricsserver.Options{BindAddress: "0"}, Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	o := NewClusterFailoverOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	guard, err := NewStormGuard(mgr.GetClient(), rec, clocktesting.NewFakeClock(t0), o.StormGuardConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	tm := &TaintManager{Client: mgr.GetClient(), Recorder: rec, Clock: clocktesting.NewFakeClock(t0), Gates: features.New(),
		Guard: guard, Enabled: o.EnableNoExecuteTaintEviction, DefaultPurgeMode: o.PurgeMode(), MaxConcurrentReconciles: 4}
	if err := tm.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
}

func TestClusterFailoverOptions(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr bool
		check   func(*ClusterFailoverOptions) bool
	}{
		"defaults": {check: func(o *ClusterFailoverOptions) bool {
			return o.EnableNoExecuteTaintEviction && o.ResourceEvictionRate == 50 && o.PurgeMode() == policyv1alpha1.PurgeModeGracefully &&
				o.SecondaryResourceEvictionRate == 1 && o.UnhealthyClusterThreshold == 0.55 && o.LargeClusterNumThreshold == 10
		}},
		"Karmada's flags": {
			args: []string{"--enable-no-execute-taint-eviction=false", "--no-execute-taint-eviction-purge-mode=Immediately", "--resource-eviction-rate=0.5"},
			check: func(o *ClusterFailoverOptions) bool {
				return !o.EnableNoExecuteTaintEviction && o.PurgeMode() == policyv1alpha1.PurgeModeDirectly && o.ResourceEvictionRate == 0.5
			},
		},
		"storm-guard flags": {
			args: []string{"--secondary-resource-eviction-rate=0.1", "--unhealthy-cluster-threshold=0.3", "--large-cluster-num-threshold=50"},
			check: func(o *ClusterFailoverOptions) bool {
				c := o.StormGuardConfig()
				return c.SecondaryRate == 0.1 && c.UnhealthyThreshold == 0.3 && c.LargeGroupThreshold == 50 && c.Rate == 50
			},
		},
		"graceful eviction timeout": {
			args:  []string{"--graceful-eviction-timeout=30s"},
			check: func(o *ClusterFailoverOptions) bool { return o.GracefulEvictionTimeout == 30*time.Second },
		},
		"default graceful eviction timeout is Karmada's": {
			check: func(o *ClusterFailoverOptions) bool { return o.GracefulEvictionTimeout == 10*time.Minute },
		},
		"graceful eviction hold": {
			check: func(o *ClusterFailoverOptions) bool { return o.GracefulEvictionHold == time.Minute },
		},
		"graceful eviction hold off": {
			args: []string{"--graceful-eviction-hold=0s"},
			check: func(o *ClusterFailoverOptions) bool {
				return o.GracefulEvictionHold == 0 && NewWave(o.GracefulEvictionHold) == nil
			},
		},
		"failover events burst by default": {
			check: func(o *ClusterFailoverOptions) bool { return o.FailoverEventBurst == eventbudget.DefaultBurst },
		},
		"failover events every one": {
			args:  []string{"--failover-event-burst=0"},
			check: func(o *ClusterFailoverOptions) bool { return o.FailoverEventBurst == 0 },
		},
		"negative failover events burst":    {args: []string{"--failover-event-burst=-1"}, wantErr: true},
		"negative graceful eviction hold":   {args: []string{"--graceful-eviction-hold=-1s"}, wantErr: true},
		"zero graceful eviction timeout":    {args: []string{"--graceful-eviction-timeout=0s"}, wantErr: true},
		"Never is not a cluster purge mode": {args: []string{"--no-execute-taint-eviction-purge-mode=Never"}, wantErr: true},
		"negative rate":                     {args: []string{"--resource-eviction-rate=-1"}, wantErr: true},
		"threshold above 1":                 {args: []string{"--unhealthy-cluster-threshold=1.5"}, wantErr: true},
		"zero threshold":                    {args: []string{"--unhealthy-cluster-threshold=0"}, wantErr: true},
		"NaN threshold":                     {args: []string{"--unhealthy-cluster-threshold=NaN"}, wantErr: true},
		"NaN rate":                          {args: []string{"--resource-eviction-rate=NaN"}, wantErr: true},
		"infinite rate":                     {args: []string{"--resource-eviction-rate=+Inf"}, wantErr: true},
		"NaN secondary rate":                {args: []string{"--secondary-resource-eviction-rate=NaN"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewClusterFailoverOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Validate = %v, wantErr %t", err, tc.wantErr)
			}
			if tc.check != nil && !tc.check(o) {
				t.Errorf("options = %+v", o)
			}
		})
	}
}

// A margin shorter than a fenced copy may take to stop (a scan, the
// ScaleToZero retry, a pod's default termination) is warned; the default
// covers it, and the clocks.
func TestFencingStopMarginShorterThanACopysStopIsWarned(t *testing.T) {
	if DefaultFencingStopMargin <= fencing.StopWithin {
		t.Errorf("the default margin %s leaves nothing for the clocks past the %s a copy may take to stop", DefaultFencingStopMargin, fencing.StopWithin)
	}
	for _, tc := range []struct {
		margin string
		warned bool
	}{
		{margin: "60s"},
		{margin: "45s"},
		{margin: "44s", warned: true},
		{margin: "30s", warned: true},
		{margin: "0s", warned: true},
	} {
		o := NewClusterFailoverOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--fencing-stop-margin=" + tc.margin}); err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("--fencing-stop-margin=%s: Validate = %v; a short margin is allowed", tc.margin, err)
		}
		w := o.Warnings()
		if got := len(w) > 0; got != tc.warned {
			t.Errorf("--fencing-stop-margin=%s: warnings %q, want warned %t", tc.margin, w, tc.warned)
		}
		if tc.warned && !strings.Contains(w[0], fencing.ScaleRetry.String()) {
			t.Errorf("--fencing-stop-margin=%s: warning %q does not name the agent's retry %s", tc.margin, w[0], fencing.ScaleRetry)
		}
	}
	if w := NewClusterFailoverOptions().Warnings(); len(w) != 0 {
		t.Errorf("defaults warned: %q", w)
	}
}

func createEvent(o client.Object) event.CreateEvent { return event.CreateEvent{Object: o} }

func updateEvent(o, n client.Object) event.UpdateEvent {
	return event.UpdateEvent{ObjectOld: o, ObjectNew: n}
}
