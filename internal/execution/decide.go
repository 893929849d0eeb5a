package execution

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

// FieldManager is the server-side apply field manager of member objects.
const FieldManager = "lifeboat"

// Reasons of the Applied condition.
const (
	ReasonAppliedSuccessful  = "AppliedSuccessful"
	ReasonAppliedFailed      = "AppliedFailed"
	ReasonResourceConflict   = "ResourceConflict"
	ReasonClusterUnreachable = "ClusterUnreachable"
	ReasonClusterNotFound    = "ClusterNotFound"
)

// Reasons of the Dispatching condition (Karmada's).
const (
	ReasonDispatching        = "Dispatching"
	ReasonSuspendDispatching = "SuspendDispatching"
)

// ConditionCleanup is a Lifeboat condition on a Work being deleted whose
// member objects could not be deleted yet (False, with the reason).
const ConditionCleanup = "Cleanup"

// Reasons of the Cleanup condition.
const (
	ReasonCleanupPending = "CleanupPending"
)

// CreatedNamespaceAnnotation marks a member namespace that Lifeboat created
// because an object it applied needed it (value "true"). Only namespaces
// carrying it are ever removed by Lifeboat for being empty (see package
// orphans); a namespace that existed before, or that someone else created,
// never carries it. Removing the annotation keeps the namespace.
const CreatedNamespaceAnnotation = "lifeboat.dev/created-namespace"

// MemberObjectsAnnotation, set to MemberObjectsDelete on a deleted Work of
// a Pull cluster, is the control plane's leave to the agent to delete the
// Work's member objects: the Work's binding no longer wants a Work in the
// cluster. The agent may not read bindings, so it deletes nothing without
// it. When the binding still wants one (the Work was deleted by hand, or
// just before the binding placed the cluster again) the control plane
// removes the agent's finalizer itself, at the moment it found the Work
// wanted, and the Work made again under the same name adopts the objects.
const MemberObjectsAnnotation = "lifeboat.dev/member-objects"

// MemberObjectsDelete is the value of MemberObjectsAnnotation.
const MemberObjectsDelete = "delete"

// DeleteAllowed says whether the control plane has let the agent delete a
// deleted Work's member objects (MemberObjectsAnnotation).
func DeleteAllowed(work metav1.Object) bool {
	return work.GetAnnotations()[MemberObjectsAnnotation] == MemberObjectsDelete
}

// NewCreatedNamespace is the namespace Lifeboat creates in a member: labelled
// managed (a Namespace Work adopts it without a conflict) and marked as
// created by Lifeboat.
func NewCreatedNamespace(name string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	ns.SetLabels(map[string]string{membercluster.ManagedLabel: membercluster.ManagedLabelValue})
	ns.SetAnnotations(map[string]string{CreatedNamespaceAnnotation: "true"})
	return ns
}

// CreatedByLifeboat says whether a member namespace carries
// CreatedNamespaceAnnotation.
func CreatedByLifeboat(ns metav1.Object) bool {
	return ns.GetAnnotations()[CreatedNamespaceAnnotation] == "true"
}

// NamespaceTerminatingRetry is how soon an object refused because its
// namespace is terminating in the member is applied again.
const NamespaceTerminatingRetry = 2 * time.Second

// NamespaceTerminatingError says the member refused an object because its
// namespace is being deleted. It is retried after NamespaceTerminatingRetry:
// once the namespace is gone, it is created afresh.
type NamespaceTerminatingError struct {
	Namespace, Cluster string
}

func (e *NamespaceTerminatingError) Error() string {
	return fmt.Sprintf("namespace %s is being deleted in cluster %s; applying again once it is gone", e.Namespace, e.Cluster)
}

// IsNamespaceTerminating reports whether err is a NamespaceTerminatingError.
func IsNamespaceTerminating(err error) bool {
	var t *NamespaceTerminatingError
	return errors.As(err, &t)
}

