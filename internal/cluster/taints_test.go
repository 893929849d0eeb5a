package cluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func TestSchedulingTaints(t *testing.T) {
	earlier := t0.Add(-time.Hour)
	notReady := taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, earlier)
	unreachable := taintAt(clusterv1alpha1.TaintClusterUnreachable, "", corev1.TaintEffectNoSchedule, earlier)
	notReadyNoExecute := taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, earlier)
	user := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	cordon := taint(clusterv1alpha1.TaintClusterUnschedulable, "", corev1.TaintEffectNoSchedule)
	ready := func(s metav1.ConditionStatus) *metav1.Condition {
		return &metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: s}
	}
	cases := map[string]struct {
		taints      []corev1.Taint
		ready       *metav1.Condition
		want        []corev1.Taint
		wantChanged bool
	}{
		"no Ready condition: not-ready added": {
			taints: []corev1.Taint{user}, ready: nil,
			want:        []corev1.Taint{user, taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0)},
			wantChanged: true,
		},
		"False: not-ready added, unreachable removed": {
			taints: []corev1.Taint{unreachable, user}, ready: ready(metav1.ConditionFalse),
			want:        []corev1.Taint{user, taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, t0)},
			wantChanged: true,
		},
		"False with not-ready already there: unchanged, timeAdded kept": {
			taints: []corev1.Taint{notReady, user}, ready: ready(metav1.ConditionFalse),
			want: []corev1.Taint{notReady, user},
		},
		"Unknown: unreachable added, not-ready removed": {
			taints: []corev1.Taint{notReady}, ready: ready(metav1.ConditionUnknown),
			want:        []corev1.Taint{taintAt(clusterv1alpha1.TaintClusterUnreachable, "", corev1.TaintEffectNoSchedule, t0)},
			wantChanged: true,
		},
		"True: both removed, others kept in order": {
			taints: []corev1.Taint{cordon, notReady, user, unreachable}, ready: ready(metav1.ConditionTrue),
			want:        []corev1.Taint{cordon, user},
			wantChanged: true,
		},
		"True: NoExecute not-ready of a ClusterTaintPolicy is never touched": {
			taints: []corev1.Taint{notReadyNoExecute}, ready: ready(metav1.ConditionTrue),
			want: []corev1.Taint{notReadyNoExecute},
		},
		"True without taints: nothing to do": {
			taints: nil, ready: ready(metav1.ConditionTrue), want: nil,
		},
		"True removing the only taint leaves none": {
			taints: []corev1.Taint{notReady}, ready: ready(metav1.ConditionTrue), want: nil, wantChanged: true,
		},
		"duplicate not-ready entries collapse to one": {
			taints: []corev1.Taint{notReady, notReady}, ready: ready(metav1.ConditionFalse),
			want: []corev1.Taint{notReady}, wantChanged: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, changed := schedulingTaints(tc.taints, tc.ready, t0)
			if changed != tc.wantChanged {
				t.Errorf("changed = %t, want %t", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}
