package binding

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"

	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

func replicasOf(t *testing.T, w *workv1alpha1.Work) int64 {
	t.Helper()
	r, _, _ := unstructured.NestedInt64(manifestOf(t, w).Object, "spec", "replicas")
	return r
}

func imageOf(t *testing.T, w *workv1alpha1.Work) string {
	t.Helper()
	c, _, _ := unstructured.NestedSlice(manifestOf(t, w).Object, "spec", "template", "spec", "containers")
	return c[0].(map[string]any)["image"].(string)
}

func TestDividedReplicasAreRevisedPerCluster(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 2).Cluster("member2", 1).Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeCluster("member2"))
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	for cluster, want := range map[string]int64{"member1": 2, "member2": 1} {
		w := e.work(cluster, "Deployment", "default", "nginx")
		if got := replicasOf(t, w); got != want {
			t.Errorf("%s: replicas = %d, want %d", cluster, got, want)
		}
		if got := w.Annotations[workv1alpha1.WorkReplicasAnnotation]; got != strconv.FormatInt(want, 10) {
			t.Errorf("%s: the Work says it was rendered for %q replicas, want %d", cluster, got, want)
		}
		if w.Name != "nginx-687f7fb96f" {
			t.Errorf("Work name = %s", w.Name)
		}
		if w.Labels[workv1alpha2.ResourceBindingPermanentIDLabel] != "rb-id" ||
			w.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] != "default" ||
			w.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey] != "nginx-deployment" ||
			w.Annotations[workv1alpha1.ResourceConflictResolutionAnnotation] != workv1alpha1.ObjectAbort {
			t.Errorf("%s: Work metadata %v %v", cluster, w.Labels, w.Annotations)
		}
		if len(w.Finalizers) != 1 || w.Finalizers[0] != workv1alpha1.ExecutionControllerFinalizer {
			t.Errorf("%s: finalizers %v", cluster, w.Finalizers)
		}
		m := manifestOf(t, w)
		if m.GetResourceVersion() != "" || m.GetUID() != "" || m.GetGeneration() != 0 || m.GetCreationTimestamp() != (metav1.Time{}) {
			t.Errorf("%s: manifest metadata not pruned: %v", cluster, m.Object["metadata"])
		}
		if _, found := m.Object["status"]; found {
			t.Errorf("%s: manifest has a status", cluster)
		}
		ann := m.GetAnnotations()
		if ann[workv1alpha1.WorkNamespaceAnnotation] != ExecutionNamespace(cluster) || ann[workv1alpha1.WorkNameAnnotation] != w.Name ||
			ann[workv1alpha1.ResourceTemplateUIDAnnotation] != "tmpl-uid" || ann[workv1alpha1.ResourceTemplateGenerationAnnotationKey] != "2" {
			t.Errorf("%s: manifest annotations %v", cluster, ann)
		}
		if m.GetLabels()["app"] != "nginx" || m.GetLabels()[ManagedLabel] != "true" || m.GetLabels()[workv1alpha2.ResourceBindingPermanentIDLabel] != "rb-id" {
			t.Errorf("%s: manifest labels %v", cluster, m.GetLabels())
		}
		if ann[workv1alpha1.ManagedLabels] != "app,karmada.io/managed,resourcebinding.karmada.io/permanent-id" {
			t.Errorf("%s: managed-labels %q", cluster, ann[workv1alpha1.ManagedLabels])
		}
	}
}

func TestOverrideAppliesOnlyToTargetedCluster(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 1).Cluster("member2", 2).Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeCluster("member2"), seedOP())
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	w1, w2 := e.work("member1", "Deployment", "default", "nginx"), e.work("member2", "Deployment", "default", "nginx")
	if got := imageOf(t, w1); got != "fake/nginx" {
		t.Errorf("member1 image = %s, want fake/nginx", got)
	}
	if got := imageOf(t, w2); got != "nginx" {
		t.Errorf("member2 image = %s, want nginx", got)
	}
	if !strings.Contains(w1.Annotations[policyv1alpha1.AppliedOverrides], `"policyName":"nginx-op"`) {
		t.Errorf("member1 applied-overrides = %q", w1.Annotations[policyv1alpha1.AppliedOverrides])
	}
	if _, ok := w2.Annotations[policyv1alpha1.AppliedOverrides]; ok {
		t.Errorf("member2 must not record an override")
	}

	// Deleting the policy undoes the override and its record.
	if err := e.client.Delete(context.Background(), seedOP()); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	w1 = e.work("member1", "Deployment", "default", "nginx")
	if got := imageOf(t, w1); got != "nginx" {
		t.Errorf("after policy deletion member1 image = %s", got)
	}
	if _, ok := w1.Annotations[policyv1alpha1.AppliedOverrides]; ok {
		t.Errorf("stale applied-overrides annotation")
	}
}

