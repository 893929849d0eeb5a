// Package fencing holds the decisions of fencing: a copy of a workload in a
// Pull cluster that the control plane lost is stopped by the cluster's
// agent before the control plane's failover starts its replacement, so
// that the two never run at the same time.
//
// The timeline, from the last renewal R of the cluster's Lease (its
// spec.renewTime, written by the agent with its own clock just before the
// renewal that succeeded) with the Lease duration D (the agent's
// --cluster-lease-duration, written into spec.leaseDurationSeconds) and
// the workload's toleration A of the not-ready taint:
//
//  1. the agent, unable to renew since R, fences the copy at R + D + A
//     (Due);
//  2. the control plane treats the copy as stopped from R + D + A + M
//     (StoppedBy), M being the time the stop takes in the member (the
//     controller manager's --fencing-stop-margin), and only then lets a
//     Directly failover create the replacement without the old copy's
//     deletion being confirmed.
//
// Both sides read the same R and D, so no clock is compared across
// machines except through the margin.
package fencing

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// The marks the binding controller puts on the manifest of a fenced copy,
// which the member object carries: the agent finds the copies to fence in
// its own cluster, without the control plane.
const (
	// ActionLabel holds the FencingAction.
	ActionLabel = "fencing.lifeboat.dev/action"
	// AfterAnnotation holds A, in whole seconds.
	AfterAnnotation = "fencing.lifeboat.dev/after-seconds"
	// ReplicasAnnotation is put by the agent on a copy it scaled to zero:
	// the replicas it had. A copy whose replicas the member keeps (a
	// Deployment with resourcetemplate.karmada.io/retain-replicas, scaled
	// by an HPA there) gets them back when it is applied again.
	ReplicasAnnotation = "fencing.lifeboat.dev/replicas"
)