// ClusterOfNamespace returns the member cluster of an execution namespace
// (karmada-es-<cluster>), and false for any other namespace.
func ClusterOfNamespace(namespace string) (string, bool) {
	cluster, ok := strings.CutPrefix(namespace, clusterv1alpha1.ExecutionSpacePrefix)
	if !ok || cluster == "" {
		return "", false
	}
	return cluster, true
}

// WorkOf maps a member object of cluster back to its Work through the
// work.karmada.io/namespace and work.karmada.io/name annotations. Objects
// not labelled as managed, without the annotations, or pointing at another
// cluster's execution namespace have no Work.
func WorkOf(cluster string, obj metav1.Object) (types.NamespacedName, bool) {
	if obj.GetLabels()[membercluster.ManagedLabel] != membercluster.ManagedLabelValue {
		return types.NamespacedName{}, false
	}
	ann := obj.GetAnnotations()
	key := types.NamespacedName{Namespace: ann[workv1alpha1.WorkNamespaceAnnotation], Name: ann[workv1alpha1.WorkNameAnnotation]}
	if key.Name == "" || key.Namespace != clusterv1alpha1.ExecutionSpacePrefix+cluster {
		return types.NamespacedName{}, false
	}
	return key, true
}

// DesiredObject turns manifest into the object to apply in the member: the
// server-owned metadata and the status are dropped, and the object is marked
// as managed and pointed back at its Work (labels karmada.io/managed and
// work.karmada.io/permanent-id, binding permanent-id labels copied from the
// Work, annotations work.karmada.io/namespace and work.karmada.io/name, and
// the Work's conflict resolution when the manifest has none), and stamped
// with the Work's generation (work.lifeboat.dev/generation), which the work
// status controller reports with the object's status, and UID
// (work.lifeboat.dev/uid), which tells it the copy of an earlier Work of
// the same name.
func DesiredObject(manifest *unstructured.Unstructured, work *workv1alpha1.Work) *unstructured.Unstructured {
	obj := manifest.DeepCopy()
	delete(obj.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[membercluster.ManagedLabel] = membercluster.ManagedLabelValue
	for _, k := range []string{workv1alpha1.WorkPermanentIDLabel, workv1alpha2.ResourceBindingPermanentIDLabel, workv1alpha2.ClusterResourceBindingPermanentIDLabel} {
		if v := work.Labels[k]; v != "" {
			if _, set := labels[k]; !set {
				labels[k] = v
			}
		}
	}
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[workv1alpha1.WorkNamespaceAnnotation] = work.Namespace
	ann[workv1alpha1.WorkNameAnnotation] = work.Name
	ann[workv1alpha1.WorkGenerationAnnotation] = strconv.FormatInt(work.Generation, 10)
	if work.UID != "" {
		ann[workv1alpha1.WorkUIDAnnotation] = string(work.UID)
	}
	if _, set := ann[workv1alpha1.ResourceConflictResolutionAnnotation]; !set {
		if v := work.Annotations[workv1alpha1.ResourceConflictResolutionAnnotation]; v != "" {
			ann[workv1alpha1.ResourceConflictResolutionAnnotation] = v
		}
	}
	obj.SetAnnotations(ann)
	return obj
}

// ConflictError says an existing member object is not managed by Lifeboat
// and the manifest does not ask to overwrite it.
type ConflictError struct {
	Kind, Namespace, Name, Cluster string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s already exists in cluster %s and is not managed by Lifeboat; set annotation %s: %s on the resource template (or conflictResolution: Overwrite in its policy) to take it over",
		e.Kind, objectName(e.Namespace, e.Name), e.Cluster, workv1alpha1.ResourceConflictResolutionAnnotation, workv1alpha1.ObjectOverwrite)
}

func objectName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// IsManaged says whether a member object carries karmada.io/managed=true.
func IsManaged(obj metav1.Object) bool {
	return obj.GetLabels()[membercluster.ManagedLabel] == membercluster.ManagedLabelValue
}

