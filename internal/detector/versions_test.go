package detector

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/claim"
)

var (
	deploymentV1beta2GVK = schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}
	nginxV1beta2Key      = TemplateKey{GVK: deploymentV1beta2GVK, Namespace: "default", Name: "nginx"}
)

// serveDeploymentsAtV1beta2 has the detector read and write the Deployments
// stored at apps/v1 at apps/v1beta2 as well, as an API server serving both
// versions of one stored object does.
func serveDeploymentsAtV1beta2(e *testEnv) {
	asV1 := func(obj client.Object) (*unstructured.Unstructured, bool) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GroupVersionKind() != deploymentV1beta2GVK {
			return nil, false
		}
		v1 := u.DeepCopy()
		v1.SetGroupVersionKind(deploymentGVK)
		return v1, true
	}
	back := func(v1 *unstructured.Unstructured, obj client.Object) {
		u := obj.(*unstructured.Unstructured)
		u.Object = v1.DeepCopy().Object
		u.SetGroupVersionKind(deploymentV1beta2GVK)
	}
	c := interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			v1, ok := asV1(obj)
			if !ok {
				return c.Get(ctx, key, obj, opts...)
			}
			if err := c.Get(ctx, key, v1, opts...); err != nil {
				return err
			}
			back(v1, obj)
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			v1, ok := asV1(obj)
			if !ok {
				return c.Update(ctx, obj, opts...)
			}
			if err := c.Update(ctx, v1, opts...); err != nil {
				return err
			}
			back(v1, obj)
			return nil
		},
	})
	e.d.Client, e.d.Reader = c, c
}

func withPlacement(cluster string) func(*policyv1alpha1.PropagationPolicy) {
	return func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Placement = policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{cluster}}}
	}
}

func atVersion(apiVersion string) func(*policyv1alpha1.PropagationPolicy) {
	return func(p *policyv1alpha1.PropagationPolicy) { p.Spec.ResourceSelectors[0].APIVersion = apiVersion }
}

// TestReconcileTemplateClaimHoldsAcrossVersions: the detector looks at a
// template under each version a policy selects. A claim by the policy
// selecting apps/v1beta2 holds when the template is looked at as apps/v1,
// which another policy selects: the claim never moves, and after the first
// pass nothing is written.
func TestReconcileTemplateClaimHoldsAcrossVersions(t *testing.T) {
	e := newTestEnv(t, deployment("default", "nginx").obj(),
		ppObj("default", "old", "pp-old", atVersion("apps/v1beta2"), withPlacement("member1")),
		ppObj("default", "new", "pp-new", withPlacement("member2")))
	serveDeploymentsAtV1beta2(e)
	e.reconcile(t, nginxV1beta2Key)
	if c, ok := claim.Read(e.template(t, "default", "nginx")); !ok || c.ID != "pp-old" {
		t.Fatalf("claim after the first pass = %+v, %v; want pp-old", c, ok)
	}

	e.writes.Store(0)
	for round := range 3 {
		for _, key := range []TemplateKey{nginxKey, nginxV1beta2Key} {
			e.reconcile(t, key)
			if c, ok := claim.Read(e.template(t, "default", "nginx")); !ok || c.ID != "pp-old" {
				t.Fatalf("round %d, %s: claim = %+v, %v; want pp-old", round, key, c, ok)
			}
			rb := e.binding(t, "default", "nginx-deployment")
			if rb.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] != "pp-old" ||
				rb.Spec.Placement == nil || rb.Spec.Placement.ClusterAffinity.ClusterNames[0] != "member1" {
				t.Fatalf("round %d, %s: binding labels %v placement %+v", round, key, rb.Labels, rb.Spec.Placement)
			}
		}
	}
	if n := e.writes.Load(); n != 0 {
		t.Errorf("reconciling both versions wrote %d times, want 0", n)
	}
}

// TestReconcileTemplatePolicyMovedToAnotherVersion: a policy edited from
// apps/v1 to apps/v1beta2 keeps its claim. The apps/v1 informer stays, so
// the template is still looked at as apps/v1; that must not release the
// claim for the apps/v1beta2 pass to take it again.
func TestReconcileTemplatePolicyMovedToAnotherVersion(t *testing.T) {
	ctx := context.Background()
	e := newTestEnv(t, deployment("default", "nginx").obj(), ppObj("default", "pol", "pp-1"))
	serveDeploymentsAtV1beta2(e)
	e.reconcile(t, nginxKey)
	// The informer of apps/v1 Deployments, started for the policy's first
	// spec, is never stopped.
	e.d.watching[deploymentGVK] = true

	var pol policyv1alpha1.PropagationPolicy
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pol"}, &pol); err != nil {
		t.Fatal(err)
	}
	pol.Spec.ResourceSelectors[0].APIVersion = "apps/v1beta2"
	if err := e.c.Update(ctx, &pol); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.reconcilePropagationPolicy(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "pol"}}); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, nginxV1beta2Key)
	e.events()

	e.writes.Store(0)
	for round := range 3 {
		for _, key := range []TemplateKey{nginxKey, nginxV1beta2Key} {
			e.reconcile(t, key)
			if c, ok := claim.Read(e.template(t, "default", "nginx")); !ok || c.ID != "pp-1" {
				t.Fatalf("round %d, %s: claim = %+v, %v; want pp-1", round, key, c, ok)
			}
		}
	}
	if n := e.writes.Load(); n != 0 {
		t.Errorf("reconciling both versions wrote %d times, want 0", n)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("events = %v", evs)
	}
}
