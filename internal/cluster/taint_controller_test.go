package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func TestTaintController(t *testing.T) {
	user := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	now := t0.Add(time.Hour)
	notReady := taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, now)
	flapping := taintAt(clusterv1alpha1.TaintClusterFlapping, "", corev1.TaintEffectNoSchedule, now)
	manual := taint("example.com/maintenance", "yes", corev1.TaintEffectNoExecute)
	stampedManual := taintAt("example.com/maintenance", "yes", corev1.TaintEffectNoExecute, now)
	policyTaint := taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, t0)
	cases := map[string]struct {
		cluster       *clusterv1alpha1.Cluster
		want          []corev1.Taint
		wantFailures  string
		wantNoExecute string
		wantWrites    int
		wantRequeue   time.Duration
		wantEvents    []string
	}{
		"not ready gets the not-ready taint and the failure is recorded": {
			cluster:      makeCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, now.Add(-5*time.Second)).Taints(user).Obj(),
			want:         []corev1.Taint{user, notReady},
			wantFailures: formatFailures([]time.Time{now.Add(-5 * time.Second)}),
			wantWrites:   1,
			wantEvents:   []string{"TaintClusterSucceed"},
		},
		"ready loses it": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).
				Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0), user).Obj(),
			want:       []corev1.Taint{user},
			wantWrites: 1,
			wantEvents: []string{"TaintClusterSucceed"},
		},
		"ready without scheduling taints: nothing written": {
			cluster:    makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Taints(user).Obj(),
			want:       []corev1.Taint{user},
			wantWrites: 0,
		},
		"deleting cluster is left alone": {
			cluster:    makeCluster("m1").Finalizer().Deleting(t0).Ready(metav1.ConditionFalse, "", t0).Obj(),
			wantWrites: 0,
		},
		"a NoExecute taint without timeAdded is stamped": {
			cluster:       makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Taints(user, manual).Obj(),
			want:          []corev1.Taint{user, stampedManual},
			wantNoExecute: clusterv1alpha1.NoExecutePending,
			wantWrites:    1,
			wantEvents:    []string{"TaintClusterSucceed", EventReasonTaintTimeAdded},
		},
		"an existing timeAdded is never changed, a NoSchedule taint never stamped": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Taints(policyTaint, taint("a", "", corev1.TaintEffectNoSchedule)).
				NoExecuteCleared(clusterv1alpha1.NoExecutePending).Obj(),
			want:          []corev1.Taint{policyTaint, taint("a", "", corev1.TaintEffectNoSchedule)},
			wantNoExecute: clusterv1alpha1.NoExecutePending,
			wantWrites:    0,
		},
		"a NoExecute taint is noted while it is there": {
			cluster:       makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Taints(policyTaint).Obj(),
			want:          []corev1.Taint{policyTaint},
			wantNoExecute: clusterv1alpha1.NoExecutePending,
			wantWrites:    1,
			wantEvents:    []string{"TaintClusterSucceed"},
		},
		"the last NoExecute taint removed: when is recorded": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Taints(user).
				NoExecuteCleared(clusterv1alpha1.NoExecutePending).Obj(),
			want:          []corev1.Taint{user},
			wantNoExecute: now.UTC().Format(time.RFC3339),
			wantWrites:    1,
			wantEvents:    []string{"TaintClusterSucceed"},
		},
		"a recorded removal stays as it is": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Taints(user).
				NoExecuteCleared(t0.Format(time.RFC3339)).Obj(),
			want:          []corev1.Taint{user},
			wantNoExecute: t0.Format(time.RFC3339),
			wantWrites:    0,
		},
		"a second failure within the window: not-ready and flapping in one write": {
			cluster: makeCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, now.Add(-time.Second)).
				Failures(now.Add(-time.Minute)).Obj(),
			want:         []corev1.Taint{notReady, flapping},
			wantFailures: formatFailures([]time.Time{now.Add(-time.Minute), now.Add(-time.Second)}),
			wantWrites:   1,
			wantEvents:   []string{"TaintClusterSucceed", EventReasonClusterFlapping},
		},
		// An agent reports False, then its Lease runs out: one outage. The
		// not-ready taint the first look wrote says the cluster was down.
		"False turning Unknown: unreachable replaces not-ready, no second failure": {
			cluster: makeCluster("m1").Ready(metav1.ConditionUnknown, clusterv1alpha1.ClusterReasonNotReachable, now.Add(-time.Second)).
				Failures(now.Add(-time.Minute)).
				Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0)).Obj(),
			want:         []corev1.Taint{taintAt(clusterv1alpha1.TaintClusterUnreachable, "", corev1.TaintEffectNoSchedule, now)},
			wantFailures: formatFailures([]time.Time{now.Add(-time.Minute)}),
			wantWrites:   1,
			wantEvents:   []string{"TaintClusterSucceed"},
		},
		// False, True, False again, the True never seen (events merged,
		// a restart): the not-ready taint is still there, but this False
		// is not the one it was put for.
		"False again with the not-ready taint: a failure not recorded yet counts": {
			cluster: makeCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, now.Add(-time.Second)).
				Failures(now.Add(-time.Minute)).
				Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0)).Obj(),
			want:         []corev1.Taint{taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0), flapping},
			wantFailures: formatFailures([]time.Time{now.Add(-time.Minute), now.Add(-time.Second)}),
			wantWrites:   1,
			wantEvents:   []string{"TaintClusterSucceed", EventReasonClusterFlapping},
		},
		"a flapping cluster recovers: not-ready goes, flapping stays, back for the rest of the hold": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, now.Add(-10*time.Second)).
				Failures(now.Add(-2*time.Minute), now.Add(-time.Minute)).
				Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0), taintAt(clusterv1alpha1.TaintClusterFlapping, "", corev1.TaintEffectNoSchedule, t0)).Obj(),
			want:         []corev1.Taint{taintAt(clusterv1alpha1.TaintClusterFlapping, "", corev1.TaintEffectNoSchedule, t0)},
			wantFailures: formatFailures([]time.Time{now.Add(-2 * time.Minute), now.Add(-time.Minute)}),
			wantWrites:   1,
			wantRequeue:  50 * time.Second,
			wantEvents:   []string{"TaintClusterSucceed"},
		},
		"the hold is over: the flapping taint goes": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, now.Add(-time.Minute)).
				Failures(now.Add(-3*time.Minute), now.Add(-2*time.Minute)).
				Taints(user, taintAt(clusterv1alpha1.TaintClusterFlapping, "", corev1.TaintEffectNoSchedule, t0)).Obj(),
			want:         []corev1.Taint{user},
			wantFailures: formatFailures([]time.Time{now.Add(-3 * time.Minute), now.Add(-2 * time.Minute)}),
			wantWrites:   1,
			wantEvents:   []string{"TaintClusterSucceed", EventReasonClusterFlappingEnded},
		},
		"forgiven (the annotation removed): the flapping taint goes": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, now.Add(-10*time.Second)).
				Taints(taintAt(clusterv1alpha1.TaintClusterFlapping, "", corev1.TaintEffectNoSchedule, t0)).Obj(),
			wantWrites: 1,
			wantEvents: []string{"TaintClusterSucceed", EventReasonClusterFlappingEnded},
		},
		"damped and nothing to change: no write, back when the hold ends": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, now.Add(-10*time.Second)).
				Failures(now.Add(-2*time.Minute), now.Add(-time.Minute)).
				Taints(taintAt(clusterv1alpha1.TaintClusterFlapping, "", corev1.TaintEffectNoSchedule, t0)).Obj(),
			want:         []corev1.Taint{taintAt(clusterv1alpha1.TaintClusterFlapping, "", corev1.TaintEffectNoSchedule, t0)},
			wantFailures: formatFailures([]time.Time{now.Add(-2 * time.Minute), now.Add(-time.Minute)}),
			wantWrites:   0,
			wantRequeue:  50 * time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &writeCounter{}
			c := newFakeClient(t).WithObjects(tc.cluster).WithInterceptorFuncs(w.funcs()).Build()
			rec := events.NewFakeRecorder(10)
			r := &TaintReconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(now), FlapDamping: testDamping}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}})
			if err != nil {
				t.Fatal(err)
			}
			if w.n != tc.wantWrites {
				t.Errorf("writes = %d, want %d", w.n, tc.wantWrites)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			var got clusterv1alpha1.Cluster
			if err := c.Get(context.Background(), types.NamespacedName{Name: "m1"}, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Spec.Taints, cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if got := got.Annotations[clusterv1alpha1.AnnotationReadyFailures]; got != tc.wantFailures {
				t.Errorf("ready-failures = %q, want %q", got, tc.wantFailures)
			}
			if got := got.Annotations[clusterv1alpha1.AnnotationNoExecuteCleared]; got != tc.wantNoExecute {
				t.Errorf("no-execute-cleared = %q, want %q", got, tc.wantNoExecute)
			}
			var reasons []string
			for len(rec.Events) > 0 {
				e := <-rec.Events
				reasons = append(reasons, strings.Fields(e)[1])
			}
			if diff := cmp.Diff(tc.wantEvents, reasons); diff != "" {
				t.Errorf("event reasons (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTaintControllerFlapMetric: the damped gauge follows the decision.
func TestTaintControllerFlapMetric(t *testing.T) {
	now := t0.Add(time.Hour)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cl := makeCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, now).Failures(now.Add(-time.Minute)).Obj()
	c := newFakeClient(t).WithObjects(cl).Build()
	r := &TaintReconciler{Client: c, Clock: clocktesting.NewFakePassiveClock(now), FlapDamping: testDamping, Metrics: m}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}}); err != nil {
		t.Fatal(err)
	}
	if v, ok := gaugeValue(t, reg, "lifeboat_cluster_flap_damped", "m1"); !ok || v != 1 {
		t.Errorf("lifeboat_cluster_flap_damped{cluster=m1} = %g (%t), want 1", v, ok)
	}
}

// gaugeValue reads the gauge or counter name{cluster=cluster} from reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, cluster string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue(), true
					}
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}
