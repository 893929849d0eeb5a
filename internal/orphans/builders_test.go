package orphans

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
)

// MemberObject builds member objects for tests: by default a Deployment
// team-a/<name> in member1 as the execution controller leaves it, applied
// for Work karmada-es-member1/<name>-5d8f of binding team-a/<name>-deployment.
type MemberObject struct{ u *unstructured.Unstructured }

func member(name string) *MemberObject {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("team-a")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetResourceVersion("1")
	u.SetLabels(map[string]string{
		membercluster.ManagedLabel:                   membercluster.ManagedLabelValue,
		workv1alpha2.ResourceBindingPermanentIDLabel: "rb-" + name,
	})
	u.SetAnnotations(map[string]string{
		workv1alpha1.WorkNamespaceAnnotation:               "karmada-es-member1",
		workv1alpha1.WorkNameAnnotation:                    name + "-5d8f",
		workv1alpha2.ResourceBindingNamespaceAnnotationKey: "team-a",
		workv1alpha2.ResourceBindingNameAnnotationKey:      name + "-deployment",
	})
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: execution.FieldManager, Operation: metav1.ManagedFieldsOperationApply},
	})
	return &MemberObject{u: u}
}

func (m *MemberObject) Kind(apiVersion, kind string) *MemberObject {
	m.u.SetAPIVersion(apiVersion)
	m.u.SetKind(kind)
	return m
}

func (m *MemberObject) Namespace(ns string) *MemberObject {
	m.u.SetNamespace(ns)
	return m
}

func (m *MemberObject) Unmanaged() *MemberObject {
	l := m.u.GetLabels()
	delete(l, membercluster.ManagedLabel)
	m.u.SetLabels(l)
	return m
}

func (m *MemberObject) NoWork() *MemberObject {
	a := m.u.GetAnnotations()
	delete(a, workv1alpha1.WorkNameAnnotation)
	delete(a, workv1alpha1.WorkNamespaceAnnotation)
	m.u.SetAnnotations(a)
	return m
}

func (m *MemberObject) WorkIn(namespace string) *MemberObject {
	a := m.u.GetAnnotations()
	a[workv1alpha1.WorkNamespaceAnnotation] = namespace
	m.u.SetAnnotations(a)
	return m
}

func (m *MemberObject) NoBinding() *MemberObject {
	a := m.u.GetAnnotations()
	delete(a, workv1alpha2.ResourceBindingNamespaceAnnotationKey)
	delete(a, workv1alpha2.ResourceBindingNameAnnotationKey)
	m.u.SetAnnotations(a)
	return m
}

func (m *MemberObject) ClusterBinding(name string) *MemberObject {
	m.NoBinding()
	a := m.u.GetAnnotations()
	a[workv1alpha2.ClusterResourceBindingAnnotationKey] = name
	m.u.SetAnnotations(a)
	m.u.SetNamespace("")
	return m
}

func (m *MemberObject) Manager(manager string) *MemberObject {
	m.u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate}})
	return m
}

func (m *MemberObject) Deleting() *MemberObject {
	now := metav1.Now()
	m.u.SetDeletionTimestamp(&now)
	m.u.SetFinalizers([]string{"example.com/hold"})
	return m
}

func (m *MemberObject) Obj() *unstructured.Unstructured { return m.u.DeepCopy() }

// ContentObject builds objects found in a namespace.
type ContentObject struct{ c Content }

func content(group, resource, name string) *ContentObject {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetName(name)
	u.SetNamespace("team-a")
	u.SetUID(types.UID("uid-" + resource + "-" + name))
	return &ContentObject{c: Content{Resource: schema.GroupResource{Group: group, Resource: resource}, Object: u}}
}

func (c *ContentObject) Owner(uid types.UID) *ContentObject {
	c.c.Object.SetOwnerReferences(append(c.c.Object.GetOwnerReferences(), metav1.OwnerReference{Kind: "Owner", Name: "owner", UID: uid}))
	return c
}

func (c *ContentObject) UID(uid types.UID) *ContentObject {
	c.c.Object.SetUID(uid)
	return c
}

func (c *ContentObject) Type(t string) *ContentObject {
	c.c.Object.Object["type"] = t
	return c
}

func (c *ContentObject) Annotation(k, v string) *ContentObject {
	a := c.c.Object.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	c.c.Object.SetAnnotations(a)
	return c
}

func (c *ContentObject) Managed() *ContentObject {
	c.c.Object.SetLabels(map[string]string{membercluster.ManagedLabel: membercluster.ManagedLabelValue})
	return c
}

func (c *ContentObject) Deleting() *ContentObject {
	now := metav1.Now()
	c.c.Object.SetDeletionTimestamp(&now)
	return c
}

func (c *ContentObject) Obj() Content {
	return Content{Resource: c.c.Resource, Object: c.c.Object.DeepCopy()}
}