func TestBadOverrideIsReportedAndOtherClustersProceed(t *testing.T) {
	bad := seedOP()
	bad.Spec.OverrideRules[0].Overriders = policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
		{Path: "/spec/missing/path", Operator: policyv1alpha1.OverriderOpReplace, Value: jsonValue(`1`)}}}
	rb := makeBinding("nginx").Cluster("member1", 1).Cluster("member2", 2).Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeCluster("member2"), bad)
	err := e.reconcile(rb)
	if err == nil || !strings.Contains(err.Error(), "nginx-op") {
		t.Fatalf("error = %v, want one naming the policy", err)
	}
	if e.hasWork("member1", WorkName("Deployment", "nginx", "default")) {
		t.Errorf("member1's Work must not be written with a failed override")
	}
	e.work("member2", "Deployment", "default", "nginx")
	if ev := strings.Join(drain(e), "\n"); !strings.Contains(ev, "Warning "+ReasonApplyOverridePolicyFailed) {
		t.Errorf("events = %s", ev)
	}
}

// An OverridePolicy of namespace default may not make its Work create an
// object in another namespace (kube-system), of another kind or under
// another name in the member: the Work is refused, and the event names the
// policy and the field. A Work already written keeps its manifest.
func TestOverrideMayNotChangeWhichObjectTheWorkCreates(t *testing.T) {
	cases := map[string]struct{ path, value, field string }{
		"namespace":  {"/metadata/namespace", `"kube-system"`, "metadata.namespace"},
		"name":       {"/metadata/name", `"coredns"`, "metadata.name"},
		"kind":       {"/kind", `"DaemonSet"`, "kind"},
		"apiVersion": {"/apiVersion", `"apps/v1beta2"`, "apiVersion"},
		"metadata":   {"/metadata", `{"name": "nginx", "namespace": "kube-system"}`, "metadata.namespace"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			escape := seedOP()
			escape.Spec.OverrideRules = []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
				Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: c.path, Operator: policyv1alpha1.OverriderOpReplace, Value: jsonValue(c.value)}},
			}}}
			rb := makeBinding("nginx").Cluster("member1", 3).Obj()
			e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), escape)
			err := e.reconcile(rb)
			if err == nil || !strings.Contains(err.Error(), "nginx-op") || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error = %v, want one naming the policy and %s", err, c.field)
			}
			if e.hasWork("member1", WorkName("Deployment", "nginx", "default")) {
				t.Errorf("a Work was written for the overridden object")
			}
			ev := strings.Join(drain(e), "\n")
			if !strings.Contains(ev, "Warning "+ReasonApplyOverridePolicyFailed) || !strings.Contains(ev, "OverridePolicy default/nginx-op") ||
				!strings.Contains(ev, c.field+" may not be changed") {
				t.Errorf("events = %s, want %s naming the policy and %s", ev, ReasonApplyOverridePolicyFailed, c.field)
			}
		})
	}

	t.Run("existing Work", func(t *testing.T) {
		rb := makeBinding("nginx").Cluster("member1", 3).Obj()
		e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"))
		if err := e.reconcile(rb); err != nil {
			t.Fatal(err)
		}
		before := e.work("member1", "Deployment", "default", "nginx")
		escape := seedOP()
		escape.Spec.OverrideRules = []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
			Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/metadata/namespace", Operator: policyv1alpha1.OverriderOpReplace, Value: jsonValue(`"kube-system"`)}},
		}}}
		if err := e.client.Create(context.Background(), escape); err != nil {
			t.Fatal(err)
		}
		if err := e.reconcile(rb); err == nil {
			t.Fatal("the namespace override was not refused")
		}
		after := e.work("member1", "Deployment", "default", "nginx")
		if ns := manifestOf(t, after).GetNamespace(); ns != "default" || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("the Work was rewritten (manifest namespace %q)", ns)
		}
	})
}

