package memberclustertest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// MetadataOf is a metadata client over a fake member's dynamic client, so
// that objects a test creates through one are read through the other. It
// reads (Get, List) and deletes; it does not patch or watch.
func MetadataOf(dyn dynamic.Interface) metadata.Interface { return metadataOf{dyn} }

type metadataOf struct{ dyn dynamic.Interface }

func (m metadataOf) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return metadataResource{r: m.dyn.Resource(gvr), all: m.dyn.Resource(gvr)}
}

type metadataResource struct {
	r   dynamic.ResourceInterface
	all dynamic.NamespaceableResourceInterface
}

func (m metadataResource) Namespace(ns string) metadata.ResourceInterface {
	return metadataResource{r: m.all.Namespace(ns), all: m.all}
}

func (m metadataResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error {
	return m.r.Delete(ctx, name, opts, subresources...)
}

func (m metadataResource) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	return m.r.DeleteCollection(ctx, opts, listOpts)
}

func (m metadataResource) Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*metav1.PartialObjectMetadata, error) {
	u, err := m.r.Get(ctx, name, opts, subresources...)
	if err != nil {
		return nil, err
	}
	return partial(u)
}

func (m metadataResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	l, err := m.r.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue()}}
	for i := range l.Items {
		p, err := partial(&l.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *p)
	}
	return out, nil
}

func (m metadataResource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("the fake metadata client does not watch")
}

func (m metadataResource) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*metav1.PartialObjectMetadata, error) {
	return nil, fmt.Errorf("the fake metadata client does not patch")
}

// partial is the metadata of u, as a metadata client returns it.
func partial(u *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	if md, ok := u.Object["metadata"].(map[string]interface{}); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &p.ObjectMeta); err != nil {
			return nil, fmt.Errorf("reading the metadata of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
	}
	return p, nil
}
