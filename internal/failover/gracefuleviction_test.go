package failover

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestTaskDone(t *testing.T) {
	const (
		healthy   = workv1alpha2.ResourceHealthy
		unhealthy = workv1alpha2.ResourceUnhealthy
	)
	graceful := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)
	directly := makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")
	never := makeTask("member2", policyv1alpha1.PurgeModeNever, 0, "member2")
	for name, tc := range map[string]struct {
		task       workv1alpha2.GracefulEvictionTask
		binding    *bindingWrapper
		now        int
		wantDone   bool
		wantReason string
	}{
		"Gracefully: replacement healthy": {
			task:       graceful,
			binding:    makeBinding("a").clusters("member1").health("member1", healthy).health("member2", unhealthy),
			now:        30,
			wantDone:   true,
			wantReason: "is healthy",
		},
		"Gracefully (old spelling Graciously): replacement healthy": {
			task:     withGrace(makeTask("member2", policyv1alpha1.PurgeModeGraciously, 0, "member2"), 600),
			binding:  makeBinding("a").clusters("member1").health("member1", healthy),
			now:      30,
			wantDone: true,
		},
		"Gracefully: replacement not healthy yet": {
			task:       graceful,
			binding:    makeBinding("a").clusters("member1").health("member1", unhealthy),
			now:        30,
			wantReason: "waiting for the replacement",
		},
		"Gracefully: replacement Unknown is not healthy": {
			task:    graceful,
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnknown),
			now:     30,
		},
		"Gracefully: healthy but the scheduler has not placed the replacement yet": {
			task:    graceful,
			binding: makeBinding("a").clusters("member1").health("member1", healthy).unscheduled(),
			now:     30,
		},
		"Gracefully: grace period expired": {
			task:       graceful,
			binding:    makeBinding("a").clusters("member1").health("member1", unhealthy),
			now:        600,
			wantDone:   true,
			wantReason: "grace period of 10m0s passed",
		},
		"Gracefully: no grace on the task uses the default (10m)": {
			task:    makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"),
			binding: makeBinding("a").clusters("member1"),
			now:     599,
		},
		"no target: never done, not even after the grace period": {
			task:       graceful,
			binding:    makeBinding("a").health("member2", unhealthy),
			now:        100000,
			wantReason: "no cluster to fail over to",
		},
		"no target, Directly: the old copy is kept too": {
			task:    directly,
			binding: makeBinding("a").health("member2", unhealthy),
			now:     100000,
		},
		"Never: kept forever": {
			task:       never,
			binding:    makeBinding("a").clusters("member1").health("member1", healthy),
			now:        100000,
			wantReason: "until a user sets suppressDeletion to false",
		},
		"Never without suppressDeletion: still kept": {
			task:    withSuppress(never, nil),
			binding: makeBinding("a").clusters("member1").health("member1", healthy),
			now:     100000,
		},
		"Never + suppressDeletion false: done at once": {
			task:       withSuppress(never, ptr.To(false)),
			binding:    makeBinding("a").clusters("member1").health("member1", unhealthy),
			now:        1,
			wantDone:   true,
			wantReason: "suppressDeletion: false",
		},
		"suppressDeletion false: done even without a target (the user decided)": {
			task:     withSuppress(never, ptr.To(false)),
			binding:  makeBinding("a"),
			now:      1,
			wantDone: true,
		},
		"Directly: old copy still reported": {
			task:       directly,
			binding:    makeBinding("a").clusters("member1").health("member2", unhealthy),
			now:        10,
			wantReason: "waiting for the old copy",
		},
		"Directly: old copy gone": {
			task:       directly,
			binding:    makeBinding("a").clusters("member1"),
			now:        10,
			wantDone:   true,
			wantReason: "was deleted",
		},
		"Directly: unreachable old cluster times out": {
			task:       directly,
			binding:    makeBinding("a").clusters("member1").health("member2", workv1alpha2.ResourceUnknown),
			now:        600,
			wantDone:   true,
			wantReason: "not confirmed deleted",
		},
		"no creation time yet": {
			task:    withGrace(workv1alpha2.GracefulEvictionTask{FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeGracefully}, 1),
			binding: makeBinding("a").clusters("member1").health("member1", healthy),
			now:     1000,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			o := observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}
			done, reason := taskDone(&tc.task, o, at(tc.now))
			if done != tc.wantDone {
				t.Errorf("done = %t (%s), want %t", done, reason, tc.wantDone)
			}
			if !strings.Contains(reason, tc.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", reason, tc.wantReason)
			}
		})
	}
}

