package detector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/claim"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/served"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
)

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

type testEnv struct {
	d      *Detector
	c      client.Client
	rec    *record.FakeRecorder
	writes atomic.Int32
}

func fakeServerResources() ([]*metav1.APIResourceList, error) {
	lw := metav1.Verbs{"get", "list", "watch", "create", "update", "delete"}
	return []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: lw},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: lw},
		}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Verbs: lw},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: lw},
		}},
	}, nil
}

func newTestEnv(t *testing.T, objs ...client.Object) *testEnv {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{rec: record.NewFakeRecorder(100)}
	e.c = fake.NewClientBuilder().WithScheme(s).
		WithObjects(objs...).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexClaimedBy, claimedByIndex).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, IndexClaimedBy, claimedByIndex).
		WithInterceptorFuncs(clienttest.CountWrites(func(string, client.Object) { e.writes.Add(1) })).Build()
	e.d = &Detector{
		Client:      e.c,
		Reader:      e.c,
		Recorder:    e.rec,
		Interpreter: fakeInterpreter{},
		Served:      served.New(fakeServerResources, nil, 0),
		NewID:       sequentialIDs(),
	}
	e.d.setDefaults()
	return e
}

func (e *testEnv) reconcile(t *testing.T, key TemplateKey) reconcile.Result {
	t.Helper()
	res, err := e.d.reconcileTemplate(context.Background(), key)
	if err != nil {
		t.Fatalf("reconcile %s: %v", key, err)
	}
	return res
}

func (e *testEnv) binding(t *testing.T, ns, name string) *workv1alpha2.ResourceBinding {
	t.Helper()
	var rb workv1alpha2.ResourceBinding
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rb); err != nil {
		t.Fatalf("getting binding %s/%s: %v", ns, name, err)
	}
	return &rb
}

func (e *testEnv) template(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(deploymentGVK)
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatalf("getting template: %v", err)
	}
	return u
}

func (e *testEnv) events() []string {
	return eventstest.Drain(e.rec)
}

func ppObj(ns, name, id string, mutate ...func(*policyv1alpha1.PropagationPolicy)) *policyv1alpha1.PropagationPolicy {
	p := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			SchedulerName:     "default-scheduler",
		},
	}
	if id != "" {
		p.Labels = map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: id}
		p.Finalizers = []string{policyv1alpha1.PropagationPolicyControllerFinalizer}
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func cppObj(name, id string) *policyv1alpha1.ClusterPropagationPolicy {
	return &policyv1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:     map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: id},
			Finalizers: []string{policyv1alpha1.ClusterPropagationPolicyControllerFinalizer}},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
		},
	}
}

var nginxKey = TemplateKey{GVK: deploymentGVK, Namespace: "default", Name: "nginx"}

func TestReconcileTemplateCreatesBindingThenWritesNothing(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	e.reconcile(t, nginxKey)

	tmpl := e.template(t, "default", "nginx")
	if c, ok := claim.Read(tmpl); !ok || c.ID != "pp-1" || c.Name != "pol" {
		t.Fatalf("template claim = %+v, %v", c, ok)
	}
	rb := e.binding(t, "default", "nginx-deployment")
	if rb.Spec.Resource.ResourceVersion != tmpl.GetResourceVersion() || rb.Spec.Resource.UID != "uid-nginx" {
		t.Errorf("binding resource = %+v, template rv %s", rb.Spec.Resource, tmpl.GetResourceVersion())
	}
	if rb.Spec.Replicas != 2 || rb.Spec.ReplicaRequirements == nil {
		t.Errorf("replicas = %d, requirements %v", rb.Spec.Replicas, rb.Spec.ReplicaRequirements)
	}
	if rb.Labels[workv1alpha2.ResourceBindingPermanentIDLabel] == "" || rb.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] != "pp-1" {
		t.Errorf("binding labels = %v", rb.Labels)
	}
	if evs := e.events(); len(evs) != 1 || !strings.Contains(evs[0], ReasonApplyPolicySucceed) {
		t.Errorf("events = %v", evs)
	}

	e.writes.Store(0)
	e.reconcile(t, nginxKey)
	if n := e.writes.Load(); n != 0 {
		t.Errorf("second reconcile wrote %d times, want 0", n)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("second reconcile recorded %v", evs)
	}
}

