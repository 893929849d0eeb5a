package workstatus

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
)

// RequeueKind re-reads the member objects of every Work that holds an
// object of kind gvk, whose interpreter rules changed (a
// ResourceInterpreterCustomization for it was created, changed or
// deleted): their health and status are interpreted again with the new
// rules. It lists Works from the cache and only enqueues.
func (r *Reconciler) RequeueKind(ctx context.Context, gvk schema.GroupVersionKind) {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Works to interpret again", "kind", gvk.String())
		return
	}
	n := 0
	for i := range works.Items {
		w := &works.Items[i]
		if _, ok := execution.ClusterOfNamespace(w.Namespace); !ok || !holdsKind(w, gvk) {
			continue
		}
		r.queue.Add(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
		n++
	}
	ctrl.LoggerFrom(ctx).V(1).Info("interpreting Works again after a rule change", "kind", gvk.String(), "works", n)
}

// holdsKind reports whether one of w's manifests is of kind gvk.
func holdsKind(w *workv1alpha1.Work, gvk schema.GroupVersionKind) bool {
	for i := range w.Spec.Workload.Manifests {
		raw, err := w.Spec.Workload.Manifests[i].JSON()
		if err != nil {
			continue
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err == nil && tm.GroupVersionKind() == gvk {
			return true
		}
	}
	return false
}
