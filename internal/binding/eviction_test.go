package binding

import (
	"testing"

	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// With the failover hooks, a Directly eviction deletes the old copy first
// and creates the new copy only once the task is closed.
func TestDirectlyEvictionDeletesOldCopyBeforeCreatingNew(t *testing.T) {
	w := makeBinding("nginx").Cluster("member2", 3).EvictionTask("member1", policyv1alpha1.PurgeModeImmediately)
	w.Spec.GracefulEvictionTasks[0].ClustersBeforeFailover = []string{"member1"}
	rb := w.Obj()
	old := makeWork("member1", rb)
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeCluster("member2"), old)
	hooks := failover.NewHooks(features.New())
	e.sync.Eviction = hooks

	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if e.hasWork("member1", old.Name) {
		t.Fatal("the old copy's Work survived a Directly eviction")
	}
	if e.hasWork("member2", old.Name) {
		t.Fatal("the new copy's Work was created before the old copy was gone")
	}

	// The graceful-eviction controller closes the task: the new Work follows.
	rb.Spec.GracefulEvictionTasks = nil
	if err := e.client.Update(t.Context(), rb); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if !e.hasWork("member2", old.Name) {
		t.Fatal("no Work for the new cluster after the task closed")
	}
}

// The must-not-delete cases: an old copy survives while it is the last
// copy, or while a user keeps it; it goes once a user confirms.
func TestEvictedCopyDeletionFollowsTheHooks(t *testing.T) {
	cases := map[string]struct {
		clusters     []string
		mode         policyv1alpha1.PurgeMode
		suppress     *bool
		wantOldThere bool
	}{
		"Directly with no failover target keeps the last copy":    {mode: policyv1alpha1.PurgeModeDirectly, wantOldThere: true},
		"Gracefully keeps the old copy until the task closes":     {clusters: []string{"member2"}, mode: policyv1alpha1.PurgeModeGracefully, wantOldThere: true},
		"Never keeps the old copy while suppressDeletion":         {clusters: []string{"member2"}, mode: policyv1alpha1.PurgeModeNever, suppress: ptr.To(true), wantOldThere: true},
		"Never deletes once the user sets suppressDeletion false": {clusters: []string{"member2"}, mode: policyv1alpha1.PurgeModeNever, suppress: ptr.To(false), wantOldThere: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := makeBinding("nginx")
			for _, c := range tc.clusters {
				w = w.Cluster(c, 3)
			}
			w = w.EvictionTask("member1", tc.mode)
			w.Spec.GracefulEvictionTasks[0].SuppressDeletion = tc.suppress
			w.Spec.GracefulEvictionTasks[0].ClustersBeforeFailover = []string{"member1"}
			rb := w.Obj()
			old := makeWork("member1", rb)
			e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeCluster("member2"), old)
			e.sync.Eviction = failover.NewHooks(features.New())
			if err := e.reconcile(rb); err != nil {
				t.Fatal(err)
			}
			if got := e.hasWork("member1", old.Name); got != tc.wantOldThere {
				t.Fatalf("old copy's Work present = %v, want %v", got, tc.wantOldThere)
			}
		})
	}
}