// CheckConflict applies the conflict rule: an existing object that Lifeboat
// does not manage is only taken over when desired says overwrite.
func CheckConflict(cluster string, desired, observed *unstructured.Unstructured) error {
	if observed == nil || IsManaged(observed) {
		return nil
	}
	if desired.GetAnnotations()[workv1alpha1.ResourceConflictResolutionAnnotation] == workv1alpha1.ObjectOverwrite {
		return nil
	}
	return &ConflictError{Kind: desired.GetKind(), Namespace: desired.GetNamespace(), Name: desired.GetName(), Cluster: cluster}
}

// UpToDate says whether observed already holds everything desired sets, so
// that applying would change nothing. Fields only observed has (defaults,
// fields of other managers, status) do not count. Lists must have the same
// length and match element by element. Empty values in desired match absent
// ones, as API servers drop them.
func UpToDate(desired, observed *unstructured.Unstructured) bool {
	if observed == nil {
		return false
	}
	return subset(desired.Object, observed.Object)
}

func subset(want, have interface{}) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		h, ok := have.(map[string]interface{})
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, present := h[k]
			if !present {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !subset(wv, hv) {
				return false
			}
		}
		return true
	case []interface{}:
		h, ok := have.([]interface{})
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	case nil:
		return have == nil || isEmpty(have)
	default:
		if wn, ok := number(want); ok {
			hn, ok := number(have)
			return ok && wn == hn
		}
		return reflect.DeepEqual(want, have)
	}
}

func isEmpty(v interface{}) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return len(x) == 0
	case []interface{}:
		return len(x) == 0
	}
	return false
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// Outcome is what happened to one manifest.
type Outcome string

// Outcomes, from best to worst for the Applied condition.
const (
	OutcomeApplied     Outcome = "Applied"
	OutcomeUpToDate    Outcome = "UpToDate"
	OutcomeFailed      Outcome = "Failed"
	OutcomeConflict    Outcome = "Conflict"
	OutcomeUnreachable Outcome = "Unreachable"
)

// Result is the outcome of one manifest.
type Result struct {
	Ordinal int
	Outcome Outcome
	// Created is set when the object did not exist in the member before.
	Created bool
	Err     error
}

// AppliedCondition sums up the results of every manifest of a Work. All
// applied or up to date: True/AppliedSuccessful. Otherwise False, with the
// reason of the worst outcome (unreachable cluster, then conflict, then any
// other failure) and the errors in the message.
func AppliedCondition(results []Result, generation int64) metav1.Condition {
	var failed []Result
	for _, r := range results {
		if r.Outcome != OutcomeApplied && r.Outcome != OutcomeUpToDate {
			failed = append(failed, r)
		}
	}
	if len(failed) == 0 {
		return metav1.Condition{
			Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: generation,
			Reason: ReasonAppliedSuccessful, Message: "Manifest has been successfully applied",
		}
	}
	sort.SliceStable(failed, func(i, j int) bool { return failed[i].Ordinal < failed[j].Ordinal })
	reason := ReasonAppliedFailed
	msgs := make([]string, 0, len(failed))
	for _, r := range failed {
		switch {
		case r.Outcome == OutcomeUnreachable:
			reason = ReasonClusterUnreachable
		case r.Outcome == OutcomeConflict && reason != ReasonClusterUnreachable:
			reason = ReasonResourceConflict
		}
		msgs = append(msgs, fmt.Sprintf("manifest %d: %s", r.Ordinal, conditionError(r.Err)))
	}
	return metav1.Condition{
		Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason:  reason,
		Message: truncate(fmt.Sprintf("Failed to apply all manifests (%d/%d): %s", len(results)-len(failed), len(results), strings.Join(msgs, "; ")), 4000),
	}
}

// conditionError is how err is said in a condition's message. An
// unreachable member is named without the member cache's countdown to its
// next attempt and without the last connection error (as often as not
// another object's request): both change with every retry, and a message
// that changes is one more write of the Work each time, for every Work of
// a member that is down.
func conditionError(err error) string {
	if err == nil {
		return "<nil>"
	}
	var unreachable *membercluster.UnreachableError
	if errors.As(err, &unreachable) {
		return fmt.Sprintf("member cluster %s is unreachable", unreachable.Cluster)
	}
	return err.Error()
}

