package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
	"github.com/lifeboat-dev/lifeboat/internal/orphans"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// sweptMember is a member cluster reached directly, as unjoin
// --cleanup-member reaches it.
type sweptMember struct {
	kube *kubefake.Clientset
	dyn  *fakedynamic.FakeDynamicClient
}

func newSweptMember(objs ...runtime.Object) *sweptMember {
	kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem, UID: "member4-id"}})
	verbs := metav1.Verbs{"delete", "get", "list"}
	kube.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
			{Name: "namespaces", Kind: "Namespace", Verbs: verbs},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: verbs},
		}},
	}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		deploymentsGVR: "DeploymentList", configMapsGVR: "ConfigMapList", namespacesGVR: "NamespaceList",
	}, objs...)
	return &sweptMember{kube: kube, dyn: dyn}
}

func (m *sweptMember) member() orphans.Member {
	return orphans.ClientMember(m.dyn, mct.MetadataOf(m.dyn), m.kube.Discovery(), "member4")
}

func (m *sweptMember) has(gvr schema.GroupVersionResource, ns, name string) bool {
	_, err := m.dyn.Tracker().Get(gvr, ns, name)
	return err == nil
}

// leftDeployment is a Deployment team-a/<name> that Lifeboat applied to
// member4 for a Work that is gone, of binding team-a/<name>-deployment.
func leftDeployment(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("team-a")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetLabels(map[string]string{membercluster.ManagedLabel: membercluster.ManagedLabelValue})
	u.SetAnnotations(map[string]string{
		workv1alpha1.WorkNamespaceAnnotation:               "karmada-es-member4",
		workv1alpha1.WorkNameAnnotation:                    name + "-5d8f",
		workv1alpha2.ResourceBindingNamespaceAnnotationKey: "team-a",
		workv1alpha2.ResourceBindingNameAnnotationKey:      name + "-deployment",
	})
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: execution.FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	return u
}

func memberNamespace(name string, created bool) *unstructured.Unstructured {
	if created {
		return execution.NewCreatedNamespace(name)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	return u
}

func TestSweepUnjoinedMemberRemovesOrphansAndTheirEmptyNamespaces(t *testing.T) {
	theirs := &unstructured.Unstructured{}
	theirs.SetAPIVersion("v1")
	theirs.SetKind("ConfigMap")
	theirs.SetNamespace("shared")
	theirs.SetName("settings")
	m := newSweptMember(
		memberNamespace("team-a", true), leftDeployment("web"),
		memberNamespace("team-b", true), func() *unstructured.Unstructured { d := leftDeployment("api"); d.SetNamespace("team-b"); return d }(),
		memberNamespace("shared", false), theirs,
	)
	// api's binding still places it on member4 (nothing could take it):
	// kept, and so is its namespace.
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api-deployment"},
		Spec: workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member4"}}}}
	cp := newFakeClient(t, rb).Build()

	res, err := SweepUnjoinedMember(context.Background(), cp, m.kube, m.member(), "member4", time.Second)

	if err != nil {
		t.Fatal(err)
	}
	if m.has(deploymentsGVR, "team-a", "web") || m.has(namespacesGVR, "", "team-a") {
		t.Error("the orphan and the namespace Lifeboat created for it are still there")
	}
	if !m.has(deploymentsGVR, "team-b", "api") || !m.has(namespacesGVR, "", "team-b") {
		t.Error("an object whose binding still places it on the cluster was removed, or its namespace")
	}
	if !m.has(namespacesGVR, "", "shared") || !m.has(configMapsGVR, "shared", "settings") {
		t.Error("someone else's namespace or object was removed")
	}
	if strings.Join(res.Removed, ",") != "Deployment team-a/web" || strings.Join(res.NamespacesRemoved, ",") != "team-a" {
		t.Errorf("removed %v, namespaces %v", res.Removed, res.NamespacesRemoved)
	}
	if len(res.Kept) != 1 || !strings.Contains(res.Kept[0], "team-b/api") ||
		len(res.NamespacesKept) != 1 || !strings.HasPrefix(res.NamespacesKept[0], "team-b (") {
		t.Errorf("kept %v, namespaces %v", res.Kept, res.NamespacesKept)
	}
}

func TestSweepUnjoinedMemberMustNot(t *testing.T) {
	cases := map[string]struct {
		cp       []runtime.Object
		wantErr  string
		wantSkip string
	}{
		"while the Cluster still exists": {cp: []runtime.Object{makeCluster("member4").Obj()}, wantErr: "still exists"},
		"a member joined again under another name": {
			cp:       []runtime.Object{func() runtime.Object { c := makeCluster("member5").Obj(); c.Spec.ID = "member4-id"; return c }()},
			wantSkip: "joined as member5",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newSweptMember(memberNamespace("team-a", true), leftDeployment("web"))
			cp := newFakeClient(t, tc.cp...).Build()

			res, err := SweepUnjoinedMember(context.Background(), cp, m.kube, m.member(), "member4", time.Second)

			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if tc.wantSkip != "" && !strings.Contains(res.Skipped, tc.wantSkip) {
				t.Fatalf("skipped = %q, want %q (err %v)", res.Skipped, tc.wantSkip, err)
			}
			if !m.has(deploymentsGVR, "team-a", "web") || !m.has(namespacesGVR, "", "team-a") {
				t.Fatal("the member was swept")
			}
		})
	}
}
