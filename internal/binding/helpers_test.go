package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
)

// fakeInterpreter knows Deployments: replicas at spec.replicas, and a
// status that sums readyReplicas over the members.
type fakeInterpreter struct{}

func (fakeInterpreter) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, bool, error) {
	if obj.GetKind() != "Deployment" {
		return 0, nil, false, nil
	}
	r, _, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	return int32(r), nil, true, err
}

func (fakeInterpreter) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	if obj.GetKind() == "Deployment" {
		if err := unstructured.SetNestedField(out.Object, replicas, "spec", "replicas"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (fakeInterpreter) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	out := template.DeepCopy()
	if template.GetKind() != "Deployment" {
		return out, nil
	}
	var ready int64
	for _, item := range items {
		if item.Status == nil {
			continue
		}
		var s struct {
			ReadyReplicas int64 `json:"readyReplicas"`
		}
		if err := json.Unmarshal(item.Status.Raw, &s); err != nil {
			return nil, err
		}
		ready += s.ReadyReplicas
	}
	return out, unstructured.SetNestedField(out.Object, ready, "status", "readyReplicas")
}

// env is a fake control plane with both reconcilers and a write counter.
type env struct {
	t        *testing.T
	client   client.Client
	recorder *record.FakeRecorder
	writes   []string
	sync     *Reconciler
	status   *StatusReconciler
}

func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, recorder: record.NewFakeRecorder(100)}
	count := func(verb string, obj client.Object) {
		e.writes = append(e.writes, fmt.Sprintf("%s %T %s", verb, obj, client.ObjectKeyFromObject(obj)))
	}
	e.client = fake.NewClientBuilder().
		WithScheme(scheme).
		WithObjects(objs...).
		WithStatusSubresource(&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}, &workv1alpha1.Work{}, &appsv1.Deployment{}).
		WithIndex(&workv1alpha1.Work{}, worksByBindingIndex, workIndexValues).
		WithInterceptorFuncs(clienttest.CountWrites(count)).
		Build()
	e.sync = &Reconciler{Client: e.client, Templates: &templates.Reader{Live: e.client}, Recorder: e.recorder, Interpreter: fakeInterpreter{}}
	e.status = &StatusReconciler{Client: e.client, Templates: &templates.Reader{Live: e.client}, Recorder: e.recorder, Interpreter: fakeInterpreter{}}
	return e
}

func (e *env) reconcile(obj client.Object) error {
	e.t.Helper()
	_, err := e.sync.Reconcile(context.Background(), reqFor(obj))
	return err
}

func (e *env) reconcileStatus(obj client.Object) {
	e.t.Helper()
	if _, err := e.status.Reconcile(context.Background(), reqFor(obj)); err != nil {
		e.t.Fatalf("status reconcile: %v", err)
	}
}

func reqFor(obj client.Object) reconcileRequest {
	return reconcileRequest{NamespacedName: client.ObjectKeyFromObject(obj)}
}

// work reads the Work of template default/nginx (Deployment) in cluster.
func (e *env) work(cluster, kind, namespace, name string) *workv1alpha1.Work {
	e.t.Helper()
	w := &workv1alpha1.Work{}
	if err := e.client.Get(context.Background(), client.ObjectKey{Namespace: ExecutionNamespace(cluster), Name: WorkName(kind, name, namespace)}, w); err != nil {
		e.t.Fatalf("Work of %s in %s: %v", name, cluster, err)
	}
	return w
}

func (e *env) hasWork(cluster, name string) bool {
	e.t.Helper()
	w := &workv1alpha1.Work{}
	err := e.client.Get(context.Background(), client.ObjectKey{Namespace: ExecutionNamespace(cluster), Name: name}, w)
	return err == nil && w.DeletionTimestamp.IsZero()
}

func manifestOf(t *testing.T, w *workv1alpha1.Work) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw); err != nil {
		t.Fatal(err)
	}
	return u
}

// Builders.

func makeDeployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "tmpl-uid", Generation: 2, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "nginx"}}},
			},
		},
		Status: appsv1.DeploymentStatus{Replicas: 9},
	}
}

func makeConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "cm-uid"},
		Data:       map[string]string{"k": "v"},
	}
}

func makeCluster(name string) *clusterv1alpha1.Cluster {
	return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

type bindingWrapper struct{ workv1alpha2.ResourceBinding }

// makeBinding is the binding of Deployment default/<name> with 3 replicas.
func makeBinding(name string) *bindingWrapper {
	return &bindingWrapper{workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-deployment", Namespace: "default", UID: "rb-uid",
			Labels:     map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "rb-id"},
			Finalizers: []string{workv1alpha2.BindingControllerFinalizer}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name},
			Replicas: 3,
		},
	}}
}

func (b *bindingWrapper) Resource(apiVersion, kind, name string) *bindingWrapper {
	b.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: "default", Name: name}
	b.Spec.Replicas = 0
	b.Name = name + "-" + kind
	return b
}

func (b *bindingWrapper) Cluster(name string, replicas int32) *bindingWrapper {
	b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha2.TargetCluster{Name: name, Replicas: replicas})
	return b
}

func (b *bindingWrapper) RequiredBy(binding string, clusters ...string) *bindingWrapper {
	snap := workv1alpha2.BindingSnapshot{Namespace: "default", Name: binding}
	for _, c := range clusters {
		snap.Clusters = append(snap.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 7})
	}
	b.Spec.RequiredBy = append(b.Spec.RequiredBy, snap)
	return b
}

func (b *bindingWrapper) EvictionTask(from string, mode policyv1alpha1.PurgeMode) *bindingWrapper {
	b.Spec.GracefulEvictionTasks = append(b.Spec.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{
		FromCluster: from, PurgeMode: mode, Reason: workv1alpha2.EvictionReasonApplicationFailure, Producer: workv1alpha2.EvictionProducerRBApplicationFailover})
	return b
}

func (b *bindingWrapper) Deleting() *bindingWrapper {
	now := metav1.Now()
	b.DeletionTimestamp = &now
	return b
}

func (b *bindingWrapper) Obj() *workv1alpha2.ResourceBinding { return b.ResourceBinding.DeepCopy() }

// makeWork is an existing Work of binding rb for template default/nginx.
func makeWork(cluster string, rb *workv1alpha2.ResourceBinding) *workv1alpha1.Work {
	return &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{
			Name: WorkName(rb.Spec.Resource.Kind, rb.Spec.Resource.Name, rb.Spec.Resource.Namespace), Namespace: ExecutionNamespace(cluster),
			Annotations: map[string]string{
				workv1alpha2.ResourceBindingNamespaceAnnotationKey: rb.Namespace,
				workv1alpha2.ResourceBindingNameAnnotationKey:      rb.Name,
			},
			Finalizers: []string{workv1alpha1.ExecutionControllerFinalizer},
		},
	}
}

// applied sets the Work's Applied condition and, when applied, a manifest
// status with readyReplicas.
func applied(w *workv1alpha1.Work, ok bool, ready int, health workv1alpha1.ResourceHealth) *workv1alpha1.Work {
	status := metav1.ConditionTrue
	msg := ""
	if !ok {
		status, msg = metav1.ConditionFalse, "quota exceeded"
	}
	w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: status, Reason: "x", Message: msg, LastTransitionTime: metav1.Now()}}
	if ok {
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "nginx"},
			Status:     &runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"readyReplicas":%d}`, ready))},
			Health:     health,
		}}
	}
	return w
}

// seedOP is the OverridePolicy of the stateful-failover seed: image
// registry "fake" for member1 only.
func seedOP() *policyv1alpha1.OverridePolicy {
	return &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx-op", Namespace: "default"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
				Overriders: policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
					{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "fake"}}},
			}},
		},
	}
}

type reconcileRequest = ctrlreconcile.Request

func jsonValue(raw string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(raw)} }