// Preserved state injected at failover is held to the same identity as
// overrides.
func TestStateInjectionMayNotChangeWhichObjectTheWorkCreates(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"))
	e.sync.InjectState = func(_ client.Object, _ *workv1alpha2.ResourceBindingSpec, _ string, m *unstructured.Unstructured) error {
		m.SetNamespace("kube-system")
		return nil
	}
	if err := e.reconcile(rb); err == nil || !strings.Contains(err.Error(), "metadata.namespace") {
		t.Fatalf("error = %v, want one naming metadata.namespace", err)
	}
	if e.hasWork("member1", WorkName("Deployment", "nginx", "default")) {
		t.Errorf("a Work was written for the moved object")
	}
}

func TestOrphanWorkIsDeleted(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeWork("member2", rb))
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if e.hasWork("member2", WorkName("Deployment", "nginx", "default")) {
		t.Errorf("orphan Work in member2 still there")
	}
	e.work("member1", "Deployment", "default", "nginx")
}

func TestEvictedClusterWorkIsKeptUntouched(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).EvictionTask("member2", policyv1alpha1.PurgeModeGracefully).Obj()
	old := makeWork("member2", rb)
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeCluster("member2"), old)
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if !e.hasWork("member2", old.Name) {
		t.Fatalf("the evicted cluster's Work was deleted")
	}
	for _, w := range e.writes {
		if strings.Contains(w, "karmada-es-member2") {
			t.Errorf("the evicted cluster's Work was written: %s", w)
		}
	}
}

func TestRequiredByClustersGetWorks(t *testing.T) {
	rb := makeBinding("cm").Resource("v1", "ConfigMap", "app-config").RequiredBy("nginx-deployment", "member1", "member2").Obj()
	e := newEnv(t, rb, makeConfigMap("app-config"), makeCluster("member1"), makeCluster("member2"))
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"member1", "member2"} {
		w := e.work(c, "ConfigMap", "default", "app-config")
		if got := manifestOf(t, w).Object["data"]; got.(map[string]any)["k"] != "v" {
			t.Errorf("%s: data = %v", c, got)
		}
	}
}

func TestReconcileWithNothingToDoWritesNothing(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 2).Cluster("member2", 1).Obj()
	rb.Finalizers = nil // the first pass adds it
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeCluster("member2"), seedOP())
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if len(e.writes) != 3 {
		t.Errorf("first pass writes = %v, want finalizer + 2 Works", e.writes)
	}
	e.writes = nil
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if len(e.writes) != 0 {
		t.Errorf("second pass wrote %v", e.writes)
	}
}

func TestTemplateChangeUpdatesWorks(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Obj()
	tmpl := makeDeployment("nginx", 3)
	e := newEnv(t, rb, tmpl, makeCluster("member1"))
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	tmpl.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	if err := e.client.Update(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
	e.writes = nil
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if got := imageOf(t, e.work("member1", "Deployment", "default", "nginx")); got != "nginx:1.27" {
		t.Errorf("image = %s", got)
	}
	if len(e.writes) != 1 {
		t.Errorf("writes = %v, want one Work update", e.writes)
	}
}

func TestDeletedBindingDeletesWorksThenFinalizer(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Deleting().Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), makeWork("member1", rb), makeWork("member2", rb))
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"member1", "member2"} {
		if e.hasWork(c, WorkName("Deployment", "nginx", "default")) {
			t.Errorf("Work in %s not deleted", c)
		}
	}
	got := &workv1alpha2.ResourceBinding{}
	err := e.client.Get(context.Background(), client.ObjectKeyFromObject(rb), got)
	if err == nil && len(got.Finalizers) > 0 {
		t.Errorf("finalizer not removed: %v", got.Finalizers)
	}
}

// Must not: a deleted binding that asks to preserve its member objects
// deletes a Work that does not say so yet (rendered before the policy
// asked, or whose render fails): the execution controller would delete
// the copy. The Work is marked first.
func TestDeletedBindingThatPreservesMarksEveryWorkFirst(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Deleting().Obj()
	rb.Spec.PreserveResourcesOnDeletion = ptr.To(true)
	stale := makeWork("member1", rb)
	stale.Spec.PreserveResourcesOnDeletion = nil
	stale.Finalizers = append(stale.Finalizers, "test/keep") // the execution controller's, in effect
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), stale)
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	w := &workv1alpha1.Work{}
	if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(stale), w); err != nil {
		t.Fatal(err)
	}
	if w.DeletionTimestamp.IsZero() || !ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
		t.Errorf("Work deleting %t, preserveResourcesOnDeletion %v: want deleted with its member objects preserved", !w.DeletionTimestamp.IsZero(), w.Spec.PreserveResourcesOnDeletion)
	}
}