// DispatchingCondition is Karmada's Dispatching condition.
func DispatchingCondition(work *workv1alpha1.Work) metav1.Condition {
	if Suspended(work) {
		return metav1.Condition{Type: workv1alpha1.WorkDispatching, Status: metav1.ConditionFalse, ObservedGeneration: work.Generation,
			Reason: ReasonSuspendDispatching, Message: "Work dispatching is in a suspended state."}
	}
	return metav1.Condition{Type: workv1alpha1.WorkDispatching, Status: metav1.ConditionTrue, ObservedGeneration: work.Generation,
		Reason: ReasonDispatching, Message: "Work is being dispatched to member clusters."}
}

// Suspended says whether spec.suspendDispatching is set.
func Suspended(work *workv1alpha1.Work) bool {
	return work.Spec.SuspendDispatching != nil && *work.Spec.SuspendDispatching
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// ClusterState is what the Cluster object says about applying to it.
type ClusterState string

// Cluster states.
const (
	// ClusterUsable: push mode and not known to be down.
	ClusterUsable ClusterState = "Usable"
	// ClusterNotReady: the Ready condition is False or Unknown; wait for it
	// to come back (the Cluster watch re-enqueues the Works).
	ClusterNotReady ClusterState = "NotReady"
	// ClusterGone: no Cluster, or it is being deleted.
	ClusterGone ClusterState = "Gone"
	// ClusterPull: an agent in the member applies the Works.
	ClusterPull ClusterState = "Pull"
)

// StateOf classifies a Cluster (nil when it does not exist). A Cluster
// without a Ready condition yet is usable: its health is not known to be bad
// and the member cache reports it unreachable if it is.
func StateOf(cluster *clusterv1alpha1.Cluster) ClusterState {
	if cluster == nil || !cluster.DeletionTimestamp.IsZero() {
		return ClusterGone
	}
	if cluster.Spec.SyncMode == clusterv1alpha1.Pull {
		return ClusterPull
	}
	for _, c := range cluster.Status.Conditions {
		if c.Type == clusterv1alpha1.ClusterConditionReady && c.Status != metav1.ConditionTrue {
			return ClusterNotReady
		}
	}
	return ClusterUsable
}

// Applies says whether an execution controller applies the Works of
// cluster (nil when it does not exist): an agent (agent true) those of the
// Pull cluster it runs in, the control plane those of Push clusters. A
// missing Cluster is the control plane's to report and release; an agent
// reads only its own Cluster and leaves it alone.
func Applies(cluster *clusterv1alpha1.Cluster, agent bool) bool {
	if cluster == nil {
		return !agent
	}
	return (cluster.Spec.SyncMode == clusterv1alpha1.Pull) == agent
}

// CleanupOnDelete says whether a deleted Work's member objects are deleted
// (or released) before its finalizer goes, from what the Cluster says:
// not for a Cluster that no longer exists, nor for one being deleted whose
// member is not Ready (unjoining a member that is down must not wait for
// it); yes otherwise, also while a Cluster is being deleted with its member
// Ready, so that unjoining a reachable member removes what Lifeboat put
// there (the cluster controller bounds that wait). Nor for a Work made
// before its Cluster: one left by an earlier Cluster of that name (unjoined
// while its member was down, whose copies were to stay) is released, not
// finalized against the member joined again under the name.
func CleanupOnDelete(cluster *clusterv1alpha1.Cluster, work metav1.Object) bool {
	if cluster == nil {
		return false
	}
	made, joined := work.GetCreationTimestamp(), cluster.CreationTimestamp
	if !made.IsZero() && !joined.IsZero() && made.Before(&joined) {
		return false
	}
	if cluster.DeletionTimestamp.IsZero() {
		return true
	}
	return meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
}

// NeedsResync decides whether a member event may mean drift of a managed
// object: it was deleted, or something other than its status and
// bookkeeping metadata changed. Additions are the result of applying (or the
// informer's first list) and need nothing.
func NeedsResync(e membercluster.Event) bool {
	switch e.Type {
	case membercluster.Deleted:
		return true
	case membercluster.Updated:
		return e.Old == nil || changedOutsideStatus(e.Old, e.Object)
	}
	return false
}

func changedOutsideStatus(old, cur *packed.Object) bool {
	return !cur.RestEqual(old) ||
		!old.Labels().Equal(cur.Labels()) ||
		!old.Annotations().Equal(cur.Annotations()) ||
		!old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp())
}

