package membercluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Resource is a kind a member serves that can be listed and deleted.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// IncompleteDiscoveryError says some API groups of a member could not be
// discovered (an aggregated API that does not answer, typically); the
// resources of the other groups come with it. A caller that decides from the
// absence of objects must not take such a list as complete.
type IncompleteDiscoveryError struct {
	Cluster string
	Groups  []string
}

func (e *IncompleteDiscoveryError) Error() string {
	return fmt.Sprintf("cluster %s: API groups not discovered: %s", e.Cluster, strings.Join(e.Groups, ", "))
}

// IsIncompleteDiscovery reports whether err is an IncompleteDiscoveryError.
func IsIncompleteDiscovery(err error) bool {
	var d *IncompleteDiscoveryError
	return errors.As(err, &d)
}

// Resources discovers afresh, without any cache, the member's resources that
// can be listed and deleted, in their preferred versions, subresources left
// out, sorted by group and resource. When some groups could not be
// discovered it returns the others with an IncompleteDiscoveryError.
func (c *Cache) Resources(ctx context.Context, cluster string) ([]Resource, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if m.clients.Discovery == nil {
		return nil, fmt.Errorf("cluster %s: no discovery client", cluster)
	}
	var out []Resource
	var incomplete error
	err = c.call(ctx, m, func(context.Context) error {
		var err error
		out, err = DiscoverResources(m.clients.Discovery, cluster)
		if IsIncompleteDiscovery(err) {
			// The member answered; only some groups did not.
			incomplete, err = err, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, incomplete
}

// DiscoverResources is Resources over a discovery client of the member
// cluster (named for errors).
func DiscoverResources(d discovery.DiscoveryInterface, cluster string) ([]Resource, error) {
	lists, err := discovery.ServerPreferredResources(d)
	var partial *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &partial) {
		return nil, fmt.Errorf("discovering the resources of cluster %s: %w", cluster, err)
	}
	out := listableResources(lists)
	if partial != nil {
		groups := make([]string, 0, len(partial.Groups))
		for gv := range partial.Groups {
			groups = append(groups, gv.String())
		}
		sort.Strings(groups)
		return out, &IncompleteDiscoveryError{Cluster: cluster, Groups: groups}
	}
	return out, nil
}

// listableResources keeps the resources that support list and delete,
// without subresources.
func listableResources(lists []*metav1.APIResourceList) []Resource {
	var out []Resource
	for _, l := range lists {
		if l == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			out = append(out, Resource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GVR.Group != out[j].GVR.Group {
			return out[i].GVR.Group < out[j].GVR.Group
		}
		return out[i].GVR.Resource < out[j].GVR.Resource
	})
	return out
}

// List lists one page of objects of gvr straight from the member's API
// server (namespace "" for every namespace, or a cluster-scoped resource),
// managed or not; opts.Limit and opts.Continue page through.
func (c *Cache) List(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var out *unstructured.UnstructuredList
	err = c.call(ctx, m, func(ctx context.Context) error {
		var err error
		out, err = resourceClient(m, gvr, namespace).List(ctx, opts)
		return err
	})
	return out, err
}

// ListMetadata is List reading only the objects' metadata: a sweep of every
// kind of a member decodes no spec or status.
func (c *Cache) ListMetadata(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if m.clients.Metadata == nil {
		return nil, fmt.Errorf("cluster %s: no metadata client", cluster)
	}
	var out *metav1.PartialObjectMetadataList
	err = c.call(ctx, m, func(ctx context.Context) error {
		var err error
		r := m.clients.Metadata.Resource(gvr)
		if namespace == "" {
			out, err = r.List(ctx, opts)
		} else {
			out, err = r.Namespace(namespace).List(ctx, opts)
		}
		return err
	})
	return out, err
}
