package orphans

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
)

// pageSize is the page size of every list in a member.
const pageSize = 500

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Sweeper applies the rules to one member cluster.
type Sweeper struct {
	Cluster      string
	Member       Member
	ControlPlane ControlPlane
}

// Finding is one object of the member, labelled managed, whose Work does
// not exist (or that names another cluster's Work).
type Finding struct {
	Resource        membercluster.Resource
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	Refs            Refs
	Verdict         Verdict
}

func (f Finding) String() string {
	name := f.Name
	if f.Namespace != "" {
		name = f.Namespace + "/" + name
	}
	return f.Resource.Kind + " " + name
}

// Scan is what one sweep of a member found.
type Scan struct {
	// Findings are sorted by kind, namespace and name.
	Findings []Finding
	// CreatedNamespaces are the member namespaces that carry
	// execution.CreatedNamespaceAnnotation.
	CreatedNamespaces []string
	// Incomplete says why some objects could not be listed (API groups
	// not discovered, kinds not listable); nil when everything was.
	Incomplete error
}

// Scan lists every object of the member labelled managed and judges each
// whose Work is missing. A member that cannot be reached ends the scan with
// an error; a kind that cannot be listed is skipped and reported in
// Incomplete.
func (s Sweeper) Scan(ctx context.Context) (Scan, error) {
	var out Scan
	resources, err := s.Member.Resources(ctx)
	if err != nil && !membercluster.IsIncompleteDiscovery(err) {
		return out, err
	}
	var incomplete []error
	if err != nil {
		incomplete = append(incomplete, err)
	}
	works, err := s.ControlPlane.WorkNames(ctx, s.Cluster)
	if err != nil {
		return out, err
	}
	for _, r := range resources {
		if s.settledInCache(r, works, &out) {
			continue
		}
		err := s.listMetadata(ctx, r, "", managedSelector, func(obj *metav1.PartialObjectMetadata) error {
			if r.GVR == namespacesGVR && execution.CreatedByLifeboat(obj) {
				out.CreatedNamespaces = append(out.CreatedNamespaces, obj.GetName())
			}
			f, err := s.judge(ctx, r, obj, works)
			if err != nil || f == nil {
				return err
			}
			out.Findings = append(out.Findings, *f)
			return nil
		})
		switch {
		case err == nil:
		case membercluster.IsUnreachable(err) || membercluster.IsNotConnected(err) || errors.Is(err, ctx.Err()):
			return out, err
		default:
			incomplete = append(incomplete, fmt.Errorf("listing %s: %w", r.GVR.GroupResource(), err))
		}
	}
	sort.Slice(out.Findings, func(i, j int) bool {
		a, b := out.Findings[i], out.Findings[j]
		if a.Resource.Kind != b.Resource.Kind {
			return a.Resource.Kind < b.Resource.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	sort.Strings(out.CreatedNamespaces)
	out.Incomplete = errors.Join(incomplete...)
	return out, nil
}

// settledInCache judges the objects of r that an informer of the
// controller manager holds, when one holds r, and says whether that settles
// r: every object there is Owned or no candidate, so a list would report
// nothing. The namespaces Lifeboat created are then taken from the informer
// too. Otherwise nothing is recorded and r is listed from the member's API
// server, whose answer alone finds and removes objects: the informer can
// lag, and it does not hold the managedFields the rules read. An object the
// informer has not seen yet is found by the next scan.
func (s Sweeper) settledInCache(r membercluster.Resource, works map[string]bool, out *Scan) bool {
	var created []string
	kind := r.GVR.GroupVersion().WithKind(r.Kind).GroupKind()
	settled := true
	held := s.Member.EachCached(r.GVR, func(obj metav1.Object) bool {
		if r.GVR == namespacesGVR && execution.CreatedByLifeboat(obj) {
			created = append(created, obj.GetName())
		}
		refs, _ := RefsOf(obj)
		switch Judge(Observation{Cluster: s.Cluster, Kind: kind, Object: obj, WorkExists: works[refs.Work.Name]}) {
		case NotCandidate, Owned:
			return true
		}
		settled = false
		return false
	})
	if !held || !settled {
		return false
	}
	out.CreatedNamespaces = append(out.CreatedNamespaces, created...)
	return true
}

// judge returns the finding of one listed object, nil when its Work exists
// or it is no candidate.
func (s Sweeper) judge(ctx context.Context, r membercluster.Resource, obj *metav1.PartialObjectMetadata, works map[string]bool) (*Finding, error) {
	refs, ok := RefsOf(obj)
	if !ok {
		return nil, nil
	}
	o := Observation{Cluster: s.Cluster, Kind: r.GVR.GroupVersion().WithKind(r.Kind).GroupKind(), Object: obj, WorkExists: works[refs.Work.Name]}
	if Judge(o) == Orphan {
		// Only now, past every other rule, is the binding worth reading.
		places, preserves, err := s.ControlPlane.BindingPlaces(ctx, refs, s.Cluster)
		if err != nil {
			return nil, err
		}
		o.BindingPlaces, o.BindingPreserves = places, preserves
	}
	v := Judge(o)
	if v == NotCandidate || v == Owned {
		return nil, nil
	}
	return &Finding{
		Resource: r, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(), Refs: refs, Verdict: v,
	}, nil
}

// list calls fn for every object of r in namespace ("" for all) matching
// selector, page by page.
func (s Sweeper) list(ctx context.Context, r membercluster.Resource, namespace, selector string, fn func(*unstructured.Unstructured) error) error {
	return eachPage(ctx, selector, func(opts metav1.ListOptions) ([]unstructured.Unstructured, string, error) {
		page, err := s.Member.List(ctx, r.GVR, namespace, opts)
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.GetContinue(), nil
	}, fn)
}

// listMetadata is list reading only the objects' metadata.
func (s Sweeper) listMetadata(ctx context.Context, r membercluster.Resource, namespace, selector string, fn func(*metav1.PartialObjectMetadata) error) error {
	return eachPage(ctx, selector, func(opts metav1.ListOptions) ([]metav1.PartialObjectMetadata, string, error) {
		page, err := s.Member.ListMetadata(ctx, r.GVR, namespace, opts)
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.Continue, nil
	}, fn)
}

// eachPage calls fn for every item of the pages that page returns, asking
// for pageSize items matching selector at a time.
func eachPage[T any](ctx context.Context, selector string, page func(metav1.ListOptions) ([]T, string, error), fn func(*T) error) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: pageSize}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		items, next, err := page(opts)
		if err != nil {
			return err
		}
		for i := range items {
			if err := fn(&items[i]); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		opts.Continue = next
	}
}

// Remove deletes an Orphan found by Scan, after reading its Work and binding
// again from the API server: removed is false, without an error, when it is
// no orphan any more, or when the object changed or went since the scan (the
// delete is conditional on its UID and resourceVersion).
func (s Sweeper) Remove(ctx context.Context, f Finding) (removed bool, err error) {
	if f.Verdict != Orphan {
		return false, fmt.Errorf("%s is %s, not an orphan", f, f.Verdict)
	}
	still, err := s.ControlPlane.StillOrphan(ctx, f.Refs, s.Cluster)
	if err != nil || !still {
		return false, err
	}
	background := metav1.DeletePropagationBackground
	err = s.Member.Delete(ctx, f.Resource.GVR, f.Namespace, f.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &f.UID, ResourceVersion: &f.ResourceVersion},
		PropagationPolicy: &background,
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) && !membercluster.IsNotConnected(err), apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("deleting %s: %w", f, err)
}

