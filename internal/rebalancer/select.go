package rebalancer

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// workloads resolves the workloads of rb's spec, in order: spec.workloads,
// then the templates spec.workloadSelector matches (sorted), then those
// that failed over away from spec.failedOverFrom (sorted by binding).
func (r *Reconciler) workloads(ctx context.Context, rb *appsv1alpha1.WorkloadRebalancer) ([]appsv1alpha1.ObjectReference, error) {
	out := append([]appsv1alpha1.ObjectReference(nil), rb.Spec.Workloads...)
	if s := rb.Spec.WorkloadSelector; s != nil {
		selected, err := r.selected(ctx, s)
		switch {
		case meta.IsNoMatchError(err):
			r.Recorder.Eventf(rb, corev1.EventTypeWarning, EventReasonSelectorFailed,
				"spec.workloadSelector: no kind %q is served in %s; it selects nothing", s.Kind, s.APIVersion)
		case err != nil:
			return nil, err
		}
		out = append(out, selected...)
	}
	if from := rb.Spec.FailedOverFrom; from != "" {
		var rbs workv1alpha2.ResourceBindingList
		if err := r.Client.List(ctx, &rbs); err != nil {
			return nil, fmt.Errorf("listing ResourceBindings: %w", err)
		}
		var crbs workv1alpha2.ClusterResourceBindingList
		if err := r.Client.List(ctx, &crbs); err != nil {
			return nil, fmt.Errorf("listing ClusterResourceBindings: %w", err)
		}
		var bindings []bindingRecord
		for i := range rbs.Items {
			bindings = append(bindings, bindingRecord{spec: &rbs.Items[i].Spec, status: &rbs.Items[i].Status})
		}
		for i := range crbs.Items {
			bindings = append(bindings, bindingRecord{spec: &crbs.Items[i].Spec, status: &crbs.Items[i].Status})
		}
		out = append(out, failedOverFrom(bindings, from)...)
	}
	return out, nil
}

// selected lists the templates a WorkloadSelector matches, sorted.
func (r *Reconciler) selected(ctx context.Context, s *appsv1alpha1.WorkloadSelector) ([]appsv1alpha1.ObjectReference, error) {
	sel, err := metav1.LabelSelectorAsSelector(&s.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.workloadSelector.labelSelector: %w", err)
	}
	gv, err := schema.ParseGroupVersion(s.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("spec.workloadSelector.apiVersion: %w", err)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gv.WithKind(s.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	if s.Namespace != "" {
		opts = append(opts, client.InNamespace(s.Namespace))
	}
	if err := r.Templates.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %s %s for spec.workloadSelector: %w", s.APIVersion, s.Kind, err)
	}
	out := make([]appsv1alpha1.ObjectReference, 0, len(list.Items))
	for _, o := range list.Items {
		out = append(out, appsv1alpha1.ObjectReference{APIVersion: s.APIVersion, Kind: s.Kind, Namespace: o.Namespace, Name: o.Name})
	}
	slices.SortFunc(out, compareRefs)
	return out, nil
}

// bindingRecord is what failedOverFrom reads of a binding.
type bindingRecord struct {
	spec   *workv1alpha2.ResourceBindingSpec
	status *workv1alpha2.ResourceBindingStatus
}

// failedOverFrom returns, sorted, the templates of the bindings that failed
// over away from cluster and do not run there now: an entry of
// status.failoverHistory from cluster for a failure (any reason but
// Rebalance and Failback, which moved a healthy workload on purpose, and
// FailbackAbandoned, a failback given up), and cluster not in
// spec.clusters.
func failedOverFrom(bindings []bindingRecord, cluster string) []appsv1alpha1.ObjectReference {
	var out []appsv1alpha1.ObjectReference
	for _, b := range bindings {
		if slices.ContainsFunc(b.spec.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == cluster }) {
			continue
		}
		if !slices.ContainsFunc(b.status.FailoverHistory, func(h workv1alpha2.FailoverHistoryItem) bool {
			return h.FromCluster == cluster && h.Reason != workv1alpha2.EvictionReasonRebalance &&
				h.Reason != workv1alpha2.EvictionReasonFailback && h.Reason != workv1alpha2.EvictionReasonFailbackAbandoned
		}) {
			continue
		}
		res := b.spec.Resource
		out = append(out, appsv1alpha1.ObjectReference{APIVersion: res.APIVersion, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name})
	}
	slices.SortFunc(out, compareRefs)
	return out
}

func compareRefs(a, b appsv1alpha1.ObjectReference) int {
	for _, c := range [][2]string{{a.Namespace, b.Namespace}, {a.Name, b.Name}, {a.Kind, b.Kind}, {a.APIVersion, b.APIVersion}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}