func TestReconcileTemplateFollowsTemplateChanges(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	e.reconcile(t, nginxKey)
	tmpl := e.template(t, "default", "nginx")
	_ = unstructured.SetNestedField(tmpl.Object, int64(5), "spec", "replicas")
	if err := e.c.Update(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, nginxKey)
	rb := e.binding(t, "default", "nginx-deployment")
	if rb.Spec.Replicas != 5 || rb.Spec.Resource.ResourceVersion != tmpl.GetResourceVersion() {
		t.Errorf("binding replicas %d rv %s, want 5 and %s", rb.Spec.Replicas, rb.Spec.Resource.ResourceVersion, tmpl.GetResourceVersion())
	}
}

// TestReconcileTemplateIgnoresOwnStatusWrites: a template whose only
// change since its binding's version is status written by this process
// leaves the binding alone; any other change still reaches it.
func TestReconcileTemplateIgnoresOwnStatusWrites(t *testing.T) {
	for _, recorded := range []bool{true, false} {
		t.Run(fmt.Sprintf("status write recorded %t", recorded), func(t *testing.T) {
			e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
			e.d.Statuses = &templates.Statuses{}
			e.reconcile(t, nginxKey)
			named := e.binding(t, "default", "nginx-deployment").Spec.Resource.ResourceVersion

			// The binding-status controller writes the template's status.
			tmpl := e.template(t, "default", "nginx")
			tmpl.Object["status"] = map[string]interface{}{"replicas": int64(2)}
			if err := e.c.Status().Update(context.Background(), tmpl); err != nil {
				t.Fatal(err)
			}
			if recorded {
				e.d.Statuses.Written(tmpl.GetUID(), named, tmpl.GetResourceVersion())
			}
			e.writes.Store(0)
			e.reconcile(t, nginxKey)
			rb := e.binding(t, "default", "nginx-deployment")
			if recorded {
				if n := e.writes.Load(); n != 0 || rb.Spec.Resource.ResourceVersion != named {
					t.Errorf("after this process's own status write: %d writes, binding names %s, want none and %s", n, rb.Spec.Resource.ResourceVersion, named)
				}
			} else if rb.Spec.Resource.ResourceVersion != tmpl.GetResourceVersion() {
				t.Errorf("after a status write not known as this process's: binding names %s, want %s", rb.Spec.Resource.ResourceVersion, tmpl.GetResourceVersion())
			}

			// A spec change after the status write updates the binding.
			tmpl = e.template(t, "default", "nginx")
			_ = unstructured.SetNestedField(tmpl.Object, int64(5), "spec", "replicas")
			if err := e.c.Update(context.Background(), tmpl); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t, nginxKey)
			if rb := e.binding(t, "default", "nginx-deployment"); rb.Spec.Replicas != 5 || rb.Spec.Resource.ResourceVersion != tmpl.GetResourceVersion() {
				t.Errorf("after a spec change: binding replicas %d names %s, want 5 and %s", rb.Spec.Replicas, rb.Spec.Resource.ResourceVersion, tmpl.GetResourceVersion())
			}
		})
	}
}

// TestReconcileTemplateInTerminatingNamespace: a binding refused because
// its namespace is being deleted is neither retried nor reported.
func TestReconcileTemplateInTerminatingNamespace(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	refused := 0
	e.d.Client = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			refused++
			err := apierrors.NewForbidden(workv1alpha2.SchemeGroupVersion.WithResource("resourcebindings").GroupResource(), obj.GetName(),
				fmt.Errorf("unable to create new content in namespace default because it is being terminated"))
			err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes,
				metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Field: "default"})
			return err
		},
	})
	res, err := e.d.reconcileTemplate(context.Background(), nginxKey)
	if err != nil || !res.IsZero() {
		t.Errorf("reconcile = %+v, %v; want done, no retry", res, err)
	}
	if refused != 1 {
		t.Errorf("binding creates tried: %d, want 1", refused)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("events = %v, want none", evs)
	}
}

