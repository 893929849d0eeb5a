package failover

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

func TestKeepWorkFor(t *testing.T) {
	for name, tc := range map[string]struct {
		binding *bindingWrapper
		want    bool
	}{
		"no task: orphan, delete": {
			binding: makeBinding("a").clusters("member1"),
		},
		"Gracefully: keep": {
			binding: makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)),
			want:    true,
		},
		"Graciously (old spelling): keep": {
			binding: makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeGraciously, 0)),
			want:    true,
		},
		"Never: keep": {
			binding: makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeNever, 0)),
			want:    true,
		},
		"Never confirmed by the user: delete": {
			binding: makeBinding("a").clusters("member1").task(withSuppress(makeTask("member2", policyv1alpha1.PurgeModeNever, 0), ptr.To(false))),
		},
		"Directly: delete first": {
			binding: makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0)),
		},
		"Immediately (old spelling): delete first": {
			binding: makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeImmediately, 0)),
		},
		"Directly with no target: keep the last copy": {
			binding: makeBinding("a").task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0)),
			want:    true,
		},
		"Directly, Divided, the evicted share not placed: keep its copy": {
			binding: divided(4, makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0))),
			want:    true,
		},
		"Directly, Divided, the evicted share placed: delete first": {
			binding: divided(4, makeBinding("a").clusters("member1", "member3").task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0))),
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			if got := NewHooks(nil).KeepWorkFor(&b.Spec, "member2"); got != tc.want {
				t.Errorf("KeepWorkFor = %t, want %t", got, tc.want)
			}
		})
	}
}

// A kept copy follows the template while it is the workload, or its
// share: nothing placed instead, or the scheduler failed to place what was
// evicted while the other clusters keep their shares. With a replacement
// placed it is left as it is.
func TestRenderKeptCopy(t *testing.T) {
	divided := func(b *bindingWrapper) *bindingWrapper {
		b.Spec.Replicas = 4
		b.Spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided}}
		return b
	}
	task := makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)
	task.Replicas = ptr.To[int32](2)
	for name, tc := range map[string]struct {
		binding      *bindingWrapper
		wantRender   bool
		wantReplicas int32
	}{
		"nothing placed instead: the workload": {
			binding: divided(makeBinding("a").task(task)), wantRender: true, wantReplicas: 2,
		},
		"the share not placed (the scheduler failed): the workload's share": {
			binding:    divided(makeBinding("a").clusters("member1").task(task)).unscheduled().withScheduled("False", workv1alpha2.BindingReasonUnschedulable, 0),
			wantRender: true, wantReplicas: 2,
		},
		"must not: the scheduler has not looked yet": {
			binding: divided(makeBinding("a").clusters("member1").task(task)).unscheduled(),
		},
		"must not: a replacement placed": {
			binding: divided(makeBinding("a").clusters("member1").task(task)),
		},
		"must not: no task for the cluster": {
			binding: divided(makeBinding("a").clusters("member1")),
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			replicas, render := NewHooks(nil).RenderKeptCopy(b.Generation, &b.Spec, &b.Status, "member2")
			if render != tc.wantRender || replicas != tc.wantReplicas {
				t.Errorf("RenderKeptCopy = %d, %t; want %d, %t", replicas, render, tc.wantReplicas, tc.wantRender)
			}
		})
	}
}

func TestBlockedClusters(t *testing.T) {
	for name, tc := range map[string]struct {
		binding *bindingWrapper
		want    []string
	}{
		"no task": {
			binding: makeBinding("a").clusters("member1"),
		},
		"Gracefully does not block": {
			binding: makeBinding("a").clusters("member3").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2")),
		},
		"Directly blocks the new clusters only": {
			binding: makeBinding("a").clusters("member1", "member3").task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member1", "member2")),
			want:    []string{"member3"},
		},
		"Directly without the placement before blocks all": {
			binding: makeBinding("a").clusters("member1", "member3").task(makeTask("member2", policyv1alpha1.PurgeModeImmediately, 0)),
			want:    []string{"member1", "member3"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			h := NewHooks(nil)
			got := h.BlockedClusters(&b.Spec)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("BlockedClusters (-want +got):\n%s", diff)
			}
			if h.HoldNewWorks(&b.Spec) != (len(tc.want) > 0) {
				t.Errorf("HoldNewWorks = %t, want %t", h.HoldNewWorks(&b.Spec), len(tc.want) > 0)
			}
		})
	}
}

