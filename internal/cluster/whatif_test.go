package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// defaultNotReadyPolicy is the ClusterTaintPolicy `lifeboat up` installs.
func defaultNotReadyPolicy() policyv1alpha1.ClusterTaintPolicy {
	return policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-default-not-ready"},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady,
				Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown}}},
			RemoveOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady,
				Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue}}},
			Taints: []policyv1alpha1.Taint{{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute}},
		},
	}
}

// healthy is a cluster Ready and passing its probes since an hour before t0.
func healthy(name string) *clusterWrapper {
	w := makeCluster(name).Ready(metav1.ConditionTrue, "ClusterReady", t0.Add(-time.Hour))
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: metav1.ConditionTrue, Reason: "ClusterReady",
		LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
	})
	return w
}

type conditionView struct {
	Status metav1.ConditionStatus
	Reason string
	Since  time.Time
}

func conditionOf(t *testing.T, c *clusterv1alpha1.Cluster, typ string) conditionView {
	t.Helper()
	cond := meta.FindStatusCondition(c.Status.Conditions, typ)
	if cond == nil {
		t.Fatalf("no %s condition: %+v", typ, c.Status.Conditions)
	}
	return conditionView{Status: cond.Status, Reason: cond.Reason, Since: cond.LastTransitionTime.Time.UTC()}
}