func TestClusterResourceBinding(t *testing.T) {
	role := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "reader", UID: "role-uid"}}
	crb := &workv1alpha2.ClusterResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader-clusterrole", UID: "crb-uid"},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
			Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}},
		},
	}
	e := newEnv(t, crb, role, makeCluster("member1"))
	if err := e.reconcile(crb); err != nil {
		t.Fatal(err)
	}
	w := e.work("member1", "ClusterRole", "", "reader")
	if w.Annotations[workv1alpha2.ClusterResourceBindingAnnotationKey] != "reader-clusterrole" ||
		w.Labels[workv1alpha2.ClusterResourceBindingPermanentIDLabel] != "crb-uid" {
		t.Errorf("Work metadata %v %v", w.Labels, w.Annotations)
	}
	got := &workv1alpha2.ClusterResourceBinding{}
	if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(crb), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != workv1alpha2.ClusterResourceBindingControllerFinalizer {
		t.Errorf("finalizers = %v", got.Finalizers)
	}
	if key, ok := bindingOfWork(w); !ok || key.Namespace != "" || key.Name != "reader-clusterrole" {
		t.Errorf("bindingOfWork = %v %v", key, ok)
	}
}

func TestStateInjectionHook(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"))
	e.sync.InjectState = func(_ client.Object, _ *workv1alpha2.ResourceBindingSpec, cluster string, m *unstructured.Unstructured) error {
		labels := m.GetLabels()
		labels["jobid"] = "abc-" + cluster
		m.SetLabels(labels)
		return nil
	}
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if got := manifestOf(t, e.work("member1", "Deployment", "default", "nginx")).GetLabels()["jobid"]; got != "abc-member1" {
		t.Errorf("injected label = %q", got)
	}
}

func TestOverridePolicyEnqueuesSelectedBindings(t *testing.T) {
	nginx := makeBinding("nginx").Cluster("member1", 1).Obj()
	redis := makeBinding("redis").Cluster("member1", 1).Obj()
	redis.UID = "rb2"
	// The same name, another kind: the policy selects Deployments only.
	cm := makeBinding("x").Resource("v1", "ConfigMap", "nginx").Cluster("member1", 1).Obj()
	cm.UID = "rb3"
	// The same Deployment name in another namespace than the policy's.
	other := makeBinding("nginx").Cluster("member1", 1).Obj()
	other.UID, other.Namespace, other.Spec.Resource.Namespace = "rb4", "shop", "shop"
	e := newEnv(t, nginx, redis, cm, other)
	reqs := e.sync.overridePolicyToBindings(context.Background(), seedOP())
	if len(reqs) != 1 || reqs[0].Name != "nginx-deployment" || reqs[0].Namespace != "default" {
		t.Errorf("requests = %v, want default/nginx-deployment only", reqs)
	}
	all := &policyv1alpha1.ClusterOverridePolicy{}
	if got := e.sync.clusterOverridePolicyToBindings(context.Background(), all); len(got) != 4 {
		t.Errorf("a policy without selectors must enqueue every binding, got %v", got)
	}
}

func drain(e *env) []string {
	return eventstest.Drain(e.recorder)
}

func TestWorkOfRenamedBindingIsTakenOver(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Obj()
	stale := makeWork("member1", rb)
	stale.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey] = "old-name"
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"), stale)
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	w := e.work("member1", "Deployment", "default", "nginx")
	if w.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey] != rb.Name || replicasOf(t, w) != 3 {
		t.Errorf("Work not taken over: %v", w.Annotations)
	}
}

// A ResourceBinding written by hand may omit spec.resource.namespace; the
// template is then looked up in the binding's own namespace.
func TestResourceNamespaceDefaultsToTheBindings(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 3).Obj()
	rb.Spec.Resource.Namespace = ""
	e := newEnv(t, rb, makeDeployment("nginx", 3), makeCluster("member1"))
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	e.work("member1", "Deployment", "default", "nginx")
}