func TestPlanTasks(t *testing.T) {
	for name, tc := range map[string]struct {
		binding     *bindingWrapper
		now         int
		wantKept    []string
		wantChanged bool
		wantRequeue time.Duration
	}{
		"nothing to do: no write, requeue at the grace deadline": {
			binding:     makeBinding("a").clusters("member1").task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0), 600)),
			now:         100,
			wantKept:    []string{"member2"},
			wantRequeue: 500 * time.Second,
		},
		"stamps a task without a creation time": {
			binding:     makeBinding("a").clusters("member1").task(workv1alpha2.GracefulEvictionTask{FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeGracefully}),
			now:         100,
			wantKept:    []string{"member2"},
			wantChanged: true,
			wantRequeue: DefaultGracePeriod,
		},
		"removes done tasks, keeps the others": {
			binding: makeBinding("a").clusters("member1").
				task(withSuppress(makeTask("member2", policyv1alpha1.PurgeModeNever, 0), ptr.To(false))).
				task(makeTask("member3", policyv1alpha1.PurgeModeNever, 0)),
			now:         100,
			wantKept:    []string{"member3"},
			wantChanged: true,
		},
		"no target: no timed requeue": {
			binding:  makeBinding("a").task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0), 600)),
			now:      100,
			wantKept: []string{"member2"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			p := planTasks(observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}, at(tc.now))
			var kept []string
			for _, k := range p.kept {
				kept = append(kept, k.FromCluster)
				if k.CreationTimestamp == nil {
					t.Errorf("task %s kept without a creation time", k.FromCluster)
				}
			}
			if strings.Join(kept, ",") != strings.Join(tc.wantKept, ",") {
				t.Errorf("kept = %v, want %v", kept, tc.wantKept)
			}
			if p.changed != tc.wantChanged {
				t.Errorf("changed = %t, want %t", p.changed, tc.wantChanged)
			}
			if p.requeueAfter != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", p.requeueAfter, tc.wantRequeue)
			}
		})
	}
}

func TestTargetCondition(t *testing.T) {
	for name, tc := range map[string]struct {
		binding    *bindingWrapper
		wantNil    bool
		wantKeep   bool
		wantStatus string
		wantMsg    string
	}{
		"no task: remove": {
			binding: makeBinding("a").clusters("member1"),
			wantNil: true,
		},
		"task and a placement: True": {
			binding:    makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)),
			wantStatus: "True",
			wantMsg:    "placed on member1",
		},
		"no placement, scheduler said no: False with its message": {
			binding: makeBinding("a").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)).
				unscheduled().noClusterFit("0/2 clusters are available: 1 cluster(s) is in the process of eviction, 1 cluster(s) didn't match the placement cluster affinity constraint."),
			wantStatus: "False",
			wantMsg:    "in the process of eviction",
		},
		"no placement, scheduler has not looked yet: unchanged": {
			binding:  makeBinding("a").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)).unscheduled(),
			wantNil:  true,
			wantKeep: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			cond, keep := targetCondition(b.Generation, &b.Spec, &b.Status)
			if keep != tc.wantKeep || (cond == nil) != tc.wantNil {
				t.Fatalf("targetCondition = %+v, keep %t; want nil=%t keep=%t", cond, keep, tc.wantNil, tc.wantKeep)
			}
			if cond == nil {
				return
			}
			if string(cond.Status) != tc.wantStatus || !strings.Contains(cond.Message, tc.wantMsg) {
				t.Errorf("condition = %s %q, want %s containing %q", cond.Status, cond.Message, tc.wantStatus, tc.wantMsg)
			}
		})
	}
}
