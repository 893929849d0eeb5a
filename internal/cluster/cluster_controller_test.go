package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
)

func newClusterFixture(t *testing.T, now time.Time, objs ...client.Object) (*ClusterReconciler, client.Client, *writeCounter) {
	t.Helper()
	w := &writeCounter{}
	c := newFakeClient(t).WithObjects(objs...).WithInterceptorFuncs(w.funcs()).Build()
	return &ClusterReconciler{
		Client: c, APIReader: c, Clock: clocktesting.NewFakePassiveClock(now), DeletionGracePeriod: time.Minute,
	}, c, w
}

func reconcileCluster(t *testing.T, r *ClusterReconciler, name string) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res
}

func work(ns, name string, finalizers ...string) *workv1alpha1.Work {
	return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers}}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestClusterControllerAddsFinalizerAndNamespace(t *testing.T) {
	r, c, w := newClusterFixture(t, t0, makeCluster("m1").Obj())
	reconcileCluster(t, r, "m1")
	var got clusterv1alpha1.Cluster
	if err := c.Get(context.Background(), types.NamespacedName{Name: "m1"}, &got); err != nil {
		t.Fatal(err)
	}
	if !controllerutil.ContainsFinalizer(&got, clusterv1alpha1.ClusterControllerFinalizer) {
		t.Errorf("finalizer missing: %v", got.Finalizers)
	}
	if err := c.Get(context.Background(), types.NamespacedName{Name: "karmada-es-m1"}, &corev1.Namespace{}); err != nil {
		t.Errorf("execution namespace: %v", err)
	}
	writes := w.n
	reconcileCluster(t, r, "m1")
	if w.n != writes {
		t.Errorf("second reconcile wrote %d times, want none", w.n-writes)
	}
}

func TestClusterControllerWaitsForTerminatingNamespace(t *testing.T) {
	old := namespace("karmada-es-m1")
	old.DeletionTimestamp = &metav1.Time{Time: t0}
	old.Finalizers = []string{"kubernetes"}
	r, _, _ := newClusterFixture(t, t0, makeCluster("m1").Finalizer().Obj(), old)
	if res := reconcileCluster(t, r, "m1"); res.RequeueAfter == 0 {
		t.Errorf("want a requeue while the old namespace terminates")
	}
}

func TestClusterControllerDeletion(t *testing.T) {
	readyCluster := func() *clusterv1alpha1.Cluster {
		return makeCluster("m1").Finalizer().Deleting(t0).Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj()
	}
	cases := map[string]struct {
		cluster       *clusterv1alpha1.Cluster
		objs          []client.Object
		now           time.Time
		wantReleased  bool
		wantWorksGone bool
	}{
		"no works: released at once": {
			cluster: readyCluster(), objs: []client.Object{namespace("karmada-es-m1")}, now: t0,
			wantReleased: true, wantWorksGone: true,
		},
		"works without finalizers are deleted, then released": {
			cluster: readyCluster(), objs: []client.Object{namespace("karmada-es-m1"), work("karmada-es-m1", "w1")}, now: t0,
			wantReleased: true, wantWorksGone: true,
		},
		"Ready member cleaning up: wait": {
			cluster: readyCluster(), objs: []client.Object{namespace("karmada-es-m1"), work("karmada-es-m1", "w1", "execution")}, now: t0.Add(10 * time.Second),
			wantReleased: false,
		},
		"Ready member past the grace period: released": {
			cluster: readyCluster(), objs: []client.Object{namespace("karmada-es-m1"), work("karmada-es-m1", "w1", "execution")}, now: t0.Add(time.Minute),
			wantReleased: true,
		},
		"unready member is not waited for": {
			cluster: makeCluster("m1").Finalizer().Deleting(t0).Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, t0).Obj(),
			objs:    []client.Object{namespace("karmada-es-m1"), work("karmada-es-m1", "w1", "execution")}, now: t0,
			wantReleased: true,
		},
		"no namespace at all": {
			cluster: readyCluster(), now: t0, wantReleased: true, wantWorksGone: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, c, _ := newClusterFixture(t, tc.now, append([]client.Object{tc.cluster}, tc.objs...)...)
			res := reconcileCluster(t, r, "m1")
			ctx := context.Background()
			var got clusterv1alpha1.Cluster
			err := c.Get(ctx, types.NamespacedName{Name: "m1"}, &got)
			released := apierrors.IsNotFound(err) // the fake client deletes once finalizers are gone
			if released != tc.wantReleased {
				t.Errorf("released = %t (err %v, finalizers %v), want %t", released, err, got.Finalizers, tc.wantReleased)
			}
			if !tc.wantReleased && res.RequeueAfter == 0 {
				t.Errorf("waiting without a requeue")
			}
			var ns corev1.Namespace
			if err := c.Get(ctx, types.NamespacedName{Name: "karmada-es-m1"}, &ns); err == nil && ns.DeletionTimestamp.IsZero() {
				t.Errorf("execution namespace not deleted")
			}
			var works workv1alpha1.WorkList
			if err := c.List(ctx, &works, client.InNamespace("karmada-es-m1")); err != nil {
				t.Fatal(err)
			}
			for _, w := range works.Items {
				if w.DeletionTimestamp.IsZero() {
					t.Errorf("work %s not deleted", w.Name)
				}
			}
			if tc.wantWorksGone && len(works.Items) > 0 {
				t.Errorf("%d works left", len(works.Items))
			}
		})
	}
}

func TestReleaseCluster(t *testing.T) {
	cases := map[string]struct {
		worksRemain, ready bool
		now                time.Time
		wantRelease        bool
		wantWait           time.Duration
	}{
		"nothing left":                {worksRemain: false, ready: true, now: t0, wantRelease: true},
		"member down":                 {worksRemain: true, ready: false, now: t0, wantRelease: true},
		"member Ready, just deleted":  {worksRemain: true, ready: true, now: t0, wantWait: deletionPollInterval},
		"member Ready, 2s before end": {worksRemain: true, ready: true, now: t0.Add(58 * time.Second), wantWait: 2 * time.Second},
		"member Ready, grace over":    {worksRemain: true, ready: true, now: t0.Add(time.Minute), wantRelease: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			release, wait := releaseCluster(tc.worksRemain, tc.ready, t0, tc.now, time.Minute)
			if release != tc.wantRelease || wait != tc.wantWait {
				t.Errorf("got (%t, %s), want (%t, %s)", release, wait, tc.wantRelease, tc.wantWait)
			}
		})
	}
}

func TestClusterControllerConflictIsRetriedQuietly(t *testing.T) {
	c := newFakeClient(t).WithObjects(makeCluster("m1").Obj()).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return apierrors.NewConflict(clusterv1alpha1.SchemeGroupVersion.WithResource("clusters").GroupResource(), "m1", nil)
		},
	}).Build()
	r := &ClusterReconciler{Client: c, APIReader: c, Clock: clocktesting.NewFakePassiveClock(t0)}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}})
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("got (%+v, %v), want a quiet requeue", res, err)
	}
}