func TestAsFailed(t *testing.T) {
	failure := Failure{ProbesFailingSince: t0, NotReadyAt: t0.Add(30 * time.Second)}
	downSince := t0.Add(-10 * time.Minute)
	cases := map[string]struct {
		cluster    *clusterv1alpha1.Cluster
		policies   []policyv1alpha1.ClusterTaintPolicy
		wantReady  conditionView
		wantProbe  *conditionView
		wantTaints []corev1.Taint
	}{
		"a healthy cluster": {
			cluster:   healthy("member2").Obj(),
			policies:  []policyv1alpha1.ClusterTaintPolicy{defaultNotReadyPolicy()},
			wantReady: conditionView{metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, failure.NotReadyAt},
			wantProbe: &conditionView{metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, failure.ProbesFailingSince},
			wantTaints: []corev1.Taint{
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, failure.NotReadyAt),
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, failure.NotReadyAt),
			},
		},
		"without a taint policy: only the scheduling taint": {
			cluster:   healthy("member2").Obj(),
			wantReady: conditionView{metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, failure.NotReadyAt},
			wantTaints: []corev1.Taint{
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, failure.NotReadyAt),
			},
		},
		"other taints are kept": {
			cluster:   healthy("member2").Taints(taint("team", "a", corev1.TaintEffectNoSchedule)).Obj(),
			policies:  []policyv1alpha1.ClusterTaintPolicy{defaultNotReadyPolicy()},
			wantReady: conditionView{metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, failure.NotReadyAt},
			wantTaints: []corev1.Taint{
				taint("team", "a", corev1.TaintEffectNoSchedule),
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, failure.NotReadyAt),
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, failure.NotReadyAt),
			},
		},
		"already not Ready: keeps its conditions, the taints date from then": {
			cluster:   makeCluster("member2").Ready(metav1.ConditionFalse, "ClusterNotReachable", downSince).Obj(),
			policies:  []policyv1alpha1.ClusterTaintPolicy{defaultNotReadyPolicy()},
			wantReady: conditionView{metav1.ConditionFalse, "ClusterNotReachable", downSince},
			wantTaints: []corev1.Taint{
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, downSince),
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, downSince),
			},
		},
		"already not Ready and tainted: the taints keep their time": {
			cluster: makeCluster("member2").Ready(metav1.ConditionFalse, "ClusterNotReachable", downSince).
				Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, downSince.Add(time.Second))).Obj(),
			policies:  []policyv1alpha1.ClusterTaintPolicy{defaultNotReadyPolicy()},
			wantReady: conditionView{metav1.ConditionFalse, "ClusterNotReachable", downSince},
			wantTaints: []corev1.Taint{
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, downSince.Add(time.Second)),
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, downSince),
			},
		},
		"Ready Unknown: unreachable": {
			cluster:   makeCluster("member2").Ready(metav1.ConditionUnknown, "ClusterStatusUnknown", downSince).Obj(),
			policies:  []policyv1alpha1.ClusterTaintPolicy{defaultNotReadyPolicy()},
			wantReady: conditionView{metav1.ConditionUnknown, "ClusterStatusUnknown", downSince},
			wantTaints: []corev1.Taint{
				taintAt(clusterv1alpha1.TaintClusterUnreachable, "", corev1.TaintEffectNoSchedule, downSince),
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, downSince),
			},
		},
		"never probed: fails now": {
			cluster:   makeCluster("member2").Obj(),
			policies:  []policyv1alpha1.ClusterTaintPolicy{defaultNotReadyPolicy()},
			wantReady: conditionView{metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, failure.NotReadyAt},
			wantProbe: &conditionView{metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, failure.ProbesFailingSince},
			wantTaints: []corev1.Taint{
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule, failure.NotReadyAt),
				taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, failure.NotReadyAt),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.cluster.DeepCopy()
			got := AsFailed(tc.cluster, tc.policies, failure)
			if diff := cmp.Diff(in, tc.cluster); diff != "" {
				t.Errorf("the input changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReady, conditionOf(t, got, clusterv1alpha1.ClusterConditionReady)); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			if tc.wantProbe != nil {
				if diff := cmp.Diff(*tc.wantProbe, conditionOf(t, got, clusterv1alpha1.ClusterConditionProbeSucceeded)); diff != "" {
					t.Errorf("ProbeSucceeded (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantTaints, got.Spec.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithTaints(t *testing.T) {
	cases := map[string]struct {
		cluster *clusterv1alpha1.Cluster
		specs   []string
		want    []corev1.Taint
		err     string
	}{
		"NoExecute: timeAdded now": {
			cluster: healthy("member2").Obj(), specs: []string{"maintenance:NoExecute"},
			want: []corev1.Taint{taintAt("maintenance", "", corev1.TaintEffectNoExecute, t0)},
		},
		"NoSchedule: no timeAdded": {
			cluster: healthy("member2").Obj(), specs: []string{"maintenance=soon:NoSchedule"},
			want: []corev1.Taint{taint("maintenance", "soon", corev1.TaintEffectNoSchedule)},
		},
		"the same key and effect is replaced": {
			cluster: healthy("member2").Taints(taintAt("maintenance", "a", corev1.TaintEffectNoExecute, t0.Add(-time.Hour))).Obj(),
			specs:   []string{"maintenance=b:NoExecute"},
			want:    []corev1.Taint{taintAt("maintenance", "b", corev1.TaintEffectNoExecute, t0)},
		},
		"the same taint keeps its time": {
			cluster: healthy("member2").Taints(taintAt("maintenance", "a", corev1.TaintEffectNoExecute, t0.Add(-time.Hour))).Obj(),
			specs:   []string{"maintenance=a:NoExecute"},
			want:    []corev1.Taint{taintAt("maintenance", "a", corev1.TaintEffectNoExecute, t0.Add(-time.Hour))},
		},
		"a Ready cluster: the policy removes its not-ready taint": {
			cluster: healthy("member2").Taints(taintAt(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoExecute, t0.Add(-time.Hour))).Obj(),
			specs:   []string{"maintenance:NoExecute"},
			want:    []corev1.Taint{taintAt("maintenance", "", corev1.TaintEffectNoExecute, t0)},
		},
		"a bad effect":  {cluster: healthy("member2").Obj(), specs: []string{"maintenance:Sometimes"}, err: "Sometimes"},
		"no effect":     {cluster: healthy("member2").Obj(), specs: []string{"maintenance"}, err: "maintenance"},
		"a bad key":     {cluster: healthy("member2").Obj(), specs: []string{"-bad-:NoExecute"}, err: "-bad-"},
		"nothing given": {cluster: healthy("member2").Obj(), specs: nil, err: "no taint given"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.cluster.DeepCopy()
			got, err := WithTaints(tc.cluster, []policyv1alpha1.ClusterTaintPolicy{defaultNotReadyPolicy()}, tc.specs, t0)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("WithTaints: %v", err)
			}
			if diff := cmp.Diff(in, tc.cluster); diff != "" {
				t.Errorf("the input changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got.Spec.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}
