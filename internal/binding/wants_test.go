package binding

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// Whether a deleted Work's binding still wants a Work in its cluster, which
// keeps the Work's objects for the Work made again: only a binding that
// exists, is not being deleted and expects the cluster (scheduled there,
// required there, or keeping an evicted copy there) does.
func TestWantsWork(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	hooks := failover.NewHooks(features.New())
	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding // nil: gone
		cluster string
		want    bool
	}{
		"scheduled there":                    {makeBinding("nginx").Cluster("member1", 1).Obj(), "member1", true},
		"scheduled elsewhere":                {makeBinding("nginx").Cluster("member2", 1).Obj(), "member1", false},
		"required there by a dependent":      {makeBinding("nginx").RequiredBy("app", "member1").Obj(), "member1", true},
		"an evicted copy kept there":         {makeBinding("nginx").Cluster("member2", 1).EvictionTask("member1", policyv1alpha1.PurgeModeGracefully).Obj(), "member1", true},
		"a Directly eviction, placed anew":   {makeBinding("nginx").Cluster("member2", 1).EvictionTask("member1", policyv1alpha1.PurgeModeDirectly).Obj(), "member1", false},
		"a Directly eviction, nowhere to go": {makeBinding("nginx").EvictionTask("member1", policyv1alpha1.PurgeModeDirectly).Obj(), "member1", true},
		"binding being deleted":              {makeBinding("nginx").Cluster("member1", 1).Deleting().Obj(), "member1", false},
		"binding gone":                       {nil, "member1", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(s)
			if tc.binding != nil {
				b = b.WithObjects(tc.binding)
			}
			work := makeWork(tc.cluster, makeBinding("nginx").Obj())
			got, err := WantsWork(context.Background(), b.Build(), hooks, tc.cluster, work)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("WantsWork = %t, want %t", got, tc.want)
			}
		})
	}
	// A Work that names no binding is wanted by none.
	orphan := makeWork("member1", makeBinding("nginx").Obj())
	orphan.Annotations = nil
	if got, err := WantsWork(context.Background(), fake.NewClientBuilder().WithScheme(s).Build(), hooks, "member1", orphan); got || err != nil {
		t.Errorf("a Work naming no binding: %t, %v", got, err)
	}
}
