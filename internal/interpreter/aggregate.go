package interpreter

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// The aggregation rules write a template's status from its members'
// reflected statuses. Each rule starts from the template's current status
// and changes only the fields it owns, and it computes every value from its
// inputs (no clock), so aggregating the same inputs twice gives the same
// status and the status controller writes nothing the second time.

// memberStatus is one member's decoded reflected status.
type memberStatus[T any] struct {
	cluster string
	status  T
}

// decodeItems decodes the items that carry a status; the others (not
// applied, or not reflected yet) are skipped. all reports whether every
// item had one.
func decodeItems[T any](items []workv1alpha2.AggregatedStatusItem) (statuses []memberStatus[T], all bool, err error) {
	for _, item := range items {
		if item.Status == nil || len(item.Status.Raw) == 0 {
			continue
		}
		var s T
		if err := json.Unmarshal(item.Status.Raw, &s); err != nil {
			return nil, false, fmt.Errorf("decode status from cluster %s: %w", item.ClusterName, err)
		}
		statuses = append(statuses, memberStatus[T]{cluster: item.ClusterName, status: s})
	}
	return statuses, len(statuses) == len(items), nil
}

// addCount adds a member's counter to the sum of the others. The counters
// are int32, and members' counts can add up past the largest int32
// (2147483647), where a plain + wraps to a negative total: the sum is taken
// in int64 and held at the int32 bounds.
func addCount(sum, n int32) int32 {
	return int32(min(max(int64(sum)+int64(n), math.MinInt32), math.MaxInt32))
}

// observedGeneration is the template's status.observedGeneration after
// aggregation: the template's generation once every member reports a status
// that has caught up with it (see memberGenerations.caughtUp), else the
// previous value. GitOps tools (Argo CD) read it to know whether the status
// describes the current spec. With no member at all nothing has observed
// anything, so the previous value stays (Karmada would claim the current
// generation).
func observedGeneration(previous, templateGeneration int64, all bool, caughtUp []bool) int64 {
	if !all || len(caughtUp) == 0 {
		return previous
	}
	for _, ok := range caughtUp {
		if !ok {
			return previous
		}
	}
	return templateGeneration
}

func aggregateDeployment(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	d := &appsv1.Deployment{}
	if err := decode(template, d); err != nil {
		return nil, err
	}
	members, all, err := decodeItems[reflectedDeploymentStatus](items)
	if err != nil {
		return nil, err
	}
	s := d.Status
	s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas = 0, 0, 0, 0, 0
	caughtUp := make([]bool, 0, len(members))
	for _, m := range members {
		s.Replicas = addCount(s.Replicas, m.status.Replicas)
		s.UpdatedReplicas = addCount(s.UpdatedReplicas, m.status.UpdatedReplicas)
		s.ReadyReplicas = addCount(s.ReadyReplicas, m.status.ReadyReplicas)
		s.AvailableReplicas = addCount(s.AvailableReplicas, m.status.AvailableReplicas)
		s.UnavailableReplicas = addCount(s.UnavailableReplicas, m.status.UnavailableReplicas)
		caughtUp = append(caughtUp, m.status.caughtUp(m.status.ObservedGeneration, d.Generation))
	}
	s.ObservedGeneration = observedGeneration(d.Status.ObservedGeneration, d.Generation, all, caughtUp)
	return template, setStatus(template, s)
}

func aggregateStatefulSet(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	sts := &appsv1.StatefulSet{}
	if err := decode(template, sts); err != nil {
		return nil, err
	}
	members, all, err := decodeItems[reflectedStatefulSetStatus](items)
	if err != nil {
		return nil, err
	}
	s := sts.Status
	s.Replicas, s.ReadyReplicas, s.CurrentReplicas, s.UpdatedReplicas, s.AvailableReplicas = 0, 0, 0, 0, 0
	caughtUp := make([]bool, 0, len(members))
	for _, m := range members {
		s.Replicas = addCount(s.Replicas, m.status.Replicas)
		s.ReadyReplicas = addCount(s.ReadyReplicas, m.status.ReadyReplicas)
		s.CurrentReplicas = addCount(s.CurrentReplicas, m.status.CurrentReplicas)
		s.UpdatedReplicas = addCount(s.UpdatedReplicas, m.status.UpdatedReplicas)
		s.AvailableReplicas = addCount(s.AvailableReplicas, m.status.AvailableReplicas)
		caughtUp = append(caughtUp, m.status.caughtUp(m.status.ObservedGeneration, sts.Generation))
	}
	s.ObservedGeneration = observedGeneration(sts.Status.ObservedGeneration, sts.Generation, all, caughtUp)
	return template, setStatus(template, s)
}

