package interpreter

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
)

// memberGenerations travel with a workload's reflected status (Karmada's
// FederatedGeneration): the member object's metadata.generation and the
// template generation it was built from (the
// resourcetemplate.karmada.io/generation annotation). With the status's own
// observedGeneration they let aggregation tell whether every member has
// caught up with the current template.
type memberGenerations struct {
	Generation                 int64 `json:"generation,omitempty"`
	ResourceTemplateGeneration int64 `json:"resourceTemplateGeneration,omitempty"`
}

// caughtUp: the member's controller has observed the member's latest
// generation, and that generation was built from template generation
// templateGeneration or later.
func (g memberGenerations) caughtUp(observedGeneration, templateGeneration int64) bool {
	return observedGeneration >= g.Generation && g.ResourceTemplateGeneration >= templateGeneration
}

type reflectedDeploymentStatus struct {
	memberGenerations       `json:",inline"`
	appsv1.DeploymentStatus `json:",inline"`
}

type reflectedStatefulSetStatus struct {
	memberGenerations        `json:",inline"`
	appsv1.StatefulSetStatus `json:",inline"`
}

type reflectedDaemonSetStatus struct {
	memberGenerations      `json:",inline"`
	appsv1.DaemonSetStatus `json:",inline"`
}

type reflectedReplicaSetStatus struct {
	memberGenerations       `json:",inline"`
	appsv1.ReplicaSetStatus `json:",inline"`
}

// generationsOf reads the member generation and template generation.
func generationsOf(obj *unstructured.Unstructured) (memberGenerations, error) {
	g := memberGenerations{Generation: obj.GetGeneration()}
	if v, ok := obj.GetAnnotations()[workv1alpha1.ResourceTemplateGenerationAnnotationKey]; ok && v != "" {
		parsed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return g, fmt.Errorf("parse annotation %s=%q: %w", workv1alpha1.ResourceTemplateGenerationAnnotationKey, v, err)
		}
		g.ResourceTemplateGeneration = parsed
	}
	return g, nil
}

func reflectDeployment(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	d := &appsv1.Deployment{}
	if err := decode(obj, d); err != nil {
		return nil, err
	}
	g, err := generationsOf(obj)
	if err != nil {
		return nil, err
	}
	s := d.Status
	return rawJSON(reflectedDeploymentStatus{memberGenerations: g, DeploymentStatus: appsv1.DeploymentStatus{
		ObservedGeneration:  s.ObservedGeneration,
		Replicas:            s.Replicas,
		UpdatedReplicas:     s.UpdatedReplicas,
		ReadyReplicas:       s.ReadyReplicas,
		AvailableReplicas:   s.AvailableReplicas,
		UnavailableReplicas: s.UnavailableReplicas,
	}})
}

func reflectStatefulSet(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	sts := &appsv1.StatefulSet{}
	if err := decode(obj, sts); err != nil {
		return nil, err
	}
	g, err := generationsOf(obj)
	if err != nil {
		return nil, err
	}
	s := sts.Status
	return rawJSON(reflectedStatefulSetStatus{memberGenerations: g, StatefulSetStatus: appsv1.StatefulSetStatus{
		ObservedGeneration: s.ObservedGeneration,
		Replicas:           s.Replicas,
		ReadyReplicas:      s.ReadyReplicas,
		CurrentReplicas:    s.CurrentReplicas,
		UpdatedReplicas:    s.UpdatedReplicas,
		AvailableReplicas:  s.AvailableReplicas,
	}})
}

func reflectDaemonSet(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	ds := &appsv1.DaemonSet{}
	if err := decode(obj, ds); err != nil {
		return nil, err
	}
	g, err := generationsOf(obj)
	if err != nil {
		return nil, err
	}
	s := ds.Status
	return rawJSON(reflectedDaemonSetStatus{memberGenerations: g, DaemonSetStatus: appsv1.DaemonSetStatus{
		ObservedGeneration:     s.ObservedGeneration,
		CurrentNumberScheduled: s.CurrentNumberScheduled,
		DesiredNumberScheduled: s.DesiredNumberScheduled,
		NumberAvailable:        s.NumberAvailable,
		NumberMisscheduled:     s.NumberMisscheduled,
		NumberReady:            s.NumberReady,
		UpdatedNumberScheduled: s.UpdatedNumberScheduled,
		NumberUnavailable:      s.NumberUnavailable,
	}})
}

func reflectReplicaSet(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	rs := &appsv1.ReplicaSet{}
	if err := decode(obj, rs); err != nil {
		return nil, err
	}
	g, err := generationsOf(obj)
	if err != nil {
		return nil, err
	}
	s := rs.Status
	return rawJSON(reflectedReplicaSetStatus{memberGenerations: g, ReplicaSetStatus: appsv1.ReplicaSetStatus{
		ObservedGeneration:   s.ObservedGeneration,
		Replicas:             s.Replicas,
		FullyLabeledReplicas: s.FullyLabeledReplicas,
		ReadyReplicas:        s.ReadyReplicas,
		AvailableReplicas:    s.AvailableReplicas,
	}})
}

func reflectJob(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	job := &batchv1.Job{}
	if err := decode(obj, job); err != nil {
		return nil, err
	}
	s := job.Status
	return rawJSON(batchv1.JobStatus{
		Active:         s.Active,
		Succeeded:      s.Succeeded,
		Failed:         s.Failed,
		Conditions:     s.Conditions,
		StartTime:      s.StartTime,
		CompletionTime: s.CompletionTime,
	})
}

// reflectService records the load balancer of a LoadBalancer Service, the
// only Service status worth aggregating; other types reflect nothing.
func reflectService(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	svc := &corev1.Service{}
	if err := decode(obj, svc); err != nil {
		return nil, err
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil, nil
	}
	return rawJSON(corev1.ServiceStatus{LoadBalancer: svc.Status.LoadBalancer})
}

func reflectIngress(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	ing := &networkingv1.Ingress{}
	if err := decode(obj, ing); err != nil {
		return nil, err
	}
	return rawJSON(networkingv1.IngressStatus{LoadBalancer: ing.Status.LoadBalancer})
}

func reflectPodDisruptionBudget(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	if err := decode(obj, pdb); err != nil {
		return nil, err
	}
	s := pdb.Status
	return rawJSON(policyv1.PodDisruptionBudgetStatus{
		DisruptionsAllowed: s.DisruptionsAllowed,
		ExpectedPods:       s.ExpectedPods,
		DesiredHealthy:     s.DesiredHealthy,
		CurrentHealthy:     s.CurrentHealthy,
		DisruptedPods:      s.DisruptedPods,
	})
}

func reflectHorizontalPodAutoscaler(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := decode(obj, hpa); err != nil {
		return nil, err
	}
	// A map, not the typed status: its currentMetrics would be written as null.
	return rawJSON(map[string]int32{
		"currentReplicas": hpa.Status.CurrentReplicas,
		"desiredReplicas": hpa.Status.DesiredReplicas,
	})
}
