package failover

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// A deleted Work brings back the binding it belongs to, of the right kind.
func TestBindingOfWork(t *testing.T) {
	work := func(ann map[string]string) *workv1alpha1.Work {
		return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-es-member1", Name: "w", Annotations: ann}}
	}
	rbWork := work(map[string]string{
		workv1alpha2.ResourceBindingNamespaceAnnotationKey: "ns", workv1alpha2.ResourceBindingNameAnnotationKey: "nginx-deployment"})
	crbWork := work(map[string]string{workv1alpha2.ClusterResourceBindingAnnotationKey: "cr-clusterrole"})
	tests := map[string]struct {
		kind bindingKind
		work *workv1alpha1.Work
		want []types.NamespacedName
	}{
		"ResourceBinding's Work":             {resourceBindingKind, rbWork, []types.NamespacedName{{Namespace: "ns", Name: "nginx-deployment"}}},
		"ClusterResourceBinding's Work":      {clusterResourceBindingKind, crbWork, []types.NamespacedName{{Name: "cr-clusterrole"}}},
		"another kind's Work is not mapped":  {resourceBindingKind, crbWork, nil},
		"a cluster binding ignores RB Works": {clusterResourceBindingKind, rbWork, nil},
		"no annotations":                     {resourceBindingKind, work(nil), nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reqs := tc.kind.bindingOfWork(context.Background(), tc.work)
			var got []types.NamespacedName
			for _, r := range reqs {
				got = append(got, r.NamespacedName)
			}
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Errorf("bindingOfWork = %v, want %v", got, tc.want)
			}
		})
	}
}