// A Directly binding's copy in a Pull cluster carries the fencing marks its
// agent fences it by; its copy in a Push cluster, which cannot be fenced,
// and a Gracefully binding's copies carry none.
func TestFencingMarksOnlyOnPullCopiesOfDirectlyBindings(t *testing.T) {
	pull := makeCluster("edge1")
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	directly := makeBinding("nginx").Cluster("edge1", 1).Cluster("member1", 1).Obj()
	directly.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}
	directly.Spec.Placement = &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{{
		Key: clusterv1alpha1.TaintClusterNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](20)}}}
	e := newEnv(t, directly, makeDeployment("nginx", 2), pull, makeCluster("member1"))
	if err := e.reconcile(directly); err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, e.work("edge1", "Deployment", "default", "nginx"))
	if got := m.GetLabels()[fencing.ActionLabel]; got != "ScaleToZero" {
		t.Errorf("Pull copy: %s = %q, want ScaleToZero", fencing.ActionLabel, got)
	}
	if got := m.GetAnnotations()[fencing.AfterAnnotation]; got != "20" {
		t.Errorf("Pull copy: %s = %q, want the toleration, 20", fencing.AfterAnnotation, got)
	}
	if m := manifestOf(t, e.work("member1", "Deployment", "default", "nginx")); m.GetLabels()[fencing.ActionLabel] != "" || m.GetAnnotations()[fencing.AfterAnnotation] != "" {
		t.Errorf("Push copy carries fencing marks: %v %v", m.GetLabels(), m.GetAnnotations())
	}

	graceful := makeBinding("web").Cluster("edge1", 1).Obj()
	e = newEnv(t, graceful, makeDeployment("web", 1), pull)
	if err := e.reconcile(graceful); err != nil {
		t.Fatal(err)
	}
	if m := manifestOf(t, e.work("edge1", "Deployment", "default", "web")); m.GetLabels()[fencing.ActionLabel] != "" {
		t.Errorf("Gracefully copy carries fencing marks: %v", m.GetLabels())
	}
}

// The fencing marks are the binding controller's alone: the template's
// labels, an override or injected state may not put them on a copy, or the
// agent would fence (even delete) a copy the control plane does not count
// as fenced. A fenced copy carries the controller's marks, not theirs.
func TestFencingMarksComeOnlyFromTheBindingController(t *testing.T) {
	pull := makeCluster("edge1")
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	marks := policyv1alpha1.Overriders{
		LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
			{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{fencing.ActionLabel: "Delete"}}},
		AnnotationsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
			{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{fencing.AfterAnnotation: "3600"}}},
	}
	inject := func(_ client.Object, _ *workv1alpha2.ResourceBindingSpec, _ string, m *unstructured.Unstructured) error {
		ann := m.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[fencing.ReplicasAnnotation] = "100"
		m.SetAnnotations(ann)
		return nil
	}
	template := makeDeployment("nginx", 2)
	template.Labels[fencing.ActionLabel] = "Delete"
	template.Annotations = map[string]string{fencing.AfterAnnotation: "3600", fencing.ReplicasAnnotation: "50"}

	for _, fenced := range []bool{false, true} {
		op := seedOP()
		op.Spec.OverrideRules = []policyv1alpha1.RuleWithCluster{{Overriders: marks}}
		rb := makeBinding("nginx").Cluster("edge1", 1).Cluster("member1", 1).Obj()
		if fenced {
			rb.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}
		}
		for _, source := range []string{"template", "override"} {
			objs := []client.Object{rb.DeepCopy(), pull, makeCluster("member1")}
			if source == "template" {
				objs = append(objs, template.DeepCopy())
			} else {
				objs = append(objs, makeDeployment("nginx", 2), op)
			}
			e := newEnv(t, objs...)
			e.sync.InjectState = inject
			if err := e.reconcile(rb); err != nil {
				t.Fatal(err)
			}
			for _, cluster := range []string{"edge1", "member1"} {
				m := manifestOf(t, e.work(cluster, "Deployment", "default", "nginx"))
				wantAction, wantAfter := "", ""
				if fenced && cluster == "edge1" {
					wantAction, wantAfter = "ScaleToZero", "0"
				}
				action, hasAction := m.GetLabels()[fencing.ActionLabel]
				after, hasAfter := m.GetAnnotations()[fencing.AfterAnnotation]
				if action != wantAction || hasAction != (wantAction != "") || after != wantAfter || hasAfter != (wantAfter != "") {
					t.Errorf("fenced=%v, marks from the %s, %s: %s=%q %s=%q, want %q %q",
						fenced, source, cluster, fencing.ActionLabel, action, fencing.AfterAnnotation, after, wantAction, wantAfter)
				}
				if v, ok := m.GetAnnotations()[fencing.ReplicasAnnotation]; ok {
					t.Errorf("fenced=%v, marks from the %s, %s: %s=%q, which only the agent writes in the member",
						fenced, source, cluster, fencing.ReplicasAnnotation, v)
				}
			}
		}
	}
}

