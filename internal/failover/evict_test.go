package failover

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestEvict(t *testing.T) {
	base := EvictOptions{
		Reason:   workv1alpha2.EvictionReasonApplicationFailure,
		Producer: workv1alpha2.EvictionProducerRBApplicationFailover,
		Now:      at(10),
	}
	for name, tc := range map[string]struct {
		spec        workv1alpha2.ResourceBindingSpec
		cluster     string
		opts        func(EvictOptions) EvictOptions
		wantChanged bool
		wantSpec    workv1alpha2.ResourceBindingSpec
	}{
		"moves the cluster into a task (Graciously normalised)": {
			spec:    makeBinding("nginx").clusters("member1", "member2").Spec,
			cluster: "member2",
			opts: func(o EvictOptions) EvictOptions {
				o.PurgeMode, o.GracePeriodSeconds = policyv1alpha1.PurgeModeGraciously, ptr.To[int32](600)
				return o
			},
			wantChanged: true,
			wantSpec: func() workv1alpha2.ResourceBindingSpec {
				s := makeBinding("nginx").clusters("member1").Spec
				tk := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 10, "member1", "member2"), 600)
				tk.Replicas = ptr.To[int32](2)
				s.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{tk}
				return s
			}(),
		},
		"Never suppresses deletion; state is copied": {
			spec:    makeBinding("nginx").clusters("member2").Spec,
			cluster: "member2",
			opts: func(o EvictOptions) EvictOptions {
				o.PurgeMode, o.PreservedLabelState, o.Message = policyv1alpha1.PurgeModeNever, map[string]string{"jobid": "abc"}, "why"
				return o
			},
			wantChanged: true,
			wantSpec: func() workv1alpha2.ResourceBindingSpec {
				s := makeBinding("nginx").Spec
				tk := withState(makeTask("member2", policyv1alpha1.PurgeModeNever, 10, "member2"), "jobid", "abc")
				tk.Replicas, tk.Message = ptr.To[int32](2), "why"
				s.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{tk}
				return s
			}(),
		},
		"empty purge mode is Gracefully; Immediately is Directly": {
			spec:    makeBinding("nginx").clusters("member1").Spec,
			cluster: "member1",
			opts: func(o EvictOptions) EvictOptions {
				o.PurgeMode = policyv1alpha1.PurgeModeImmediately
				return o
			},
			wantChanged: true,
			wantSpec: func() workv1alpha2.ResourceBindingSpec {
				s := makeBinding("nginx").Spec
				tk := makeTask("member1", policyv1alpha1.PurgeModeDirectly, 10, "member1")
				tk.Replicas = ptr.To[int32](2)
				s.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{tk}
				return s
			}(),
		},
		"cluster not scheduled: no-op": {
			spec:     makeBinding("nginx").clusters("member1").Spec,
			cluster:  "member3",
			wantSpec: makeBinding("nginx").clusters("member1").Spec,
		},
		"task exists already: only removed from clusters, task unchanged": {
			spec: makeBinding("nginx").clusters("member1", "member2").
				task(makeTask("member2", policyv1alpha1.PurgeModeNever, 1, "member2")).Spec,
			cluster:     "member2",
			wantChanged: true,
			wantSpec: makeBinding("nginx").clusters("member1").
				task(makeTask("member2", policyv1alpha1.PurgeModeNever, 1, "member2")).Spec,
		},
		"explicit clusters before (several evictions in one write)": {
			spec:    makeBinding("nginx").clusters("member1").Spec,
			cluster: "member1",
			opts: func(o EvictOptions) EvictOptions {
				o.ClustersBefore = []string{"member1", "member2"}
				return o
			},
			wantChanged: true,
			wantSpec: func() workv1alpha2.ResourceBindingSpec {
				s := makeBinding("nginx").Spec
				tk := makeTask("member1", policyv1alpha1.PurgeModeGracefully, 10, "member1", "member2")
				tk.Replicas = ptr.To[int32](2)
				s.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{tk}
				return s
			}(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := base
			if tc.opts != nil {
				o = tc.opts(o)
			}
			spec := tc.spec.DeepCopy()
			if got := Evict(spec, tc.cluster, o); got != tc.wantChanged {
				t.Errorf("Evict() = %t, want %t", got, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.wantSpec, *spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			// Idempotent: a second call changes nothing.
			again := spec.DeepCopy()
			if Evict(again, tc.cluster, o) {
				t.Error("second Evict changed the spec")
			}
		})
	}
}
