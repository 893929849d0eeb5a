package interpreter

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// podSpecPaths says where each pod-template kind keeps its PodSpec.
var podSpecPaths = map[schema.GroupVersionKind][]string{
	deploymentGVK:  {"spec", "template", "spec"},
	replicaSetGVK:  {"spec", "template", "spec"},
	statefulSetGVK: {"spec", "template", "spec"},
	daemonSetGVK:   {"spec", "template", "spec"},
	jobGVK:         {"spec", "template", "spec"},
	cronJobGVK:     {"spec", "jobTemplate", "spec", "template", "spec"},
	podGVK:         {"spec"},
}

// podSpecOf decodes the PodSpec of a pod-template kind. An object without
// one yields an empty PodSpec.
func podSpecOf(obj *unstructured.Unstructured) (*corev1.PodSpec, error) {
	path, ok := podSpecPaths[obj.GroupVersionKind()]
	if !ok {
		return nil, fmt.Errorf("%s has no pod template", obj.GroupVersionKind())
	}
	spec := &corev1.PodSpec{}
	content, found, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil {
		return nil, fmt.Errorf("read pod spec: %w", err)
	}
	if !found {
		return spec, nil
	}
	if err := fromUnstructured(content, spec); err != nil {
		return nil, fmt.Errorf("read pod spec: %w", err)
	}
	return spec, nil
}

// podTemplateReplicas reads spec.replicas of a Deployment, ReplicaSet or
// StatefulSet. Unset counts as 0, as in Karmada (templates stored by an API
// server are defaulted to 1 anyway).
func podTemplateReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	replicas, _, err := nestedCount(obj, "spec", "replicas")
	if err != nil {
		return 0, nil, err
	}
	req, err := requirementsOf(obj)
	if err != nil {
		return 0, nil, err
	}
	return replicas, req, nil
}

// jobReplicas is the number of pods a Job runs at once:
// min(parallelism, completions), with unset parallelism counting as 0 and
// unset completions as no limit.
func jobReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	replicas, _, err := nestedCount(obj, "spec", "parallelism")
	if err != nil {
		return 0, nil, err
	}
	completions, found, err := nestedCount(obj, "spec", "completions")
	if err != nil {
		return 0, nil, err
	}
	if found {
		replicas = min(replicas, completions)
	}
	req, err := requirementsOf(obj)
	if err != nil {
		return 0, nil, err
	}
	return replicas, req, nil
}

// podReplicas: a Pod is one replica.
func podReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	req, err := requirementsOf(obj)
	if err != nil {
		return 0, nil, err
	}
	return 1, req, nil
}

// reviseSpecReplicas sets spec.replicas (Deployment, ReplicaSet,
// StatefulSet).
func reviseSpecReplicas(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	if err := unstructured.SetNestedField(obj.Object, replicas, "spec", "replicas"); err != nil {
		return nil, fmt.Errorf("set spec.replicas: %w", err)
	}
	return obj, nil
}

// reviseJobParallelism sets a Job's spec.parallelism; the binding
// controller divides spec.completions itself.
func reviseJobParallelism(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	if err := unstructured.SetNestedField(obj.Object, replicas, "spec", "parallelism"); err != nil {
		return nil, fmt.Errorf("set spec.parallelism: %w", err)
	}
	return obj, nil
}

// requirementsOf computes what one replica of obj needs. It is nil when
// the pod template has neither node constraints nor resource requests.
// Namespace and PriorityClassName stay empty: Karmada fills them only with
// its alpha ResourceQuotaEstimate gate.
func requirementsOf(obj *unstructured.Unstructured) (*workv1alpha2.ReplicaRequirements, error) {
	spec, err := podSpecOf(obj)
	if err != nil {
		return nil, err
	}
	claim := nodeClaimOf(spec)
	request := podRequests(spec)
	if claim == nil && request == nil {
		return nil, nil
	}
	return &workv1alpha2.ReplicaRequirements{NodeClaim: claim, ResourceRequest: request}, nil
}

// nodeClaimOf collects the node constraints of a pod: node selector,
// tolerations and required node affinity; nil when there are none.
func nodeClaimOf(spec *corev1.PodSpec) *workv1alpha2.NodeClaim {
	claim := &workv1alpha2.NodeClaim{
		NodeSelector: spec.NodeSelector,
		Tolerations:  spec.Tolerations,
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		claim.HardNodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(claim.NodeSelector) == 0 && len(claim.Tolerations) == 0 && claim.HardNodeAffinity == nil {
		return nil
	}
	return claim
}

// podRequests is what the kube-scheduler reserves for one pod:
//  1. each container's requests, with limits standing in for requests that
//     are not set (the API server defaults them that way for pods);
//  2. regular containers and restartable init containers (sidecars) run
//     together, so they add up;
//  3. every other init container runs alone, next to the sidecars started
//     before it, so the pod needs at least that much;
//  4. plus the pod overhead.
//
// It is nil when nothing is requested.
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		req := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(sidecars, req)
			continue
		}
		alone := req.DeepCopy()
		addResources(alone, sidecars)
		maxResources(initPeak, alone)
	}
	for i := range spec.Containers {
		addResources(total, containerRequests(&spec.Containers[i]))
	}
	addResources(total, sidecars)
	maxResources(total, initPeak)
	addResources(total, spec.Overhead)
	if len(total) == 0 {
		return nil
	}
	return total
}

// containerRequests returns requests, filling unset ones from limits.
func containerRequests(c *corev1.Container) corev1.ResourceList {
	req := c.Resources.Requests.DeepCopy()
	if req == nil {
		req = corev1.ResourceList{}
	}
	for name, limit := range c.Resources.Limits {
		if _, ok := req[name]; !ok {
			req[name] = limit.DeepCopy()
		}
	}
	return req
}

func addResources(into, add corev1.ResourceList) {
	for name, q := range add {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
}

func maxResources(into, other corev1.ResourceList) {
	for name, q := range other {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

// nestedCount reads an optional count of pods (replicas, parallelism,
// completions): unset is 0, and found says whether it was set. The API
// server keeps these in an int32 and refuses negatives; a value outside 0 to
// 2147483647 is an error rather than wrapped into a count it does not mean.
func nestedCount(obj *unstructured.Unstructured, path ...string) (count int32, found bool, err error) {
	v, found, err := unstructured.NestedInt64(obj.Object, path...)
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", dotted(path), err)
	}
	if v < 0 || v > math.MaxInt32 {
		return 0, false, fmt.Errorf("%s is %d, want a whole number from 0 to %d", dotted(path), v, math.MaxInt32)
	}
	return int32(v), found, nil
}

func dotted(path []string) string { return strings.Join(path, ".") }