// Two templates whose Work names collide: the Work stays with the binding
// that has it, and the other binding reports the conflict, is retried, and
// is not FullyApplied, instead of taking the Work away.
func TestWorkOfAnotherBindingWithTheSameNameIsLeftAlone(t *testing.T) {
	const first = "payments-reconciliation-worker-eu-west-1-production-cluster-61998"
	const second = "payments-reconciliation-worker-eu-west-1-production-cluster-2317062"
	name := WorkName("Deployment", first, "default")
	if other := WorkName("Deployment", second, "default"); other != name {
		t.Fatalf("the Work names no longer collide: %s and %s", name, other)
	}
	owner := makeBinding(first).Cluster("member1", 3).Obj()
	owner.UID, owner.Labels[workv1alpha2.ResourceBindingPermanentIDLabel] = "rb-first", "id-first"
	rival := makeBinding(second).Cluster("member1", 3).Obj()
	rival.UID, rival.Labels[workv1alpha2.ResourceBindingPermanentIDLabel] = "rb-second", "id-second"
	firstDeploy, secondDeploy := makeDeployment(first, 3), makeDeployment(second, 3)
	firstDeploy.UID, secondDeploy.UID = "uid-first", "uid-second"
	e := newEnv(t, owner, rival, firstDeploy, secondDeploy, makeCluster("member1"))
	if err := e.reconcile(owner); err != nil {
		t.Fatal(err)
	}
	drain(e)

	for round := range 3 {
		e.writes = nil
		err := e.reconcile(rival)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("round %d: reconcile of %s = %v, want an error naming Work %s", round, rival.Name, err, name)
		}
		for _, w := range e.writes {
			if !strings.HasPrefix(w, "create ") {
				t.Errorf("round %d: %s wrote %s", round, rival.Name, w)
			}
		}
		w := e.work("member1", "Deployment", "default", first)
		if w.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey] != owner.Name ||
			w.Labels[workv1alpha2.ResourceBindingPermanentIDLabel] != "id-first" || manifestOf(t, w).GetName() != first {
			t.Fatalf("round %d: Work taken over: annotations %v labels %v manifest %s", round, w.Annotations, w.Labels, manifestOf(t, w).GetName())
		}
		evs := drain(e)
		if len(evs) != 1 || !strings.Contains(evs[0], ReasonWorkNameConflict) || !strings.Contains(evs[0], name) || !strings.Contains(evs[0], owner.Name) {
			t.Errorf("round %d: events = %q, want one %s naming the Work and %s", round, evs, ReasonWorkNameConflict, owner.Name)
		}

		e.writes = nil
		if err := e.reconcile(owner); err != nil {
			t.Fatal(err)
		}
		if len(e.writes) != 0 {
			t.Errorf("round %d: %s rewrote its Work: %v", round, owner.Name, e.writes)
		}
	}

	e.reconcileStatus(rival)
	got := &workv1alpha2.ResourceBinding{}
	if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(rival), got); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.FullyApplied); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("%s reports FullyApplied: %+v", rival.Name, c)
	}
}

// A Work deleted as this binding's is deleted only if it is still the
// object the binding read: the delete carries its UID as a precondition, so
// that the API server refuses it for a Work created at the same name since
// (by another binding whose Work name collides).
func TestDeleteWorkNamesTheWorkItRead(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	read := makeWork("member1", makeBinding("nginx").Cluster("member1", 2).Obj())
	read.UID = "the-work-read"
	var preconditions *metav1.Preconditions
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(read.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := &client.DeleteOptions{}
			o.ApplyOptions(opts)
			preconditions = o.Preconditions
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	r := &Reconciler{Client: c}

	if err := r.deleteWork(context.Background(), read); err != nil {
		t.Fatal(err)
	}

	if preconditions == nil || preconditions.UID == nil || *preconditions.UID != read.UID {
		t.Errorf("delete preconditions %+v, want the UID of the Work read (%s)", preconditions, read.UID)
	}
}