func TestReconcileTemplatePolicyChoice(t *testing.T) {
	cases := map[string]struct {
		objs     []client.Object
		wantPP   string // claim label value expected (PP)
		wantCPP  string
		wantNone bool
	}{
		"PP beats CPP of higher priority": {
			objs: []client.Object{ppObj("default", "pol", "pp-1"), func() client.Object {
				c := cppObj("cpol", "cpp-1")
				c.Spec.Priority = ptrInt32(100)
				return c
			}()},
			wantPP: "pp-1",
		},
		"CPP when no PP matches": {
			objs:    []client.Object{ppObj("other", "pol", "pp-1"), cppObj("cpol", "cpp-1")},
			wantCPP: "cpp-1",
		},
		"nothing matches": {
			objs:     []client.Object{ppObj("default", "pol", "pp-1", func(p *policyv1alpha1.PropagationPolicy) { p.Spec.ResourceSelectors[0].Name = "web" })},
			wantNone: true,
		},
		"policy without permanent id waits": {
			objs:     []client.Object{ppObj("default", "pol", "")},
			wantNone: true,
		},
		"stale claim of a deleted PP moves to the CPP": {
			objs: []client.Object{cppObj("cpol", "cpp-1"), deployment("default", "nginx").labels(map[string]string{
				policyv1alpha1.PropagationPolicyPermanentIDLabel: "gone",
			}).obj()},
			wantCPP: "cpp-1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := tc.objs
			if !hasTemplate(objs) {
				objs = append(objs, deployment("default", "nginx").obj())
			}
			e := newTestEnv(t, objs...)
			e.reconcile(t, nginxKey)
			tmpl := e.template(t, "default", "nginx")
			c, ok := claim.Read(tmpl)
			switch {
			case tc.wantNone:
				if ok {
					t.Errorf("claimed by %+v, want none", c)
				}
				var rb workv1alpha2.ResourceBinding
				if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}, &rb); !apierrors.IsNotFound(err) {
					t.Errorf("binding exists (err %v)", err)
				}
			case tc.wantPP != "":
				if !ok || c.Cluster || c.ID != tc.wantPP {
					t.Errorf("claim = %+v, want PP %s", c, tc.wantPP)
				}
			case tc.wantCPP != "":
				if !ok || !c.Cluster || c.ID != tc.wantCPP {
					t.Errorf("claim = %+v, want CPP %s", c, tc.wantCPP)
				}
				rb := e.binding(t, "default", "nginx-deployment")
				if rb.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel] != tc.wantCPP {
					t.Errorf("binding labels = %v", rb.Labels)
				}
			}
		})
	}
}

func hasTemplate(objs []client.Object) bool {
	for _, o := range objs {
		if _, ok := o.(*unstructured.Unstructured); ok {
			return true
		}
	}
	return false
}

func ptrInt32(v int32) *int32 { return &v }

func TestReconcileTemplateDeletedDeletesBinding(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	e.reconcile(t, nginxKey)
	if err := e.c.Delete(context.Background(), e.template(t, "default", "nginx")); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, nginxKey)
	var rb workv1alpha2.ResourceBinding
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}, &rb)
	// The binding has the binding-controller finalizer: deletion is marked.
	if err == nil && rb.DeletionTimestamp.IsZero() {
		t.Fatalf("binding not deleted")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// deploymentV1beta2 is a Deployment key at a version the control plane no
// longer serves, as a binding written long ago names its template.
var deploymentV1beta2 = TemplateKey{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}, Namespace: "default", Name: "web"}

