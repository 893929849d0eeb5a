package binding

import (
	"context"
	"fmt"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// countingIndexer counts the indexes registered with it, as the manager's
// does, and refuses a name twice.
type countingIndexer struct {
	names map[string]int
}

func (c *countingIndexer) IndexField(_ context.Context, _ client.Object, field string, _ client.IndexerFunc) error {
	if c.names == nil {
		c.names = map[string]int{}
	}
	c.names[field]++
	if c.names[field] > 1 {
		return fmt.Errorf("indexer conflict: %s", field)
	}
	return nil
}

// TestWorkIndexSharedByBothControllers: the two binding controllers of one
// manager register the Works' index once between them; without a shared
// WorkIndex the second registration is refused, as a manager refuses it.
func TestWorkIndexSharedByBothControllers(t *testing.T) {
	ctx := context.Background()

	shared := &WorkIndex{}
	indexer := &countingIndexer{}
	for i := 0; i < 2; i++ {
		if err := shared.Register(ctx, indexer); err != nil {
			t.Fatalf("registration %d through a shared WorkIndex: %v", i+1, err)
		}
	}
	if got := indexer.names[worksByBindingIndex]; got != 1 {
		t.Errorf("a shared WorkIndex registered the index %d times, want 1", got)
	}

	var unshared *WorkIndex
	indexer = &countingIndexer{}
	if err := unshared.Register(ctx, indexer); err != nil {
		t.Fatalf("first registration without a WorkIndex: %v", err)
	}
	if err := unshared.Register(ctx, indexer); err == nil {
		t.Error("a second registration without a shared WorkIndex succeeded; the manager would refuse it")
	}
}

// Indexed on the Work informer itself, the index finds exactly the Works of
// one binding, in every execution namespace, whichever kind of binding;
// the Works it returns are copies, so a caller's change never reaches the
// cache.
func TestWorkIndexOnTheInformer(t *testing.T) {
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &workv1alpha1.Work{}, 0, toolscache.Indexers{})
	x := &WorkIndex{}
	if err := x.addTo(inf); err != nil {
		t.Fatal(err)
	}
	work := func(ns, name string, annotations map[string]string) *workv1alpha1.Work {
		return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}}
	}
	of := func(ns, name string) map[string]string {
		return map[string]string{workv1alpha2.ResourceBindingNameAnnotationKey: name, workv1alpha2.ResourceBindingNamespaceAnnotationKey: ns}
	}
	for _, w := range []*workv1alpha1.Work{
		work("karmada-es-member1", "web-1", of("shop", "web-deployment")),
		work("karmada-es-member2", "web-1", of("shop", "web-deployment")),
		work("karmada-es-member1", "web-2", of("other", "web-deployment")),
		work("karmada-es-member1", "api-1", of("shop", "api-deployment")),
		work("karmada-es-member1", "crd-1", map[string]string{workv1alpha2.ClusterResourceBindingAnnotationKey: "widgets"}),
		work("karmada-es-member1", "loose", nil),
	} {
		if err := inf.GetIndexer().Add(w); err != nil {
			t.Fatal(err)
		}
	}
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}}
	crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "widgets"}}
	cases := map[string]struct {
		b    bindingObject
		want []string
	}{
		"namespaced": {bindingObject{obj: rb, spec: &rb.Spec, status: &rb.Status}, []string{"karmada-es-member1/web-1", "karmada-es-member2/web-1"}},
		"cluster":    {bindingObject{obj: crb, spec: &crb.Spec, status: &crb.Status}, []string{"karmada-es-member1/crd-1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			works, err := x.list(context.Background(), nil, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range works {
				got = append(got, works[i].Namespace+"/"+works[i].Name)
				if works[i].Kind != "Work" {
					t.Errorf("%s listed without its kind: %q", got[i], works[i].Kind)
				}
				works[i].Annotations["changed"] = "by the caller"
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("Works = %v, want %v", got, tc.want)
			}
		})
	}
	for _, obj := range inf.GetIndexer().List() {
		if _, ok := obj.(*workv1alpha1.Work).Annotations["changed"]; ok {
			t.Fatal("a change to a listed Work reached the informer's store")
		}
	}
}
