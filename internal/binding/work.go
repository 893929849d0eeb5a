package binding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/overrides"
)

// ManagedLabel marks member objects managed by Lifeboat; the execution
// controller refuses to update or delete member objects without it. Not in
// api/ (Karmada keeps it in pkg/util), so defined here.
const ManagedLabel = "karmada.io/managed"

// StateInjector changes the manifest of one target cluster before the Work
// is written: the failover issue injects preserved state (labels captured
// from the evicted copy) here. It must change only what it owns, and return
// an error to fail the Work of that cluster (the binding gets an event and
// is retried). A nil StateInjector does nothing.
type StateInjector func(binding client.Object, spec *workv1alpha2.ResourceBindingSpec, cluster string, manifest *unstructured.Unstructured) error

// Interpreter is the part of internal/interpreter.Interpreter the binding
// controllers use; interpreter.NewDefault() satisfies it. Declared here so
// that tests can pass a small fake.
type Interpreter interface {
	// GetReplicas says whether the object is a workload with replicas.
	GetReplicas(obj *unstructured.Unstructured) (replicas int32, requirements *workv1alpha2.ReplicaRequirements, ok bool, err error)
	// ReviseReplica returns a copy of obj asking for replicas.
	ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error)
	// AggregateStatus returns a copy of the template whose status sums up
	// the members' statuses.
	AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error)
}

// renderInput is everything one Work is built from.
type renderInput struct {
	binding  bindingObject
	template *unstructured.Unstructured
	target   target
	cluster  *clusterv1alpha1.Cluster
	cops     []policyv1alpha1.ClusterOverridePolicy
	ops      []policyv1alpha1.OverridePolicy
	interp   Interpreter
	inject   StateInjector
	// defaultPurgeMode decides fencing for bindings without a purge mode.
	defaultPurgeMode policyv1alpha1.PurgeMode
}

// overrideError is a failure to apply override policies; it is reported to
// users as ApplyOverridePolicyFailed.
type overrideError struct{ err error }

func (e *overrideError) Error() string { return e.err.Error() }
func (e *overrideError) Unwrap() error { return e.err }