func aggregateDaemonSet(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	ds := &appsv1.DaemonSet{}
	if err := decode(template, ds); err != nil {
		return nil, err
	}
	members, all, err := decodeItems[reflectedDaemonSetStatus](items)
	if err != nil {
		return nil, err
	}
	s := ds.Status
	s.CurrentNumberScheduled, s.DesiredNumberScheduled, s.NumberAvailable, s.NumberMisscheduled = 0, 0, 0, 0
	s.NumberReady, s.UpdatedNumberScheduled, s.NumberUnavailable = 0, 0, 0
	caughtUp := make([]bool, 0, len(members))
	for _, m := range members {
		s.CurrentNumberScheduled = addCount(s.CurrentNumberScheduled, m.status.CurrentNumberScheduled)
		s.DesiredNumberScheduled = addCount(s.DesiredNumberScheduled, m.status.DesiredNumberScheduled)
		s.NumberAvailable = addCount(s.NumberAvailable, m.status.NumberAvailable)
		s.NumberMisscheduled = addCount(s.NumberMisscheduled, m.status.NumberMisscheduled)
		s.NumberReady = addCount(s.NumberReady, m.status.NumberReady)
		s.UpdatedNumberScheduled = addCount(s.UpdatedNumberScheduled, m.status.UpdatedNumberScheduled)
		s.NumberUnavailable = addCount(s.NumberUnavailable, m.status.NumberUnavailable)
		caughtUp = append(caughtUp, m.status.caughtUp(m.status.ObservedGeneration, ds.Generation))
	}
	s.ObservedGeneration = observedGeneration(ds.Status.ObservedGeneration, ds.Generation, all, caughtUp)
	return template, setStatus(template, s)
}

func aggregateReplicaSet(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	rs := &appsv1.ReplicaSet{}
	if err := decode(template, rs); err != nil {
		return nil, err
	}
	members, all, err := decodeItems[reflectedReplicaSetStatus](items)
	if err != nil {
		return nil, err
	}
	s := rs.Status
	s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas = 0, 0, 0, 0
	caughtUp := make([]bool, 0, len(members))
	for _, m := range members {
		s.Replicas = addCount(s.Replicas, m.status.Replicas)
		s.FullyLabeledReplicas = addCount(s.FullyLabeledReplicas, m.status.FullyLabeledReplicas)
		s.ReadyReplicas = addCount(s.ReadyReplicas, m.status.ReadyReplicas)
		s.AvailableReplicas = addCount(s.AvailableReplicas, m.status.AvailableReplicas)
		caughtUp = append(caughtUp, m.status.caughtUp(m.status.ObservedGeneration, rs.Generation))
	}
	s.ObservedGeneration = observedGeneration(rs.Status.ObservedGeneration, rs.Generation, all, caughtUp)
	return template, setStatus(template, s)
}

// Condition reasons Lifeboat writes on an aggregated Job.
const (
	jobReasonCompleted = "Completed"
	jobReasonFailed    = "JobFailed"
)