// IsConflict reports whether err is a ConflictError.
func IsConflict(err error) bool {
	var c *ConflictError
	return errors.As(err, &c)
}

// releaseLabels and releaseAnnotations are the keys removed from a member
// object when its Work is deleted with preserveResourcesOnDeletion: the
// object stays, but nothing ties it to Lifeboat any more (a preserved
// namespace loses the mark that would let Lifeboat remove it once empty).
var (
	releaseLabels = []string{
		membercluster.ManagedLabel,
		workv1alpha1.WorkPermanentIDLabel,
		workv1alpha2.ResourceBindingPermanentIDLabel,
		workv1alpha2.ClusterResourceBindingPermanentIDLabel,
		policyv1alpha1.PropagationPolicyPermanentIDLabel,
		policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel,
	}
	releaseAnnotations = []string{
		workv1alpha1.WorkNamespaceAnnotation,
		workv1alpha1.WorkNameAnnotation,
		workv1alpha1.WorkGenerationAnnotation,
		workv1alpha1.WorkUIDAnnotation,
		workv1alpha1.ResourceConflictResolutionAnnotation,
		workv1alpha1.ResourceTemplateUIDAnnotation,
		workv1alpha1.ResourceTemplateGenerationAnnotationKey,
		workv1alpha1.ManagedLabels,
		workv1alpha1.ManagedAnnotation,
		workv1alpha2.ResourceBindingNamespaceAnnotationKey,
		workv1alpha2.ResourceBindingNameAnnotationKey,
		workv1alpha2.ClusterResourceBindingAnnotationKey,
		policyv1alpha1.PropagationPolicyNamespaceAnnotation,
		policyv1alpha1.PropagationPolicyNameAnnotation,
		policyv1alpha1.ClusterPropagationPolicyAnnotation,
		CreatedNamespaceAnnotation,
	}
)

// ReleasePatch returns the JSON merge patch that removes Lifeboat's labels
// and annotations from obj, and false when it carries none.
func ReleasePatch(obj metav1.Object) ([]byte, bool) {
	labels := map[string]interface{}{}
	for _, k := range releaseLabels {
		if _, ok := obj.GetLabels()[k]; ok {
			labels[k] = nil
		}
	}
	annotations := map[string]interface{}{}
	for _, k := range releaseAnnotations {
		if _, ok := obj.GetAnnotations()[k]; ok {
			annotations[k] = nil
		}
	}
	if len(labels) == 0 && len(annotations) == 0 {
		return nil, false
	}
	md := map[string]interface{}{}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	data, err := json.Marshal(map[string]interface{}{"metadata": md})
	if err != nil {
		return nil, false
	}
	return data, true
}

// RestoreFencedReplicas gives a copy its agent scaled to zero
// (fencing.ReplicasAnnotation) its replicas back when it is applied again
// and retained is about to keep the member's zero: a Deployment whose
// member owns its replicas (retain-replicas, an HPA there) would otherwise
// stay at zero for good, as an HPA does not scale up from zero. desired is
// the object before Retain: a copy the control plane asks zero of stays at
// zero. Otherwise retained is returned as it is.
func RestoreFencedReplicas(interp interpreter.Interpreter, desired, retained, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	had, ok := fencing.FencedReplicas(observed.GetAnnotations())
	if !ok || had == 0 {
		return retained, nil
	}
	kept, _, replicated, err := interp.GetReplicas(retained)
	if err != nil || !replicated || kept != 0 {
		return retained, err
	}
	asked, _, _, err := interp.GetReplicas(desired)
	if err != nil || asked == 0 {
		return retained, err
	}
	return interp.ReviseReplica(retained, int64(had))
}
