package interpreter

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
)

// The health rules follow Karmada's native ones (pipeline reference §7.1),
// plus a Job rule Karmada lacks. Application failover acts on Unhealthy and
// treats Unknown like Healthy for its timer, so a rule says Unhealthy
// whenever the member is not (yet) where it should be.
//
// Generation lag: a workload whose controller has not observed its current
// generation (status.observedGeneration < metadata.generation, which
// includes a brand-new object without status) is Unhealthy, not Unknown,
// as in Karmada. The lag is normally milliseconds, far below any failover
// toleration; when it persists the member's controllers are not working,
// and the workload must count as failing there. Unknown would reset the
// failover timer and pin the workload to a broken member forever.

func healthOf(healthy bool) workv1alpha1.ResourceHealth {
	if healthy {
		return workv1alpha1.ResourceHealthy
	}
	return workv1alpha1.ResourceUnhealthy
}

// deploymentHealth: the controller has observed the current generation,
// every desired replica runs the current template, and all of them are
// available. 0/2 available is Unhealthy (pods that cannot become ready).
func deploymentHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	d := &appsv1.Deployment{}
	if err := decode(obj, d); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	s := d.Status
	return healthOf(s.ObservedGeneration >= d.Generation &&
		(d.Spec.Replicas == nil || s.UpdatedReplicas >= *d.Spec.Replicas) &&
		s.AvailableReplicas >= s.UpdatedReplicas), nil
}

// statefulSetHealth: the Deployment rule.
func statefulSetHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	sts := &appsv1.StatefulSet{}
	if err := decode(obj, sts); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	s := sts.Status
	return healthOf(s.ObservedGeneration >= sts.Generation &&
		(sts.Spec.Replicas == nil || s.UpdatedReplicas >= *sts.Spec.Replicas) &&
		s.AvailableReplicas >= s.UpdatedReplicas), nil
}

// replicaSetHealth: observed, and as many available replicas as desired
// (unset spec.replicas means the API default, 1).
func replicaSetHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	rs := &appsv1.ReplicaSet{}
	if err := decode(obj, rs); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	return healthOf(rs.Status.ObservedGeneration >= rs.Generation &&
		rs.Status.AvailableReplicas >= ptr.Deref(rs.Spec.Replicas, 1)), nil
}

// daemonSetHealth: observed, every scheduled pod updated and available.
func daemonSetHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	ds := &appsv1.DaemonSet{}
	if err := decode(obj, ds); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	s := ds.Status
	return healthOf(s.ObservedGeneration >= ds.Generation &&
		s.UpdatedNumberScheduled >= s.DesiredNumberScheduled &&
		s.NumberAvailable >= s.UpdatedNumberScheduled), nil
}

// jobHealth (Lifeboat; Karmada has no Job rule and calls every Job
// healthy):
//  1. failed, or about to (FailureTarget: the controller is terminating its
//     pods after a backoff-limit or deadline failure): Unhealthy;
//  2. complete, suspended or between pods (no active pod): Healthy;
//  3. running with active pods of which none is ready (status.ready, set by
//     Kubernetes >= 1.29): Unhealthy. Pods that cannot start (image pull
//     errors, unschedulable) never fail the Job by themselves, so without
//     this rule such a Job would look healthy forever. Like a Deployment
//     with 0 available replicas, a Job whose pods are still starting is
//     briefly Unhealthy; failover tolerates that for tolerationSeconds.
//  4. otherwise Healthy: pods that fail are retried within the backoff
//     limit, and only the Job controller knows when it is reached.
func jobHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	job := &batchv1.Job{}
	if err := decode(obj, job); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	s := job.Status
	switch {
	case jobConditionTrue(s.Conditions, batchv1.JobFailed), jobConditionTrue(s.Conditions, batchv1.JobFailureTarget):
		return workv1alpha1.ResourceUnhealthy, nil
	case s.Active == 0:
		return workv1alpha1.ResourceHealthy, nil
	case s.Ready != nil && *s.Ready == 0:
		return workv1alpha1.ResourceUnhealthy, nil
	}
	return workv1alpha1.ResourceHealthy, nil
}

// podHealth: Succeeded, or Running and Ready.
func podHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	pod := &corev1.Pod{}
	if err := decode(obj, pod); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return workv1alpha1.ResourceHealthy, nil
	case corev1.PodRunning:
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				return healthOf(c.Status == corev1.ConditionTrue), nil
			}
		}
	}
	return workv1alpha1.ResourceUnhealthy, nil
}

// persistentVolumeClaimHealth: Bound.
func persistentVolumeClaimHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := decode(obj, pvc); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	return healthOf(pvc.Status.Phase == corev1.ClaimBound), nil
}

// serviceHealth: any type but LoadBalancer, or a load balancer with an
// address.
func serviceHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	svc := &corev1.Service{}
	if err := decode(obj, svc); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return workv1alpha1.ResourceHealthy, nil
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" || in.Hostname != "" {
			return workv1alpha1.ResourceHealthy, nil
		}
	}
	return workv1alpha1.ResourceUnhealthy, nil
}

// ingressHealth: the ingress controller published an address.
func ingressHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	ing := &networkingv1.Ingress{}
	if err := decode(obj, ing); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	for _, in := range ing.Status.LoadBalancer.Ingress {
		if in.IP != "" || in.Hostname != "" {
			return workv1alpha1.ResourceHealthy, nil
		}
	}
	return workv1alpha1.ResourceUnhealthy, nil
}

// podDisruptionBudgetHealth: at least as many healthy pods as desired.
func podDisruptionBudgetHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	if err := decode(obj, pdb); err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	return healthOf(pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy), nil
}

func jobConditionTrue(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
