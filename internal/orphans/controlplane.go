package orphans

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
)

// IndexWorksByMemberNamespace indexes Works by the member namespaces they
// use (see MemberNamespaces).
const IndexWorksByMemberNamespace = "orphans.lifeboat.dev/member-namespace"

// memberNamespaceIndex is the field-index function of
// IndexWorksByMemberNamespace.
func memberNamespaceIndex(obj client.Object) []string {
	w, ok := obj.(*workv1alpha1.Work)
	if !ok {
		return nil
	}
	return execution.MemberNamespaces(w)
}

// ControlPlane answers what the rules ask of the control plane.
type ControlPlane struct {
	// Reader is read for the judgement (the manager's cache in the
	// controller manager).
	Reader client.Reader
	// Live is read right before a removal (the API server).
	Live client.Reader
	// Indexed says Reader serves IndexWorksByMemberNamespace; without it,
	// the Works of the cluster are listed and read.
	Indexed bool
}

// WorkNames returns the names of the Works of cluster in Reader.
func (c ControlPlane) WorkNames(ctx context.Context, cluster string) (map[string]bool, error) {
	space := clusterv1alpha1.ExecutionSpacePrefix + cluster
	var works workv1alpha1.WorkList
	if err := c.Reader.List(ctx, &works, client.InNamespace(space), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the Works of %s: %w", space, err)
	}
	out := make(map[string]bool, len(works.Items))
	for i := range works.Items {
		out[works.Items[i].Name] = true
	}
	return out, nil
}

func workExists(ctx context.Context, r client.Reader, key types.NamespacedName, into client.Object) (bool, error) {
	err := r.Get(ctx, key, into)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("reading Work %s: %w", key, err)
}

// BindingPlaces says whether the binding named by refs places its resource
// on cluster (see Places), and whether it asks to preserve its member
// objects (preserveResourcesOnDeletion); a missing binding does neither.
func (c ControlPlane) BindingPlaces(ctx context.Context, refs Refs, cluster string) (places, preserves bool, err error) {
	return bindingPlaces(ctx, c.Reader, refs, cluster)
}

func bindingPlaces(ctx context.Context, r client.Reader, refs Refs, cluster string) (places, preserves bool, err error) {
	if !refs.HasBinding() {
		return false, false, nil
	}
	var obj client.Object
	var spec *workv1alpha2.ResourceBindingSpec
	if refs.Binding.Namespace == "" {
		crb := &workv1alpha2.ClusterResourceBinding{}
		obj, spec = crb, &crb.Spec
	} else {
		rb := &workv1alpha2.ResourceBinding{}
		obj, spec = rb, &rb.Spec
	}
	err = r.Get(ctx, refs.Binding, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("reading binding %s: %w", refs.Binding, err)
	}
	return Places(obj, spec, cluster), ptr.Deref(spec.PreserveResourcesOnDeletion, false), nil
}

// StillOrphan reads the Work and the binding obj names again from Live:
// true when the Work is still missing and the binding still neither places
// it on cluster nor asks to preserve it.
func (c ControlPlane) StillOrphan(ctx context.Context, refs Refs, cluster string) (bool, error) {
	w := &metav1.PartialObjectMetadata{}
	w.SetGroupVersionKind(workv1alpha1.SchemeGroupVersion.WithKind("Work"))
	exists, err := workExists(ctx, c.Live, refs.Work, w)
	if err != nil || exists {
		return false, err
	}
	places, preserves, err := bindingPlaces(ctx, c.Live, refs, cluster)
	return !places && !preserves && err == nil, err
}

// NamespaceInUse says whether a Work of cluster puts an object in the member
// namespace ns, or propagates the namespace itself.
func (c ControlPlane) NamespaceInUse(ctx context.Context, cluster, ns string) (bool, error) {
	space := clusterv1alpha1.ExecutionSpacePrefix + cluster
	var works workv1alpha1.WorkList
	opts := []client.ListOption{client.InNamespace(space), client.UnsafeDisableDeepCopy}
	if c.Indexed {
		opts = append(opts, client.MatchingFields{IndexWorksByMemberNamespace: ns})
	}
	if err := c.Reader.List(ctx, &works, opts...); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("listing the Works of %s: %w", space, err)
	}
	for i := range works.Items {
		if c.Indexed || slices.Contains(execution.MemberNamespaces(&works.Items[i]), ns) {
			return true, nil
		}
	}
	return false, nil
}
