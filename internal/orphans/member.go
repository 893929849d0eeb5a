package orphans

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

// Member is what a sweep needs from one member cluster.
type Member interface {
	// Resources are the kinds that can be listed and deleted; with some
	// API groups missing it returns the others and an
	// membercluster.IncompleteDiscoveryError.
	Resources(ctx context.Context) ([]membercluster.Resource, error)
	// List lists one page of objects; ListMetadata one page of their
	// metadata only.
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	ListMetadata(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error
	// EachCached calls fn with every managed object of gvr that an informer
	// of the controller manager holds, without network I/O, until fn
	// returns false; held is false when no informer holds gvr (listed and
	// synced). The objects carry no managedFields; never modify them.
	EachCached(gvr schema.GroupVersionResource, fn func(metav1.Object) bool) (held bool)
}

// MemberCache is what the controllers need from the member cluster cache;
// *membercluster.Cache implements it.
type MemberCache interface {
	Resources(ctx context.Context, cluster string) ([]membercluster.Resource, error)
	List(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	ListMetadata(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	Get(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error
	EachCached(cluster string, gvr schema.GroupVersionResource, fn func(*packed.Object) bool) (held bool)
}

// cachedMember is one member of the cache.
type cachedMember struct {
	cache   MemberCache
	cluster string
}

// CachedMember is cluster through the member cluster cache (the controller
// manager's one door to members).
func CachedMember(cache MemberCache, cluster string) Member {
	return cachedMember{cache: cache, cluster: cluster}
}

func (m cachedMember) Resources(ctx context.Context) ([]membercluster.Resource, error) {
	return m.cache.Resources(ctx, m.cluster)
}

func (m cachedMember) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return m.cache.List(ctx, m.cluster, gvr, namespace, opts)
}

func (m cachedMember) ListMetadata(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return m.cache.ListMetadata(ctx, m.cluster, gvr, namespace, opts)
}

func (m cachedMember) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return m.cache.Get(ctx, m.cluster, gvr, namespace, name)
}

func (m cachedMember) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error {
	return m.cache.Delete(ctx, m.cluster, gvr, namespace, name, opts)
}

func (m cachedMember) EachCached(gvr schema.GroupVersionResource, fn func(metav1.Object) bool) bool {
	return m.cache.EachCached(m.cluster, gvr, func(o *packed.Object) bool { return fn(o) })
}

// clientMember is a member reached with its own clients (the CLI).
type clientMember struct {
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	cluster   string
}

// ClientMember is a member reached directly with a dynamic, a metadata and
// a discovery client, as `lifeboat unjoin --cleanup-member` does; cluster
// names it in errors.
func ClientMember(dyn dynamic.Interface, md metadata.Interface, disco discovery.DiscoveryInterface, cluster string) Member {
	return clientMember{dynamic: dyn, metadata: md, discovery: disco, cluster: cluster}
}

func (m clientMember) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return m.dynamic.Resource(gvr)
	}
	return m.dynamic.Resource(gvr).Namespace(namespace)
}

func (m clientMember) Resources(context.Context) ([]membercluster.Resource, error) {
	return membercluster.DiscoverResources(m.discovery, m.cluster)
}

func (m clientMember) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return m.resource(gvr, namespace).List(ctx, opts)
}

func (m clientMember) ListMetadata(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if namespace == "" {
		return m.metadata.Resource(gvr).List(ctx, opts)
	}
	return m.metadata.Resource(gvr).Namespace(namespace).List(ctx, opts)
}

func (m clientMember) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return m.resource(gvr, namespace).Get(ctx, name, metav1.GetOptions{})
}

func (m clientMember) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error {
	return m.resource(gvr, namespace).Delete(ctx, name, opts)
}

// EachCached holds nothing: a member reached directly is always listed.
func (clientMember) EachCached(schema.GroupVersionResource, func(metav1.Object) bool) bool {
	return false
}