// notServing makes the detector's reads of apps/v1beta2 fail as the
// RESTMapper does for a version the API server does not serve.
func notServing(e *testEnv) {
	e.d.Reader = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Version == "v1beta2" {
				return &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// bindingAtV1beta2 is the binding of default/web naming it at apps/v1beta2.
func bindingAtV1beta2() *workv1alpha2.ResourceBinding {
	return &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-deployment", UID: "rb-uid"},
		Spec: workv1alpha2.ResourceBindingSpec{Resource: workv1alpha2.ObjectReference{
			APIVersion: "apps/v1beta2", Kind: "Deployment", Namespace: "default", Name: "web", UID: "uid-web"}},
	}
}

// A binding names its template at a version the control plane does not
// serve (a CRD that stopped serving it, a group the RESTMapper cannot
// resolve for a moment). That says nothing of whether the template exists:
// the binding is kept (deleting it deletes the workload in every member),
// the template is read again with back-off, and an event says why.
func TestReconcileTemplateOfUnservedKindKeepsBinding(t *testing.T) {
	cases := map[string][]client.Object{
		"no policy selects the kind": nil,
		"a policy selects the kind": {ppObj("default", "pol", "pp-1", func(p *policyv1alpha1.PropagationPolicy) {
			p.Spec.ResourceSelectors[0].APIVersion = "apps/v1beta2"
		})},
	}
	for name, objs := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, append(objs, bindingAtV1beta2(), deployment("default", "web").obj())...)
			notServing(e)

			_, err := e.d.reconcileTemplate(context.Background(), deploymentV1beta2)

			var rb workv1alpha2.ResourceBinding
			if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web-deployment"}, &rb); err != nil || !rb.DeletionTimestamp.IsZero() {
				t.Fatalf("the binding was deleted because its template's version is not served: %v", err)
			}
			var notServed *TemplateKindNotServedError
			if !errors.As(err, &notServed) {
				t.Fatalf("reconcile = %v; want a TemplateKindNotServedError, retried with back-off", err)
			}
			evs := e.events()
			if len(evs) != 1 || !strings.Contains(evs[0], ReasonTemplateKindNotServed) || !strings.Contains(evs[0], "apps/v1beta2") {
				t.Fatalf("events = %q", evs)
			}
		})
	}
}

// A binding of a kind no policy selects goes once its template does.
func TestReconcileTemplateOfUnselectedKindDeletedDeletesBinding(t *testing.T) {
	rb := bindingAtV1beta2()
	rb.Spec.Resource.APIVersion = "apps/v1"
	e := newTestEnv(t, rb)

	e.reconcile(t, TemplateKey{GVK: deploymentGVK, Namespace: "default", Name: "web"})

	var got workv1alpha2.ResourceBinding
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web-deployment"}, &got); !apierrors.IsNotFound(err) {
		t.Fatalf("the binding of a deleted template was kept: %v", err)
	}
}

func TestReconcileTemplateReplacesStaleBinding(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").uid("new-uid").obj(), ppObj("default", "pol", "pp-1"))
	old := BuildBinding(deployment("default", "nginx").uid("old-uid").obj(), PropagationPolicyRef(ppObj("default", "pol", "pp-1")), ReplicaInfo{}, "x")
	old.SetFinalizers(nil)
	if err := e.c.Create(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	res := e.reconcile(t, nginxKey)
	if res.RequeueAfter == 0 {
		t.Errorf("want a requeue after deleting the stale binding")
	}
	e.reconcile(t, nginxKey)
	if uid := e.binding(t, "default", "nginx-deployment").Spec.Resource.UID; uid != "new-uid" {
		t.Errorf("binding uid = %s, want new-uid", uid)
	}
}

func TestReconcileTemplateApplicationFailoverImpliesDeps(t *testing.T) {
	pol := ppObj("default", "pol", "pp-1", func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{}}
	})
	e := newTestEnv(t, deployment("default", "nginx").obj(), pol)
	e.reconcile(t, nginxKey)
	if rb := e.binding(t, "default", "nginx-deployment"); !rb.Spec.PropagateDeps || rb.Spec.Failover == nil {
		t.Errorf("propagateDeps = %v failover = %v, want true and set", rb.Spec.PropagateDeps, rb.Spec.Failover)
	}
}

func TestReconcileTemplateLazyActivation(t *testing.T) {
	pol := ppObj("default", "pol", "pp-1", func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.ActivationPreference = policyv1alpha1.LazyActivation
	})
	e := newTestEnv(t, deployment("default", "nginx").obj(), pol)
	e.reconcile(t, nginxKey)

	// A policy change alone is not applied...
	var cur policyv1alpha1.PropagationPolicy
	_ = e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "pol"}, &cur)
	cur.Spec.SchedulerName = "other-scheduler"
	if err := e.c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	e.writes.Store(0)
	e.reconcile(t, nginxKey)
	if n := e.writes.Load(); n != 0 {
		t.Fatalf("lazy policy change wrote %d times", n)
	}
	// ...until the template changes.
	tmpl := e.template(t, "default", "nginx")
	tmpl.SetLabels(mergeMaps(tmpl.GetLabels(), map[string]string{"touch": "1"}))
	if err := e.c.Update(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, nginxKey)
	if s := e.binding(t, "default", "nginx-deployment").Spec.SchedulerName; s != "other-scheduler" {
		t.Errorf("schedulerName = %q after template change", s)
	}
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := copyMap(a)
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestReconcileTemplateInterpreterErrorIsReported(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	e.d.Interpreter = fakeInterpreter{err: errors.New("boom")}
	if _, err := e.d.reconcileTemplate(context.Background(), nginxKey); err == nil {
		t.Fatal("want an error")
	}
	evs := e.events()
	if len(evs) != 1 || !strings.Contains(evs[0], ReasonApplyPolicyFailed) || !strings.Contains(evs[0], "boom") {
		t.Errorf("events = %v", evs)
	}
}