// aggregateJob sums the members' pod counters and finishes the template
// when every member has finished. The Job status rules of the API server
// (Kubernetes >= 1.31 with JobManagedBy) shape it, since a status they
// reject would never be written:
//   - a finished template (Complete or Failed) is final: returned unchanged;
//   - succeeded and failed never decrease (a member leaving after failover
//     does not lower them); startTime, once set, never changes;
//   - Complete=True comes with SuccessCriteriaMet=True and completionTime;
//     Failed=True comes with FailureTarget=True; both need startTime and
//     active == 0. So, unlike Karmada (which marks the template Failed as soon
//     as one member fails), Failed waits until every member has finished
//     and at least one failed.
//
// Condition times are members' times (latest completion, latest failure),
// never "now", so the result is stable.
func aggregateJob(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	job := &batchv1.Job{}
	if err := decode(template, job); err != nil {
		return nil, err
	}
	old := job.Status
	if jobConditionTrue(old.Conditions, batchv1.JobComplete) || jobConditionTrue(old.Conditions, batchv1.JobFailed) {
		return template, nil
	}
	members, all, err := decodeItems[batchv1.JobStatus](items)
	if err != nil {
		return nil, err
	}
	s := *old.DeepCopy()
	s.Active, s.Succeeded, s.Failed = 0, 0, 0
	var start, completion, failedAt *metav1.Time
	var complete int
	var failedIn []string
	for _, m := range members {
		ms := m.status
		s.Active = addCount(s.Active, ms.Active)
		s.Succeeded = addCount(s.Succeeded, ms.Succeeded)
		s.Failed = addCount(s.Failed, ms.Failed)
		start = earliest(start, ms.StartTime)
		switch {
		case jobConditionTrue(ms.Conditions, batchv1.JobComplete):
			complete++
			completion = latest(completion, ms.CompletionTime)
		case jobConditionTrue(ms.Conditions, batchv1.JobFailed):
			failedIn = append(failedIn, m.cluster)
			for _, c := range ms.Conditions {
				if c.Type == batchv1.JobFailed {
					failedAt = latest(failedAt, &c.LastTransitionTime)
				}
			}
		}
	}
	s.Succeeded = max(s.Succeeded, old.Succeeded)
	s.Failed = max(s.Failed, old.Failed)
	if s.StartTime == nil {
		s.StartTime = start
	}

	finished := all && len(members) > 0 && complete+len(failedIn) == len(members) && s.StartTime != nil
	switch {
	case finished && len(failedIn) == 0 && completion != nil:
		completion = latest(completion, s.StartTime)
		s.Active = 0
		s.CompletionTime = completion
		msg := "Job completed in every member cluster"
		s.Conditions = setJobCondition(s.Conditions, batchv1.JobSuccessCriteriaMet, jobReasonCompleted, msg, *completion)
		s.Conditions = setJobCondition(s.Conditions, batchv1.JobComplete, jobReasonCompleted, msg, *completion)
	case finished && len(failedIn) > 0:
		if failedAt == nil || failedAt.IsZero() {
			failedAt = s.StartTime
		}
		s.Active = 0
		msg := "Job failed in member clusters: " + strings.Join(failedIn, ", ")
		s.Conditions = setJobCondition(s.Conditions, batchv1.JobFailureTarget, jobReasonFailed, msg, *failedAt)
		s.Conditions = setJobCondition(s.Conditions, batchv1.JobFailed, jobReasonFailed, msg, *failedAt)
	}
	return template, setStatus(template, s)
}

// setJobCondition sets condition t to True, replacing an existing one.
func setJobCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType, reason, msg string, at metav1.Time) []batchv1.JobCondition {
	c := batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: at, LastTransitionTime: at}
	for i := range conds {
		if conds[i].Type == t {
			conds[i] = c
			return conds
		}
	}
	return append(conds, c)
}

// aggregateCronJob keeps the latest schedule and success times of the
// members.
func aggregateCronJob(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	cj := &batchv1.CronJob{}
	if err := decode(template, cj); err != nil {
		return nil, err
	}
	members, _, err := decodeItems[batchv1.CronJobStatus](items)
	if err != nil {
		return nil, err
	}
	s := cj.Status
	for _, m := range members {
		s.LastScheduleTime = latest(s.LastScheduleTime, m.status.LastScheduleTime)
		s.LastSuccessfulTime = latest(s.LastSuccessfulTime, m.status.LastSuccessfulTime)
	}
	return template, setStatus(template, s)
}

// aggregatePod: Failed if any member's pod failed; else Pending while any is
// pending or not reported; else Running while any runs; Succeeded when all
// succeeded. A finished template (Succeeded or Failed) is final, as the API
// server allows no way back.
func aggregatePod(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	pod := &corev1.Pod{}
	if err := decode(template, pod); err != nil {
		return nil, err
	}
	if len(items) == 0 || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return template, nil
	}
	members, all, err := decodeItems[corev1.PodStatus](items)
	if err != nil {
		return nil, err
	}
	phases := map[corev1.PodPhase]bool{}
	if !all {
		phases[corev1.PodPending] = true
	}
	for _, m := range members {
		phases[m.status.Phase] = true
	}
	s := pod.Status
	switch {
	case phases[corev1.PodFailed]:
		s.Phase = corev1.PodFailed
	case phases[corev1.PodPending], phases[corev1.PodUnknown], phases[""]:
		s.Phase = corev1.PodPending
	case phases[corev1.PodRunning]:
		s.Phase = corev1.PodRunning
	default:
		s.Phase = corev1.PodSucceeded
	}
	return template, setStatus(template, s)
}

