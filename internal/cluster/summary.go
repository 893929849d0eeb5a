package cluster

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// summaryBuilder accumulates nodeSummary and resourceSummary from nodes and
// pods streamed to it page by page, so a big member never has to be held in
// memory at once.
type summaryBuilder struct {
	nodes       clusterv1alpha1.NodeSummary
	allocatable corev1.ResourceList
	allocating  corev1.ResourceList
	allocated   corev1.ResourceList
	pending     int64
	running     int64
}

func newSummaryBuilder() *summaryBuilder {
	return &summaryBuilder{
		allocatable: corev1.ResourceList{},
		allocating:  corev1.ResourceList{},
		allocated:   corev1.ResourceList{},
	}
}

// addNode counts a node and its allocatable resources.
func (b *summaryBuilder) addNode(n *corev1.Node) {
	b.nodes.TotalNum++
	if nodeReady(n) {
		b.nodes.ReadyNum++
	}
	addResources(b.allocatable, n.Status.Allocatable)
}

// PodUsage is what the resource summary needs of a pod: its node, its
// phase and what the scheduler reserves for it. The inventory keeps pods in
// this form, a fraction of the size of a Pod.
type PodUsage struct {
	// ObjectMeta holds the name, namespace, UID and resourceVersion only.
	metav1.ObjectMeta
	NodeName string
	Phase    corev1.PodPhase
	Requests corev1.ResourceList
}

// GetObjectKind and DeepCopyObject make a PodUsage a runtime.Object, as
// informer stores expect.
func (u *PodUsage) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (u *PodUsage) DeepCopyObject() runtime.Object {
	out := *u
	u.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Requests = u.Requests.DeepCopy()
	return &out
}

// usageOf computes the PodUsage of p.
func usageOf(p *corev1.Pod) *PodUsage {
	return &PodUsage{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
		NodeName:   p.Spec.NodeName,
		Phase:      p.Status.Phase,
		Requests:   podRequests(p),
	}
}

// addPod adds a pod's requests to allocating (not yet bound to a node) or
// allocated (bound). Pods that finished (Succeeded, Failed) hold nothing.
func (b *summaryBuilder) addPod(p *corev1.Pod) { b.addUsage(usageOf(p)) }

// addUsage is addPod for a pod already reduced to its PodUsage.
func (b *summaryBuilder) addUsage(u *PodUsage) {
	if u.Phase == corev1.PodSucceeded || u.Phase == corev1.PodFailed {
		return
	}
	if u.NodeName == "" {
		addResources(b.allocating, u.Requests)
		b.pending++
		return
	}
	addResources(b.allocated, u.Requests)
	b.running++
}

func (b *summaryBuilder) nodeSummary() *clusterv1alpha1.NodeSummary {
	s := b.nodes
	return &s
}

// resourceSummary returns the sums; allocating and allocated also count
// their pods under "pods", as Karmada does.
func (b *summaryBuilder) resourceSummary() *clusterv1alpha1.ResourceSummary {
	allocating := b.allocating.DeepCopy()
	allocating[corev1.ResourcePods] = *resource.NewQuantity(b.pending, resource.DecimalSI)
	allocated := b.allocated.DeepCopy()
	allocated[corev1.ResourcePods] = *resource.NewQuantity(b.running, resource.DecimalSI)
	return &clusterv1alpha1.ResourceSummary{
		Allocatable: b.allocatable.DeepCopy(),
		Allocating:  allocating,
		Allocated:   allocated,
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func addResources(sum, add corev1.ResourceList) {
	for name, q := range add {
		cur := sum[name]
		cur.Add(q)
		sum[name] = cur
	}
}

func maxResources(into, other corev1.ResourceList) {
	for name, q := range other {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

// podRequests is what the scheduler reserves for a pod:
//
//  1. pod-level requests (spec.resources) win for the resources they name;
//  2. otherwise the larger of (app containers + sidecars) and, for each
//     regular init container, (its request + the sidecars started before it);
//  3. plus spec.overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	containers := corev1.ResourceList{}
	for i := range p.Spec.Containers {
		addResources(containers, p.Spec.Containers[i].Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(sidecars, c.Resources.Requests)
			maxResources(initPeak, sidecars)
			continue
		}
		step := sidecars.DeepCopy()
		addResources(step, c.Resources.Requests)
		maxResources(initPeak, step)
	}
	reqs := containers
	addResources(reqs, sidecars)
	maxResources(reqs, initPeak)
	if p.Spec.Resources != nil {
		for name, q := range p.Spec.Resources.Requests {
			reqs[name] = q.DeepCopy()
		}
	}
	addResources(reqs, p.Spec.Overhead)
	return reqs
}

// apiEnablements converts discovery results into status.apiEnablements,
// sorted by group/version and resource name, without subresources. The
// result is deterministic so that an unchanged member writes nothing.
func apiEnablements(lists []*metav1.APIResourceList) []clusterv1alpha1.APIEnablement {
	byGV := map[string][]clusterv1alpha1.APIResource{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			byGV[l.GroupVersion] = append(byGV[l.GroupVersion], clusterv1alpha1.APIResource{Name: r.Name, Kind: r.Kind})
		}
	}
	out := make([]clusterv1alpha1.APIEnablement, 0, len(byGV))
	for gv, rs := range byGV {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
		out = append(out, clusterv1alpha1.APIEnablement{GroupVersion: gv, Resources: rs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupVersion < out[j].GroupVersion })
	return out
}

// apiEnablementsCondition is CompleteAPIEnablements for a discovery that
// returned enablements and failed (partial) or not.
func apiEnablementsCondition(enablements []clusterv1alpha1.APIEnablement, partial bool) metav1.Condition {
	c := metav1.Condition{Type: clusterv1alpha1.ClusterConditionCompleteAPIEnablements}
	switch {
	case len(enablements) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, clusterv1alpha1.APIEnablementsEmpty, "discovery returned no API resources"
	case partial:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, clusterv1alpha1.APIEnablementsPartial, "some API groups could not be discovered; apiEnablements is incomplete"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, clusterv1alpha1.APIEnablementsComplete, "all API resources were discovered"
	}
	return c
}