// renderWork builds the Work of one target cluster, in Karmada's order:
//  1. copy the template without server-set metadata and status;
//  2. revise the replicas to the cluster's share (scheduled clusters of a
//     workload only);
//  3. apply the override policies for the cluster, refusing one that
//     changes the apiVersion, kind, namespace or name;
//  4. inject preserved state (hook), held to the same identity;
//  5. remove any fencing marks, then add the labels and annotations that
//     tie the manifest to its Work, binding and template, and, for a copy
//     in a Pull cluster that is fenced, the marks its agent fences it by.
func renderWork(in renderInput) (*workv1alpha1.Work, error) {
	b := in.binding
	manifest := pruneTemplate(in.template)

	revised := false
	if in.target.scheduled && (b.spec.Replicas > 0 || b.spec.ReplicaRequirements != nil) {
		_, _, ok, err := in.interp.GetReplicas(in.template)
		if err != nil {
			return nil, fmt.Errorf("interpreting replicas: %w", err)
		}
		if ok {
			if manifest, err = in.interp.ReviseReplica(manifest, int64(in.target.replicas)); err != nil {
				return nil, fmt.Errorf("revising replicas to %d: %w", in.target.replicas, err)
			}
			// A revision rule (a script) may not rename the object: the
			// override policies and the Work are matched to the template.
			if err := overrides.IdentityChange(in.template, manifest); err != nil {
				return nil, fmt.Errorf("revising replicas to %d: %w", in.target.replicas, err)
			}
			revised = true
		}
	}

	res, err := overrides.Apply(manifest, in.cluster, in.cops, in.ops)
	if err != nil {
		return nil, &overrideError{err: err}
	}
	manifest = res.Object
	appliedAnnotations, err := res.Annotations()
	if err != nil {
		return nil, err
	}

	if in.inject != nil {
		if err := in.inject(b.obj, b.spec, in.target.cluster, manifest); err != nil {
			return nil, fmt.Errorf("injecting preserved state: %w", err)
		}
		if err := overrides.IdentityChange(in.template, manifest); err != nil {
			return nil, fmt.Errorf("injecting preserved state: %w", err)
		}
	}

	name := WorkName(in.template.GetKind(), in.template.GetName(), in.template.GetNamespace())
	namespace := ExecutionNamespace(in.target.cluster)
	conflict := conflictResolution(in.template, b.spec)

	labels := manifest.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[b.permanentIDLabel()] = b.permanentID()
	labels[ManagedLabel] = "true"
	ann := manifest.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	// The fencing marks are the binding controller's alone: one from the
	// template, an override or preserved state would have the agent fence
	// a copy the control plane does not count as fenced.
	for _, k := range []string{fencing.ActionLabel, fencing.AfterAnnotation, fencing.ReplicasAnnotation} {
		delete(labels, k)
		delete(ann, k)
	}
	if in.cluster.Spec.SyncMode == clusterv1alpha1.Pull {
		if f, ok := fencing.For(b.spec, in.defaultPurgeMode); ok {
			l, a := f.Marks()
			maps.Copy(labels, l)
			maps.Copy(ann, a)
		}
	}
	manifest.SetLabels(labels)
	maps.Copy(ann, b.referenceAnnotations())
	if g := in.template.GetGeneration(); g > 0 {
		ann[workv1alpha1.ResourceTemplateGenerationAnnotationKey] = strconv.FormatInt(g, 10)
	}
	ann[workv1alpha1.ResourceTemplateUIDAnnotation] = string(in.template.GetUID())
	ann[workv1alpha1.WorkNameAnnotation] = name
	ann[workv1alpha1.WorkNamespaceAnnotation] = namespace
	ann[workv1alpha1.ResourceConflictResolutionAnnotation] = conflict
	ann[workv1alpha1.ManagedLabels] = strings.Join(slices.Sorted(maps.Keys(labels)), ",")
	ann[workv1alpha1.ManagedAnnotation] = "" // listed in itself
	ann[workv1alpha1.ManagedAnnotation] = strings.Join(slices.Sorted(maps.Keys(ann)), ",")
	manifest.SetAnnotations(ann)

	raw, err := manifest.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}

	workAnn := b.referenceAnnotations()
	workAnn[workv1alpha1.ResourceConflictResolutionAnnotation] = conflict
	maps.Copy(workAnn, appliedAnnotations)
	if revised {
		workAnn[workv1alpha1.WorkReplicasAnnotation] = strconv.FormatInt(int64(in.target.replicas), 10)
	}

	return &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			Labels:      map[string]string{b.permanentIDLabel(): b.permanentID()},
			Annotations: workAnn,
			Finalizers:  []string{workv1alpha1.ExecutionControllerFinalizer},
		},
		Spec: workv1alpha1.WorkSpec{
			Workload:                    workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}},
			SuspendDispatching:          trueOrNil(dispatchingSuspended(b.spec, in.target.cluster)),
			PreserveResourcesOnDeletion: trueOrNil(ptr.Deref(b.spec.PreserveResourcesOnDeletion, false)),
		},
	}, nil
}

func trueOrNil(v bool) *bool {
	if v {
		return ptr.To(true)
	}
	return nil
}

// conflictResolution is the template's own conflict-resolution annotation
// when it is valid, else overwrite when the binding says Overwrite, else
// abort.
func conflictResolution(template *unstructured.Unstructured, spec *workv1alpha2.ResourceBindingSpec) string {
	switch v := template.GetAnnotations()[workv1alpha1.ResourceConflictResolutionAnnotation]; v {
	case workv1alpha1.ObjectOverwrite, workv1alpha1.ObjectAbort:
		return v
	}
	if spec.ConflictResolution == policyv1alpha1.ConflictOverwrite {
		return workv1alpha1.ObjectOverwrite
	}
	return workv1alpha1.ObjectAbort
}