// aggregatePersistentVolumeClaim: Bound when bound everywhere, Lost if lost
// anywhere, else Pending.
func aggregatePersistentVolumeClaim(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := decode(template, pvc); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return template, nil
	}
	members, all, err := decodeItems[corev1.PersistentVolumeClaimStatus](items)
	if err != nil {
		return nil, err
	}
	bound, lost := all, false
	for _, m := range members {
		bound = bound && m.status.Phase == corev1.ClaimBound
		lost = lost || m.status.Phase == corev1.ClaimLost
	}
	s := pvc.Status
	switch {
	case lost:
		s.Phase = corev1.ClaimLost
	case bound:
		s.Phase = corev1.ClaimBound
	default:
		s.Phase = corev1.ClaimPending
	}
	return template, setStatus(template, s)
}

// aggregateService lists every member's load-balancer addresses (each
// once, in cluster order) on a LoadBalancer Service.
func aggregateService(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	svc := &corev1.Service{}
	if err := decode(template, svc); err != nil {
		return nil, err
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return template, nil
	}
	members, _, err := decodeItems[corev1.ServiceStatus](items)
	if err != nil {
		return nil, err
	}
	var ingress []corev1.LoadBalancerIngress
	for _, m := range members {
		ingress = appendUnique(ingress, m.status.LoadBalancer.Ingress...)
	}
	s := svc.Status
	s.LoadBalancer.Ingress = ingress
	return template, setStatus(template, s)
}

// aggregateIngress lists every member's load-balancer addresses.
func aggregateIngress(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	ing := &networkingv1.Ingress{}
	if err := decode(template, ing); err != nil {
		return nil, err
	}
	members, _, err := decodeItems[networkingv1.IngressStatus](items)
	if err != nil {
		return nil, err
	}
	var ingress []networkingv1.IngressLoadBalancerIngress
	for _, m := range members {
		ingress = appendUnique(ingress, m.status.LoadBalancer.Ingress...)
	}
	s := ing.Status
	s.LoadBalancer.Ingress = ingress
	return template, setStatus(template, s)
}

// aggregatePodDisruptionBudget sums the counters; disrupted pods are keyed
// "<cluster>/<pod>" since pod names repeat across members.
func aggregatePodDisruptionBudget(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	if err := decode(template, pdb); err != nil {
		return nil, err
	}
	members, _, err := decodeItems[policyv1.PodDisruptionBudgetStatus](items)
	if err != nil {
		return nil, err
	}
	s := pdb.Status
	s.DisruptionsAllowed, s.CurrentHealthy, s.DesiredHealthy, s.ExpectedPods = 0, 0, 0, 0
	s.DisruptedPods = nil
	for _, m := range members {
		s.DisruptionsAllowed = addCount(s.DisruptionsAllowed, m.status.DisruptionsAllowed)
		s.CurrentHealthy = addCount(s.CurrentHealthy, m.status.CurrentHealthy)
		s.DesiredHealthy = addCount(s.DesiredHealthy, m.status.DesiredHealthy)
		s.ExpectedPods = addCount(s.ExpectedPods, m.status.ExpectedPods)
		for pod, at := range m.status.DisruptedPods {
			if s.DisruptedPods == nil {
				s.DisruptedPods = map[string]metav1.Time{}
			}
			s.DisruptedPods[m.cluster+"/"+pod] = at
		}
	}
	return template, setStatus(template, s)
}

// aggregateHorizontalPodAutoscaler sums current and desired replicas.
func aggregateHorizontalPodAutoscaler(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := decode(template, hpa); err != nil {
		return nil, err
	}
	members, _, err := decodeItems[autoscalingv2.HorizontalPodAutoscalerStatus](items)
	if err != nil {
		return nil, err
	}
	s := hpa.Status
	s.CurrentReplicas, s.DesiredReplicas = 0, 0
	for _, m := range members {
		s.CurrentReplicas = addCount(s.CurrentReplicas, m.status.CurrentReplicas)
		s.DesiredReplicas = addCount(s.DesiredReplicas, m.status.DesiredReplicas)
	}
	return template, setStatus(template, s)
}

// appendUnique appends the values of add not already in list.
func appendUnique[T any](list []T, add ...T) []T {
	for _, v := range add {
		dup := false
		for _, have := range list {
			if reflect.DeepEqual(have, v) {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, v)
		}
	}
	return list
}

func earliest(a, b *metav1.Time) *metav1.Time {
	if b == nil || (a != nil && !b.Before(a)) {
		return a
	}
	return b.DeepCopy()
}

func latest(a, b *metav1.Time) *metav1.Time {
	if b == nil || (a != nil && !a.Before(b)) {
		return a
	}
	return b.DeepCopy()
}