// NamespaceJudgement is the namespace rule's verdict on one namespace.
type NamespaceJudgement struct {
	Name    string
	Verdict NamespaceVerdict
	// Detail names the object that decided, or why the listing is
	// incomplete.
	Detail string
	// Namespace is the namespace as read (nil when absent).
	Namespace *unstructured.Unstructured
}

// JudgeNamespace applies the namespace rule (NamespaceGate, then
// JudgeContents over everything in the namespace) to namespace name.
func (s Sweeper) JudgeNamespace(ctx context.Context, name string) (NamespaceJudgement, error) {
	j := NamespaceJudgement{Name: name}
	ns, err := s.Member.Get(ctx, namespacesGVR, "", name)
	switch {
	case apierrors.IsNotFound(err) && !membercluster.IsNotConnected(err):
		ns = nil
	case err != nil:
		return j, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	j.Namespace = ns
	var nsMeta metav1.Object
	if ns != nil {
		nsMeta = ns
	}
	inUse := false
	if ns != nil && execution.CreatedByLifeboat(ns) {
		if inUse, err = s.ControlPlane.NamespaceInUse(ctx, s.Cluster, name); err != nil {
			return j, err
		}
	}
	v, proceed := NamespaceGate(nsMeta, inUse)
	if !proceed {
		j.Verdict = v
		return j, nil
	}
	contents, complete, err := s.contents(ctx, name)
	if err != nil {
		return j, err
	}
	j.Verdict, j.Detail = JudgeContents(contents, complete)
	return j, nil
}

// contents lists everything in namespace; complete is false when a kind
// could not be listed.
func (s Sweeper) contents(ctx context.Context, namespace string) ([]Content, bool, error) {
	resources, err := s.Member.Resources(ctx)
	if err != nil && !membercluster.IsIncompleteDiscovery(err) {
		return nil, false, err
	}
	complete := err == nil
	var out []Content
	for _, r := range resources {
		if !r.Namespaced {
			continue
		}
		err := s.list(ctx, r, namespace, "", func(obj *unstructured.Unstructured) error {
			out = append(out, Content{Resource: r.GVR.GroupResource(), Object: obj})
			return nil
		})
		switch {
		case err == nil:
		case membercluster.IsUnreachable(err) || membercluster.IsNotConnected(err) || errors.Is(err, ctx.Err()):
			return nil, false, err
		default:
			complete = false
		}
	}
	return out, complete, nil
}

// RemoveNamespace deletes a namespace judged Removable, conditional on its
// UID and resourceVersion as judged: removed is false, without an error,
// when it changed or went meanwhile.
func (s Sweeper) RemoveNamespace(ctx context.Context, j NamespaceJudgement) (removed bool, err error) {
	if j.Verdict != NamespaceRemovable || j.Namespace == nil {
		return false, fmt.Errorf("namespace %s is %s, not removable", j.Name, j.Verdict)
	}
	// A Work made while the contents were listed wins.
	if inUse, err := s.ControlPlane.NamespaceInUse(ctx, s.Cluster, j.Name); err != nil || inUse {
		return false, err
	}
	uid, rv := j.Namespace.GetUID(), j.Namespace.GetResourceVersion()
	err = s.Member.Delete(ctx, namespacesGVR, "", j.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) && !membercluster.IsNotConnected(err), apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("deleting namespace %s: %w", j.Name, err)
}