func dispatchingSuspended(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	s := spec.Suspension
	if s == nil {
		return false
	}
	if ptr.Deref(s.Dispatching, false) {
		return true
	}
	return s.DispatchingOnClusters != nil && slices.Contains(s.DispatchingOnClusters.ClusterNames, cluster)
}

// pruneTemplate returns a copy of the template without what the control
// plane's API server set (identity, versions, owners, finalizers, status)
// and without the fields a member's controllers own for a few kinds.
func pruneTemplate(template *unstructured.Unstructured) *unstructured.Unstructured {
	obj := template.DeepCopy()
	for _, f := range []string{"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
		"managedFields", "resourceVersion", "selfLink", "uid", "ownerReferences", "finalizers"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(obj.Object, "status")

	switch obj.GroupVersionKind().GroupKind().String() {
	case "Deployment.apps":
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", "deployment.kubernetes.io/revision")
	case "Service":
		if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
		}
	case "Job.batch":
		unstructured.RemoveNestedField(obj.Object, "spec", "ttlSecondsAfterFinished")
		if manual, _, _ := unstructured.NestedBool(obj.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(obj.Object, "spec", "selector")
			for _, l := range []string{"controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"} {
				unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "labels", l)
			}
		}
	}
	if len(obj.GetAnnotations()) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations")
	}
	return obj
}

// ownedWorkAnnotations are the Work annotations this controller removes
// when it no longer wants them; other annotations are only ever added.
var ownedWorkAnnotations = []string{policyv1alpha1.AppliedOverrides, policyv1alpha1.AppliedClusterOverrides, workv1alpha1.WorkReplicasAnnotation}

// mergeWork returns existing updated to desired, and whether anything
// changed. Labels, annotations and finalizers are merged (others may add
// their own); the spec is replaced.
func mergeWork(existing, desired *workv1alpha1.Work) (*workv1alpha1.Work, bool, error) {
	out := existing.DeepCopy()
	changed := false
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		if out.Labels[k] != v {
			out.Labels[k], changed = v, true
		}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for _, k := range ownedWorkAnnotations {
		if _, want := desired.Annotations[k]; !want {
			if _, has := out.Annotations[k]; has {
				delete(out.Annotations, k)
				changed = true
			}
		}
	}
	for k, v := range desired.Annotations {
		if out.Annotations[k] != v {
			out.Annotations[k], changed = v, true
		}
	}
	for _, f := range desired.Finalizers {
		if !slices.Contains(out.Finalizers, f) {
			out.Finalizers, changed = append(out.Finalizers, f), true
		}
	}
	same, err := sameSpec(&out.Spec, &desired.Spec)
	if err != nil {
		return nil, false, err
	}
	if !same {
		out.Spec, changed = desired.Spec, true
	}
	return out, changed, nil
}

// sameSpec compares Work specs; manifests are compared as JSON values, so
// key order and number formatting do not matter.
func sameSpec(a, b *workv1alpha1.WorkSpec) (bool, error) {
	if ptr.Deref(a.SuspendDispatching, false) != ptr.Deref(b.SuspendDispatching, false) ||
		ptr.Deref(a.PreserveResourcesOnDeletion, false) != ptr.Deref(b.PreserveResourcesOnDeletion, false) ||
		len(a.Workload.Manifests) != len(b.Workload.Manifests) {
		return false, nil
	}
	for i := range a.Workload.Manifests {
		ra, err := a.Workload.Manifests[i].JSON()
		if err != nil {
			return false, err
		}
		rb, err := b.Workload.Manifests[i].JSON()
		if err != nil {
			return false, err
		}
		same, err := sameJSON(ra, rb)
		if err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// sameJSON reports whether two JSON documents hold the same value. Empty
// documents equal each other only.
func sameJSON(a, b []byte) (bool, error) {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b), nil
	}
	va, err := decodeJSON(a)
	if err != nil {
		return false, err
	}
	vb, err := decodeJSON(b)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(va, vb), nil
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding JSON: %w", err)
	}
	return v, nil
}