// FencedReplicas reads ReplicasAnnotation: the replicas a copy had before
// its agent scaled it to zero.
func FencedReplicas(annotations map[string]string) (int32, bool) {
	v, ok := annotations[ReplicasAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// MaxAfter bounds the toleration added to the Lease duration: a longer
// one counts as this long.
const MaxAfter = 7 * 24 * time.Hour

// ScaleRetry is how long past a copy's due time an agent tries a failing
// ScaleToZero (its replica rule errs) before it deletes the copy instead.
// The control plane's --fencing-stop-margin must cover it: a copy counted
// as stopped earlier may still run.
const ScaleRetry = 10 * time.Second

// MaxScan is the longest an agent waits between two searches of its member
// for copies that are due: a copy is stopped up to this long after its due
// time.
const MaxScan = 5 * time.Second

// PodTermination is a pod's default termination grace period: a copy
// scaled to zero or deleted may run this long after the agent stopped it.
const PodTermination = 30 * time.Second

// StopWithin is how long after its due time a fenced copy has stopped at
// the latest with default pod settings, whatever its replica rule does: a
// scan, the ScaleToZero retry, and the pods' termination.
const StopWithin = MaxScan + ScaleRetry + PodTermination

// Spec is how one copy is fenced.
type Spec struct {
	Action policyv1alpha1.FencingAction
	// After is the toleration A added to the Lease duration.
	After time.Duration
}

// For decides whether the copies of a binding are fenced, and how:
//  1. not without a purge mode of Directly (Immediately): the policy's, or
//     controllerDefault when the policy has no cluster failover;
//  2. not when fencing.enabled is false;
//  3. not when the placement tolerates the not-ready (or unreachable)
//     NoExecute taint forever: such a copy is never failed over, and
//     stopping it would only take it down;
//  4. otherwise with the policy's action (ScaleToZero by default) after the
//     longest toleration of those taints (0 when none).
func For(spec *workv1alpha2.ResourceBindingSpec, controllerDefault policyv1alpha1.PurgeMode) (Spec, bool) {
	var cf *policyv1alpha1.ClusterFailoverBehavior
	if spec.Failover != nil {
		cf = spec.Failover.Cluster
	}
	if cf.EffectivePurgeMode(controllerDefault) != policyv1alpha1.PurgeModeDirectly {
		return Spec{}, false
	}
	out := Spec{Action: policyv1alpha1.FencingScaleToZero}
	if cf != nil && cf.Fencing != nil {
		if !ptr.Deref(cf.Fencing.Enabled, true) {
			return Spec{}, false
		}
		if cf.Fencing.Action != "" {
			out.Action = cf.Fencing.Action
		}
	}
	var tolerations []corev1.Toleration
	if spec.Placement != nil {
		tolerations = spec.Placement.ClusterTolerations
	}
	for _, key := range []string{clusterv1alpha1.TaintClusterNotReady, clusterv1alpha1.TaintClusterUnreachable} {
		taint := corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
		for i := range tolerations {
			t := &tolerations[i]
			if !core.Tolerates(*t, taint) {
				continue
			}
			if t.TolerationSeconds == nil {
				return Spec{}, false
			}
			seconds := min(max(*t.TolerationSeconds, 0), int64(MaxAfter/time.Second))
			out.After = max(out.After, time.Duration(seconds)*time.Second)
		}
	}
	return out, true
}

// Marks are the label and annotation that ask the agent to fence a copy.
func (s Spec) Marks() (labels, annotations map[string]string) {
	return map[string]string{ActionLabel: string(s.Action)},
		map[string]string{AfterAnnotation: strconv.FormatInt(int64(s.After/time.Second), 10)}
}

// FromMarks reads a member object's marks; ok is false when it is not
// fenced. An unreadable delay counts as 0: fencing earlier is the safe
// side.
func FromMarks(labels, annotations map[string]string) (Spec, bool) {
	action := policyv1alpha1.FencingAction(labels[ActionLabel])
	switch action {
	case policyv1alpha1.FencingScaleToZero, policyv1alpha1.FencingDelete:
	default:
		return Spec{}, false
	}
	s := Spec{Action: action}
	if n, err := strconv.ParseInt(annotations[AfterAnnotation], 10, 64); err == nil && n > 0 {
		s.After = time.Duration(min(n, int64(MaxAfter/time.Second))) * time.Second
	}
	return s, true
}

// OfWork reads the fencing marks of a Work's first manifest: how its copy
// is fenced.
func OfWork(work *workv1alpha1.Work) (Spec, bool) {
	if len(work.Spec.Workload.Manifests) == 0 {
		return Spec{}, false
	}
	raw, err := work.Spec.Workload.Manifests[0].JSON()
	if err != nil {
		return Spec{}, false
	}
	var m unstructured.Unstructured
	if err := m.UnmarshalJSON(raw); err != nil {
		return Spec{}, false
	}
	return FromMarks(m.GetLabels(), m.GetAnnotations())
}

// Due is when the agent fences a copy: the Lease duration plus the copy's
// toleration after its last renewal.
func Due(lastRenewed time.Time, leaseDuration time.Duration, s Spec) time.Time {
	return lastRenewed.Add(leaseDuration + s.After)
}

// StoppedBy is from when the control plane counts a fenced copy as
// stopped: margin after the agent fences it, by the Lease's renewTime and
// leaseDurationSeconds. ok is false when the Lease says nothing to count
// from (never renewed, or no duration).
func StoppedBy(renewTime time.Time, leaseDurationSeconds int32, s Spec, margin time.Duration) (time.Time, bool) {
	if renewTime.IsZero() || leaseDurationSeconds <= 0 {
		return time.Time{}, false
	}
	return Due(renewTime, time.Duration(leaseDurationSeconds)*time.Second, s).Add(margin), true
}

// Condition is the binding condition that says whether its copies are
// fenced (a Lifeboat extension), with its reasons.
const (
	ConditionType          = "Fencing"
	ReasonFencedByAgents   = "FencedByAgents"
	ReasonPushNotFenceable = "PushClustersNotFenced"
)

// Condition tells a binding whose copies fencing applies to (For) which
// of them are fenced: True when every scheduled cluster is a Pull cluster,
// False naming the Push clusters, whose copies nothing can stop behind a
// partition. modes are the clusters' sync modes by name (a cluster missing
// there is left out). ok is false when fencing does not apply: the binding
// has no Fencing condition.
func Condition(spec *workv1alpha2.ResourceBindingSpec, modes map[string]clusterv1alpha1.ClusterSyncMode, controllerDefault policyv1alpha1.PurgeMode) (metav1.Condition, bool) {
	if _, ok := For(spec, controllerDefault); !ok {
		return metav1.Condition{}, false
	}
	var pull, push []string
	for _, c := range spec.Clusters {
		switch modes[c.Name] {
		case clusterv1alpha1.Pull:
			pull = append(pull, c.Name)
		case clusterv1alpha1.Push:
			push = append(push, c.Name)
		}
	}
	if len(push) > 0 {
		return metav1.Condition{Type: ConditionType, Status: metav1.ConditionFalse, Reason: ReasonPushNotFenceable,
			Message: fmt.Sprintf("%s: Push clusters cannot be fenced: behind a partition the control plane cannot stop the copy there, and a Directly failover from them waits for its deletion (at most --graceful-eviction-timeout)", strings.Join(push, ", "))}, true
	}
	return metav1.Condition{Type: ConditionType, Status: metav1.ConditionTrue, Reason: ReasonFencedByAgents,
		Message: fmt.Sprintf("the copies in %s are stopped by their agents when they lose the control plane, before a Directly failover replaces them", strings.Join(pull, ", "))}, true
}