func TestReconcileTemplateWaitsForDependentOverrides(t *testing.T) {
	pol := ppObj("default", "pol", "pp-1", func(p *policyv1alpha1.PropagationPolicy) { p.Spec.DependentOverrides = []string{"op"} })
	e := newTestEnv(t, deployment("default", "nginx").obj(), pol)
	if res := e.reconcile(t, nginxKey); res.RequeueAfter != overridesRetry {
		t.Errorf("RequeueAfter = %v", res.RequeueAfter)
	}
	if n := e.writes.Load(); n != 0 {
		t.Errorf("wrote %d times while waiting", n)
	}
	if evs := e.events(); len(evs) != 1 || !strings.Contains(evs[0], "dependent overrides op") {
		t.Errorf("events = %v", evs)
	}
}

func TestSyncPolicy(t *testing.T) {
	e := newTestEnv(t,
		deployment("default", "nginx").obj(),
		deployment("default", "web").obj(),
		deployment("prod", "nginx").obj(),
		ppObj("default", "pol", "", func(p *policyv1alpha1.PropagationPolicy) {
			p.Spec.ResourceSelectors = append(p.Spec.ResourceSelectors,
				policyv1alpha1.ResourceSelector{APIVersion: "example.io/v1", Kind: "Foo"},
				policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Namespace"})
		}))
	if _, err := e.d.reconcilePropagationPolicy(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "pol"}}); err != nil {
		t.Fatal(err)
	}
	var got policyv1alpha1.PropagationPolicy
	_ = e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "pol"}, &got)
	if got.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] == "" || len(got.Finalizers) != 1 {
		t.Errorf("policy labels %v finalizers %v", got.Labels, got.Finalizers)
	}
	evs := e.events()
	if len(evs) != 1 || !strings.Contains(evs[0], "no kind Foo is served for apiVersion example.io/v1") || !strings.Contains(evs[0], "cluster-scoped") {
		t.Errorf("events = %v", evs)
	}
	var keys []string
	for len(e.d.templateEvents) > 0 {
		keys = append(keys, (<-e.d.templateEvents).Object.String())
	}
	if len(keys) != 2 || !strings.Contains(strings.Join(keys, ","), "default/nginx") || !strings.Contains(strings.Join(keys, ","), "default/web") {
		t.Errorf("enqueued %v, want default/nginx and default/web", keys)
	}
	if w, _ := e.d.isWanted(context.Background(), deploymentGVK); !w {
		t.Errorf("Deployment not wanted after the policy's reconcile")
	}
}

func TestPolicyDeletionReleasesClaims(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	e.reconcile(t, nginxKey)

	var pol policyv1alpha1.PropagationPolicy
	_ = e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "pol"}, &pol)
	if err := e.c.Delete(context.Background(), &pol); err != nil { // finalizer keeps it
		t.Fatal(err)
	}
	if _, err := e.d.reconcilePropagationPolicy(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "pol"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := claim.Read(e.template(t, "default", "nginx")); ok {
		t.Errorf("template still claimed")
	}
	rb := e.binding(t, "default", "nginx-deployment") // the binding stays
	if _, ok := claim.Read(rb); ok {
		t.Errorf("binding still claimed: %v %v", rb.Labels, rb.Annotations)
	}
	if rb.Spec.Placement == nil {
		t.Errorf("binding spec was touched")
	}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "pol"}, &pol)
	if !apierrors.IsNotFound(err) {
		t.Errorf("policy still there (finalizer not removed): %v", err)
	}
}

