package binding

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
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

// While nothing is placed instead, the copy an eviction keeps is the
// workload: a template change (here a scale from 3 to 5 and a new image)
// reaches it, without creating a Work that does not exist. With a
// replacement placed, the old copy is left as it is.
func TestKeptCopyFollowsTheTemplateWhileNothingElseIsPlaced(t *testing.T) {
	scaled := makeDeployment("nginx", 5)
	scaled.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	for name, tc := range map[string]struct {
		clusters     []string
		wantReplicas int64
		wantImage    string
	}{
		"nothing placed: the kept copy follows the template":  {wantReplicas: 5, wantImage: "nginx:2"},
		"a replacement placed: the old copy is left as it is": {clusters: []string{"member2"}, wantReplicas: 3, wantImage: "nginx"},
	} {
		t.Run(name, func(t *testing.T) {
			w := makeBinding("nginx")
			for _, c := range tc.clusters {
				w = w.Cluster(c, 5)
			}
			w = w.EvictionTask("member1", policyv1alpha1.PurgeModeGracefully)
			w.Spec.Replicas = 5
			rb := w.Obj()
			old := makeWork("member1", rb)
			oldManifest := makeDeployment("nginx", 3)
			raw, err := json.Marshal(oldManifest)
			if err != nil {
				t.Fatal(err)
			}
			old.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
			e := newEnv(t, rb, scaled, makeCluster("member1"), makeCluster("member2"), makeCluster("member3"), old)
			e.sync.Eviction = failover.NewHooks(features.New())
			if err := e.reconcile(rb); err != nil {
				t.Fatal(err)
			}
			m := manifestOf(t, e.work("member1", "Deployment", "default", "nginx"))
			replicas, _, _ := unstructured.NestedInt64(m.Object, "spec", "replicas")
			containers, _, _ := unstructured.NestedSlice(m.Object, "spec", "template", "spec", "containers")
			image := ""
			if len(containers) == 1 {
				image, _, _ = unstructured.NestedString(containers[0].(map[string]interface{}), "image")
			}
			if replicas != tc.wantReplicas || image != tc.wantImage {
				t.Errorf("kept copy: replicas %d image %q, want %d %q", replicas, image, tc.wantReplicas, tc.wantImage)
			}
			if e.hasWork("member3", old.Name) {
				t.Error("a Work was created for a cluster that is neither targeted nor kept")
			}
		})
	}

	// A kept copy whose Work is gone is not created again.
	rb := makeBinding("nginx").EvictionTask("member1", policyv1alpha1.PurgeModeGracefully).Obj()
	e := newEnv(t, rb, scaled, makeCluster("member1"))
	e.sync.Eviction = failover.NewHooks(features.New())
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if e.hasWork("member1", WorkName("Deployment", "nginx", "default")) {
		t.Error("the Work of an evicted cluster was created")
	}
}