func TestLabelsToInject(t *testing.T) {
	off := features.New()
	if err := off.Set("StatefulFailoverInjection=false"); err != nil {
		t.Fatal(err)
	}
	directlyTask := withState(makeTask("member1", policyv1alpha1.PurgeModeDirectly, 100, "member1"), "jobid", "aaaa")
	entry := func(from string, mode policyv1alpha1.PurgeMode, tm int, before, after []string, state string) workv1alpha2.FailoverHistoryItem {
		return workv1alpha2.FailoverHistoryItem{Time: *mt(tm), FromCluster: from, PurgeMode: mode, ClustersBefore: before, ClustersAfter: after,
			PreservedLabelState: map[string]string{"jobid": state}}
	}
	reasoned := func(h workv1alpha2.FailoverHistoryItem, reason string) workv1alpha2.FailoverHistoryItem {
		h.Reason = reason
		if h.PreservedLabelState["jobid"] == "" {
			h.PreservedLabelState = nil
		}
		return h
	}
	for name, tc := range map[string]struct {
		binding *bindingWrapper
		cluster string
		gates   *features.Gates
		want    map[string]string
	}{
		"Directly task, new cluster: inject": {
			binding: makeBinding("a").clusters("member2").task(directlyTask),
			cluster: "member2",
			want:    map[string]string{"jobid": "aaaa"},
		},
		"Immediately (old spelling): inject": {
			binding: makeBinding("a").clusters("member2").history(entry("member1", policyv1alpha1.PurgeModeImmediately, 100, []string{"member1"}, nil, "aaaa")),
			cluster: "member2",
			want:    map[string]string{"jobid": "aaaa"},
		},
		"gate off: nothing": {
			binding: makeBinding("a").clusters("member2").task(directlyTask),
			cluster: "member2",
			gates:   off,
		},
		"cluster scheduled before the failover: nothing": {
			binding: makeBinding("a").clusters("member2", "member3").task(withState(makeTask("member1", policyv1alpha1.PurgeModeDirectly, 100, "member1", "member3"), "jobid", "aaaa")),
			cluster: "member3",
		},
		"Gracefully: nothing (as the seed restricts)": {
			binding: makeBinding("a").clusters("member2").task(withState(makeTask("member1", policyv1alpha1.PurgeModeGracefully, 100, "member1"), "jobid", "aaaa")),
			cluster: "member2",
		},
		"task gone: the history keeps the labels": {
			binding: makeBinding("a").clusters("member2").history(entry("member1", policyv1alpha1.PurgeModeDirectly, 100, []string{"member1"}, []string{"member2"}, "aaaa")),
			cluster: "member2",
			want:    map[string]string{"jobid": "aaaa"},
		},
		"chained: the newest failover that placed the cluster wins": {
			binding: makeBinding("a").clusters("member3").
				history(entry("member1", policyv1alpha1.PurgeModeDirectly, 100, []string{"member1"}, []string{"member2"}, "aaaa")).
				history(entry("member2", policyv1alpha1.PurgeModeDirectly, 200, []string{"member2"}, []string{"member3"}, "aaaa-carried")),
			cluster: "member3",
			want:    map[string]string{"jobid": "aaaa-carried"},
		},
		"failback (Gracefully): the state captured from the copy it leaves": {
			binding: makeBinding("a").clusters("member1").
				history(entry("member1", policyv1alpha1.PurgeModeDirectly, 100, []string{"member1"}, []string{"member2"}, "old")).
				task(withReason(withState(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 200, "member2"), "jobid", "fresh"), workv1alpha2.EvictionReasonFailback)),
			cluster: "member1",
			want:    map[string]string{"jobid": "fresh"},
		},
		"failback closed: the history keeps the labels": {
			binding: makeBinding("a").clusters("member1").
				history(entry("member1", policyv1alpha1.PurgeModeGracefully, 100, []string{"member1"}, []string{"member2"}, "old")).
				history(reasoned(entry("member2", policyv1alpha1.PurgeModeGracefully, 200, []string{"member2"}, []string{"member1"}, "fresh"), workv1alpha2.EvictionReasonFailback)),
			cluster: "member1",
			want:    map[string]string{"jobid": "fresh"},
		},
		"failback with the gate off: nothing": {
			binding: makeBinding("a").clusters("member1").
				task(withReason(withState(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 200, "member2"), "jobid", "fresh"), workv1alpha2.EvictionReasonFailback)),
			cluster: "member1",
			gates:   off,
		},
		"rebalance (Gracefully, no state captured): nothing": {
			binding: makeBinding("a").clusters("member1").
				task(withReason(withState(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 200, "member2"), "jobid", "x"), workv1alpha2.EvictionReasonRebalance)),
			cluster: "member1",
		},
		// Must not: an abandoned failback gives the workload back to the
		// copy that was running; that copy keeps the labels it was given
		// when it was placed, or it would be rolled out again.
		"abandoned failback: the current copy keeps its labels": {
			binding: makeBinding("a").clusters("member2").
				history(entry("member1", policyv1alpha1.PurgeModeDirectly, 100, []string{"member1"}, []string{"member2"}, "one")).
				history(reasoned(entry("member2", policyv1alpha1.PurgeModeGracefully, 200, []string{"member2"}, []string{"member1"}, "two"), workv1alpha2.EvictionReasonFailback)).
				history(reasoned(entry("member1", policyv1alpha1.PurgeModeGracefully, 260, []string{"member1"}, []string{"member2"}, ""), workv1alpha2.EvictionReasonFailbackAbandoned)),
			cluster: "member2",
			want:    map[string]string{"jobid": "one"},
		},
		"a cluster placed by an older failover is not given a newer state": {
			binding: makeBinding("a").clusters("member2", "member4").
				history(entry("member1", policyv1alpha1.PurgeModeDirectly, 100, []string{"member1"}, []string{"member2"}, "one")).
				history(entry("member3", policyv1alpha1.PurgeModeDirectly, 200, []string{"member2", "member3"}, []string{"member2", "member4"}, "three")),
			cluster: "member2",
			want:    map[string]string{"jobid": "one"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			got := NewHooks(tc.gates).LabelsToInject(&b.Spec, &b.Status, tc.cluster)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LabelsToInject (-want +got):\n%s", diff)
			}
		})
	}
}