// bindingsGone is a client whose bindings were deleted after the cache
// listed them: their updates find nothing.
type bindingsGone struct{ client.Client }

func (g bindingsGone) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*workv1alpha2.ResourceBinding); ok {
		return apierrors.NewNotFound(workv1alpha2.Resource("resourcebindings"), obj.GetName())
	}
	return g.Client.Update(ctx, obj, opts...)
}

// TestPolicyDeletionWithBindingGone: a binding deleted between the list
// and the update holds no claim; the policy's release goes on, releases
// the template and lets the policy go, instead of failing on every retry.
func TestPolicyDeletionWithBindingGone(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	e.reconcile(t, nginxKey)
	e.d.Client = bindingsGone{e.c}

	var pol policyv1alpha1.PropagationPolicy
	_ = e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "pol"}, &pol)
	if err := e.c.Delete(context.Background(), &pol); err != nil { // finalizer keeps it
		t.Fatal(err)
	}
	if _, err := e.d.reconcilePropagationPolicy(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "pol"}}); err != nil {
		t.Fatalf("releasing a policy whose binding is gone: %v", err)
	}
	if _, ok := claim.Read(e.template(t, "default", "nginx")); ok {
		t.Errorf("template still claimed")
	}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "pol"}, &pol)
	if !apierrors.IsNotFound(err) {
		t.Errorf("policy still there (finalizer not removed): %v", err)
	}
}

func TestSpecificationChanged(t *testing.T) {
	base := deployment("default", "nginx").rv("1").obj()
	cases := map[string]struct {
		mutate func(u *unstructured.Unstructured)
		want   bool
	}{
		"same":            {func(*unstructured.Unstructured) {}, false},
		"status only":     {func(u *unstructured.Unstructured) { u.Object["status"] = map[string]interface{}{"replicas": int64(2)} }, false},
		"resourceVersion": {func(u *unstructured.Unstructured) { u.SetResourceVersion("2") }, false},
		"managedFields":   {func(u *unstructured.Unstructured) { u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "x"}}) }, false},
		"spec":            {func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]interface{}{"replicas": int64(3)} }, true},
		"labels":          {func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) }, true},
		"annotations":     {func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"a": "b"}) }, true},
		"deletion":        {func(u *unstructured.Unstructured) { now := metav1.Now(); u.SetDeletionTimestamp(&now) }, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.mutate(cur)
			if got := specificationChanged(pack(t, base), pack(t, cur)); got != tc.want {
				t.Errorf("specificationChanged = %v, want %v", got, tc.want)
			}
		})
	}
	if !specificationChanged(nil, pack(t, base)) || !specificationChanged(pack(t, base), nil) {
		t.Error("a template appearing or going is not a change")
	}
}

func pack(t *testing.T, u *unstructured.Unstructured) *packed.Object {
	t.Helper()
	p, err := packed.New(u)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// lagging is a cache that does not hold bindings yet.
type lagging struct{ client.Reader }

func (l lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*workv1alpha2.ResourceBinding); ok {
		return apierrors.NewNotFound(workv1alpha2.Resource("resourcebindings"), key.Name)
	}
	return l.Reader.Get(ctx, key, obj, opts...)
}

