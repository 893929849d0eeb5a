package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func TestTaintController(t *testing.T) {
	user := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	now := t0.Add(time.Hour)
	cases := map[string]struct {
		cluster    *clusterv1alpha1.Cluster
		want       []corev1.Taint
		wantWrites int
	}{
		"not ready gets the not-ready taint": {
			cluster:    makeCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, t0).Taints(user).Obj(),
			want:       []corev1.Taint{user, taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, now)},
			wantWrites: 1,
		},
		"ready loses it": {
			cluster: makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).
				Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0), user).Obj(),
			want:       []corev1.Taint{user},
			wantWrites: 1,
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
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &writeCounter{}
			c := newFakeClient(t).WithObjects(tc.cluster).WithInterceptorFuncs(w.funcs()).Build()
			r := &TaintReconciler{Client: c, Clock: clocktesting.NewFakePassiveClock(now)}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}}); err != nil {
				t.Fatal(err)
			}
			if w.n != tc.wantWrites {
				t.Errorf("writes = %d, want %d", w.n, tc.wantWrites)
			}
			var got clusterv1alpha1.Cluster
			if err := c.Get(context.Background(), types.NamespacedName{Name: "m1"}, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Spec.Taints, cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}
