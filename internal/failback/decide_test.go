package failback

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

// One case per rule of Decide, the must-not cases first.
func TestDecide(t *testing.T) {
	stable := func() []*clusterv1alpha1.Cluster {
		return []*clusterv1alpha1.Cluster{readySince("member1", -600), readySince("member2", -7200)}
	}
	with := func(cs ...*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster { return cs }
	cases := map[string]struct {
		binding  *binding
		mutate   func(b *workv1alpha2.ResourceBinding)
		clusters []*clusterv1alpha1.Cluster
		inFlight bool
		released bool
		// scheduler is the scheduler name the controller runs with.
		scheduler string
		want      Verdict
		wantAt    time.Time
		reason    string
	}{
		"moves back once member1 has been Ready for the whole window": {
			binding: makeBinding("a"), clusters: stable(), want: Move,
		},
		"rule 1, must not: no failback configured": {
			binding: makeBinding("a").noFailback(), clusters: stable(), want: Stay, reason: "not configured",
		},
		"rule 1, must not: its scheduling is suspended, so no scheduler would take the request": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "scheduling is suspended",
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
			},
		},
		"rule 1, must not: another scheduler schedules it": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "not the scheduler",
			mutate: func(b *workv1alpha2.ResourceBinding) { b.Spec.SchedulerName = "other-scheduler" },
		},
		"rule 1, must not: no scheduler name means the default scheduler, not the one configured": {
			binding: makeBinding("a"), clusters: stable(), scheduler: "edge-scheduler", want: Stay, reason: "not the scheduler",
		},
		"rule 1: a binding of the scheduler configured": {
			binding: makeBinding("a"), clusters: stable(), scheduler: "edge-scheduler", want: Move,
			mutate: func(b *workv1alpha2.ResourceBinding) { b.Spec.SchedulerName = "edge-scheduler" },
		},
		"rule 1, must not: no policy claims it any more": {
			binding: makeBinding("a"), clusters: stable(), released: true, want: Stay, reason: "no policy claims it",
		},
		"rule 2, must not: an eviction task is open": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "eviction is in flight",
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member3", Reason: "TaintUntolerated"}}
			},
		},
		"rule 2, must not: a failback of it is in flight": {
			binding: makeBinding("a"), clusters: stable(), inFlight: true, want: Stay, reason: "failback is in flight",
		},
		"rule 2, must not: a requested schedule is pending": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "schedule is pending",
			mutate: func(b *workv1alpha2.ResourceBinding) {
				t := metav1.NewTime(at(-10))
				b.Spec.RescheduleTriggeredAt = &t
			},
		},
		"rule 3, must not: already on member1": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "no cluster",
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
			},
		},
		"rule 3, must not: it never failed over": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "no cluster",
			mutate: func(b *workv1alpha2.ResourceBinding) { b.Status.FailoverHistory = nil },
		},
		"rule 3, must not: it left member1 for an application failure": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "left member1 after an application failure, and failback.afterApplicationFailover is off",
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Status.FailoverHistory[0].Reason = workv1alpha2.EvictionReasonApplicationFailure
			},
		},
		"rule 3: an application failure with afterApplicationFailover": {
			binding: makeBinding("a"), clusters: stable(), want: Move,
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Status.FailoverHistory[0].Reason = workv1alpha2.EvictionReasonApplicationFailure
				b.Spec.Failover.Failback.AfterApplicationFailover = true
			},
		},
		"rule 3, must not: a rebalance moved it away from member1 after the failover": {
			binding: makeBinding("a").history("member1", workv1alpha2.EvictionReasonRebalance, -60), clusters: stable(), want: Stay, reason: "no cluster",
		},
		"rule 4, must not: a failback to member1 was abandoned within the window": {
			binding: makeBinding("a").history("member1", workv1alpha2.EvictionReasonFailbackAbandoned, -100), clusters: stable(),
			want: Wait, wantAt: at(500),
		},
		"rule 4: an abandoned failback older than the window": {
			binding: makeBinding("a").history("member1", workv1alpha2.EvictionReasonFailbackAbandoned, -600), clusters: stable(), want: Move,
		},
		"rule 5, must not: member1 is gone": {
			binding: makeBinding("a"), clusters: with(readySince("member2", -7200)), want: Stay, reason: "gone",
		},
		"rule 5, must not: member1 is not Ready": {
			binding: makeBinding("a"), clusters: with(notReady("member1"), readySince("member2", -7200)), want: Stay, reason: "not Ready",
		},
		"rule 5, must not: member1 is being deleted": {
			binding: makeBinding("a"), clusters: with(st.MakeCluster("member1").Deleting().Obj(), readySince("member2", -7200)), want: Stay, reason: "gone",
		},
		"rule 5, must not: member1 has a NoExecute taint, even a tolerated one": {
			binding: makeBinding("a"), clusters: with(tainted(readySince("member1", -600), "maintenance", corev1.TaintEffectNoExecute), readySince("member2", -7200)),
			want: Stay, reason: "NoExecute",
		},
		"rule 5, must not: member1 is flapping": {
			binding: makeBinding("a"), clusters: with(tainted(readySince("member1", -600), clusterv1alpha1.TaintClusterFlapping, corev1.TaintEffectNoSchedule), readySince("member2", -7200)),
			want: Stay, reason: "flapping",
		},
		"rule 5, must not: member1 Ready for less than the window: wait until it ends": {
			binding: makeBinding("a"), clusters: with(readySince("member1", -599), readySince("member2", -7200)), want: Wait, wantAt: at(1),
		},
		"rule 5, must not: a flap restarts the window": {
			binding: makeBinding("a"), clusters: with(readySince("member1", -5), readySince("member2", -7200)), want: Wait, wantAt: at(595),
		},
		"rule 5, must not: it left member1 (an application failure) less than a window ago, member1 Ready all along": {
			binding: makeBinding("a"), clusters: stable(), want: Wait, wantAt: at(500),
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Status.FailoverHistory[0].Reason = workv1alpha2.EvictionReasonApplicationFailure
				b.Status.FailoverHistory[0].Time = metav1.NewTime(at(-100))
				b.Spec.Failover.Failback.AfterApplicationFailover = true
			},
		},
		// A maintenance taint taken off: Ready never changed, and the
		// workload left long ago; the window counts from the removal.
		"rule 5, must not: member1's NoExecute taint removed less than a window ago": {
			binding: makeBinding("a"), clusters: with(untaintedAt(readySince("member1", -7200), -100), readySince("member2", -7200)),
			want: Wait, wantAt: at(500), reason: "NoExecute taint was removed only at",
		},
		"rule 5, must not: a removal not recorded yet counts from now": {
			binding: makeBinding("a"), clusters: with(func() *clusterv1alpha1.Cluster {
				c := readySince("member1", -7200)
				c.Annotations = map[string]string{clusterv1alpha1.AnnotationNoExecuteCleared: clusterv1alpha1.NoExecutePending}
				return c
			}(), readySince("member2", -7200)),
			want: Wait, wantAt: at(600),
		},
		"rule 5: a NoExecute taint removed more than a window ago": {
			binding: makeBinding("a"), clusters: with(untaintedAt(readySince("member1", -600), -600), readySince("member2", -7200)), want: Move,
		},
		"rule 5: a removal time that does not parse is left out": {
			binding: makeBinding("a"), clusters: with(func() *clusterv1alpha1.Cluster {
				c := readySince("member1", -600)
				c.Annotations = map[string]string{clusterv1alpha1.AnnotationNoExecuteCleared: "yesterday"}
				return c
			}(), readySince("member2", -7200)),
			want: Move,
		},
		"rule 6, must not: a fresh schedule would not place it on member1": {
			binding: makeBinding("a"), clusters: stable(), want: Stay, reason: "would not place it on member1",
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Spec.Placement = st.MakePlacement().ClusterNames("member2").Obj()
			},
		},
		"the default window is 600s": {
			binding: makeBinding("a"), clusters: with(readySince("member1", -599), readySince("member2", -7200)), want: Wait, wantAt: at(1),
			mutate: func(b *workv1alpha2.ResourceBinding) { b.Spec.Failover.Failback.StabilizationSeconds = nil },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			if tc.mutate != nil {
				tc.mutate(b)
			}
			orig := b.DeepCopy()
			d := Decide(Input{Spec: &b.Spec, Status: &b.Status, Clusters: tc.clusters, InFlight: tc.inFlight, Released: tc.released, SchedulerName: tc.scheduler, Now: at(0)})
			if d.Verdict != tc.want {
				t.Fatalf("verdict %s (%s), want %s", d.Verdict, d.Reason, tc.want)
			}
			if tc.want == Wait && !d.At.Equal(tc.wantAt) {
				t.Errorf("wait until %s, want %s", d.At, tc.wantAt)
			}
			if tc.want == Move && (d.Cluster != "member1" || !d.ReadySince.Equal(at(-600))) {
				t.Errorf("move to %s, Ready since %s", d.Cluster, d.ReadySince)
			}
			if tc.reason != "" && !contains(d.Reason, tc.reason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tc.reason)
			}
			// mayMove, the controller's shortcut, never refuses what
			// Decide would not refuse for the same reason.
			if !tc.inFlight && !tc.released && !mayMove(&b.Spec, &b.Status, tc.scheduler) && d.Verdict != Stay {
				t.Errorf("mayMove refused a %s", d.Verdict)
			}
			if !equalBinding(b, orig) {
				t.Error("the binding was modified")
			}
		})
	}
}