// countingReader counts the reads that go to the API server.
type countingReader struct {
	client.Reader
	n atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.n.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestCreatedBindingNotCachedYet: the claim's own update brings the
// template back before the cache holds the binding created right after
// it. That reconcile neither asks the API server nor writes.
func TestCreatedBindingNotCachedYet(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	e.reconcile(t, nginxKey)
	e.binding(t, "default", "nginx-deployment")
	live := &countingReader{Reader: e.c}
	e.d.Reader, e.d.APIReader = lagging{e.c}, live
	e.writes.Store(0)

	e.reconcile(t, nginxKey)
	if n := live.n.Load(); n != 0 {
		t.Errorf("%d reads from the API server for a binding this detector has just created", n)
	}
	if n := e.writes.Load(); n != 0 {
		t.Errorf("%d writes", n)
	}

	// Without the memory of its own create the detector asks the API
	// server: the test above shows what Echoes saves.
	e.d.Echoes = nil
	e.reconcile(t, nginxKey)
	if live.n.Load() == 0 {
		t.Error("no read from the API server even without Echoes")
	}
}

// TestPolicyStatusWritesDoNotWakeTheDetector: the policy checker's status
// writes are not policy changes for the detector; every change of what it
// reads is, and so is an informer resync.
func TestPolicyStatusWritesDoNotWakeTheDetector(t *testing.T) {
	base := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: "pol", Namespace: "default", ResourceVersion: "1", Generation: 1,
		Labels:     map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "pp-1"},
		Finalizers: []string{policyv1alpha1.PropagationPolicyControllerFinalizer},
	}}
	cases := map[string]struct {
		mutate func(*policyv1alpha1.PropagationPolicy)
		want   bool
	}{
		"status only": {func(p *policyv1alpha1.PropagationPolicy) {
			p.Status.Conditions = []metav1.Condition{{Type: policyv1alpha1.PolicyConditionAccepted, Status: metav1.ConditionFalse}}
		}, false},
		"resync of the same object": {func(p *policyv1alpha1.PropagationPolicy) { p.ResourceVersion = "1" }, true},
		"spec":                      {func(p *policyv1alpha1.PropagationPolicy) { p.Generation = 2 }, true},
		"labels":                    {func(p *policyv1alpha1.PropagationPolicy) { p.Labels = nil }, true},
		"annotations":               {func(p *policyv1alpha1.PropagationPolicy) { p.Annotations = map[string]string{"a": "b"} }, true},
		"finalizers":                {func(p *policyv1alpha1.PropagationPolicy) { p.Finalizers = nil }, true},
		"deletion": {func(p *policyv1alpha1.PropagationPolicy) {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cur := base.DeepCopy()
			cur.ResourceVersion = "2"
			tc.mutate(cur)
			if got := notStatusOnly().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: cur}); got != tc.want {
				t.Errorf("passes = %v, want %v", got, tc.want)
			}
		})
	}
}

// A mass rollout's ApplyPolicySucceed Events past the burst are counted
// on their policy, each policy with a budget of its own; every template
// still gets its binding.
func TestApplyPolicyEventsOfARolloutAreBudgetedPerPolicy(t *testing.T) {
	e := newTestEnv(t, deployment("default", "a").obj(), deployment("default", "b").obj(), deployment("default", "c").obj(),
		deployment("shop", "web").obj(), deployment("other", "x").obj(), deployment("other", "y").obj(),
		ppObj("default", "pol", "pp-1"), ppObj("shop", "pol", "pp-2"), cppObj("pol", "cpp-1"))
	budget, err := eventbudget.New(eventbudget.Options{Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.d.Events = budget
	for _, k := range []TemplateKey{
		{GVK: deploymentGVK, Namespace: "default", Name: "a"},
		{GVK: deploymentGVK, Namespace: "default", Name: "b"},
		{GVK: deploymentGVK, Namespace: "default", Name: "c"},
		{GVK: deploymentGVK, Namespace: "shop", Name: "web"},
		{GVK: deploymentGVK, Namespace: "other", Name: "x"},
		{GVK: deploymentGVK, Namespace: "other", Name: "y"},
	} {
		e.reconcile(t, k)
		e.binding(t, k.Namespace, k.Name+"-deployment")
	}
	evs := e.events()
	if len(evs) != 3 || !strings.Contains(evs[0], "PropagationPolicy default/pol; created binding a-deployment") ||
		!strings.Contains(evs[1], "PropagationPolicy shop/pol; created binding web-deployment") ||
		!strings.Contains(evs[2], "ClusterPropagationPolicy pol; created binding x-deployment") {
		t.Errorf("events = %q, want each policy's first", evs)
	}
	sums := budget.Due(true)
	if len(sums) != 2 || sums[0].Subject != eventbudget.Policy("", "pol") || !strings.Contains(sums[0].Message, "1 more ApplyPolicySucceed Events") ||
		sums[1].Subject != eventbudget.Policy("default", "pol") || sums[1].Reason != ReasonApplyPolicySucceed ||
		!strings.Contains(sums[1].Message, "2 more ApplyPolicySucceed Events") || !strings.Contains(sums[1].Message, "Deployment default/b, Deployment default/c") {
		t.Errorf("summaries = %+v, want the ClusterPropagationPolicy's one and default/pol's two held back", sums)
	}
}
