package detector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
)

// PolicyRef is a PropagationPolicy or a ClusterPropagationPolicy as the
// matching, choosing and building functions see it.
type PolicyRef struct {
	// Cluster is true for a ClusterPropagationPolicy.
	Cluster bool
	// Namespace is empty for a ClusterPropagationPolicy.
	Namespace string
	Name      string
	// ID is the policy's permanent-id label.
	ID       string
	Spec     *policyv1alpha1.PropagationSpec
	Deleting bool
}

func (p PolicyRef) String() string {
	if p.Cluster {
		return "ClusterPropagationPolicy " + p.Name
	}
	return "PropagationPolicy " + p.Namespace + "/" + p.Name
}

// subject is the policy as the Events' budget keys it.
func (p PolicyRef) subject() eventbudget.Subject {
	if p.Cluster {
		return eventbudget.Policy("", p.Name)
	}
	return eventbudget.Policy(p.Namespace, p.Name)
}

// PropagationPolicyRef is pp as the detector's decisions see it.
func PropagationPolicyRef(pp *policyv1alpha1.PropagationPolicy) PolicyRef {
	return PolicyRef{
		Namespace: pp.Namespace,
		Name:      pp.Name,
		ID:        pp.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel],
		Spec:      &pp.Spec,
		Deleting:  !pp.DeletionTimestamp.IsZero(),
	}
}

// ClusterPropagationPolicyRef is cpp as the detector's decisions see it.
func ClusterPropagationPolicyRef(cpp *policyv1alpha1.ClusterPropagationPolicy) PolicyRef {
	return PolicyRef{
		Cluster:  true,
		Name:     cpp.Name,
		ID:       cpp.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel],
		Spec:     &cpp.Spec,
		Deleting: !cpp.DeletionTimestamp.IsZero(),
	}
}

// templateInfo is what matching needs to know about a template.
type templateInfo struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Labels     map[string]string
}

// selectorPriority returns the implicit priority of one selector for a
// template: PriorityMatchName when it names the template, PriorityMatchLabelSelector
// when its label selector matches, PriorityMatchAll when it selects the
// whole kind, PriorityMisMatch otherwise. policyNamespace is the namespace of
// a PropagationPolicy (an empty selector namespace means the policy's own),
// empty for a ClusterPropagationPolicy (empty means every namespace).
func selectorPriority(sel policyv1alpha1.ResourceSelector, policyNamespace string, t templateInfo) int {
	if sel.APIVersion != t.APIVersion || sel.Kind != t.Kind {
		return policyv1alpha1.PriorityMisMatch
	}
	ns := sel.Namespace
	if ns == "" {
		ns = policyNamespace
	}
	if ns != "" && ns != t.Namespace {
		return policyv1alpha1.PriorityMisMatch
	}
	if sel.Name != "" {
		if sel.Name == t.Name {
			return policyv1alpha1.PriorityMatchName
		}
		return policyv1alpha1.PriorityMisMatch
	}
	if sel.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
		if err != nil || !s.Matches(labels.Set(t.Labels)) {
			return policyv1alpha1.PriorityMisMatch
		}
		return policyv1alpha1.PriorityMatchLabelSelector
	}
	return policyv1alpha1.PriorityMatchAll
}

// implicitPriority is the highest selector priority of a policy for a
// template; PriorityMisMatch means the policy does not select it. A
// PropagationPolicy never selects a template outside its namespace.
func implicitPriority(p PolicyRef, t templateInfo) int {
	if !p.Cluster && p.Namespace != t.Namespace {
		return policyv1alpha1.PriorityMisMatch
	}
	best := policyv1alpha1.PriorityMisMatch
	for _, sel := range p.Spec.ResourceSelectors {
		if prio := selectorPriority(sel, p.Namespace, t); prio > best {
			best = prio
		}
	}
	return best
}

func matches(p PolicyRef, t templateInfo) bool {
	return implicitPriority(p, t) > policyv1alpha1.PriorityMisMatch
}

// matchesAtOtherVersion reports whether p selects the template at a
// version of its group and kind other than t's: a selector of another
// version of that group and kind would match the template read at that
// version.
func matchesAtOtherVersion(p PolicyRef, t templateInfo) bool {
	gk := schema.FromAPIVersionAndKind(t.APIVersion, t.Kind).GroupKind()
	for _, sel := range p.Spec.ResourceSelectors {
		if sel.APIVersion == t.APIVersion || schema.FromAPIVersionAndKind(sel.APIVersion, sel.Kind).GroupKind() != gk {
			continue
		}
		at := t
		at.APIVersion = sel.APIVersion
		if matches(p, at) {
			return true
		}
	}
	return false
}

func explicitPriority(p PolicyRef) int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

// bestPolicy picks among policies of one kind (all PropagationPolicies or
// all ClusterPropagationPolicies) the one that claims the template: the
// highest explicit spec.priority, then the highest implicit priority (name
// > label selector > all), then the lexicographically smallest name.
// Policies being deleted or without a permanent ID yet are passed over. ok
// is false when none selects the template.
func bestPolicy(candidates []PolicyRef, t templateInfo) (best PolicyRef, ok bool) {
	bestImplicit := 0
	for _, p := range candidates {
		if p.Deleting || p.ID == "" {
			continue
		}
		implicit := implicitPriority(p, t)
		if implicit == policyv1alpha1.PriorityMisMatch {
			continue
		}
		if !ok || better(p, implicit, best, bestImplicit) {
			best, bestImplicit, ok = p, implicit, true
		}
	}
	return best, ok
}

func better(p PolicyRef, pImplicit int, q PolicyRef, qImplicit int) bool {
	if pe, qe := explicitPriority(p), explicitPriority(q); pe != qe {
		return pe > qe
	}
	if pImplicit != qImplicit {
		return pImplicit > qImplicit
	}
	return p.Name < q.Name
}

// SelectedKinds lists the kinds a policy selects, in selector order, without
// duplicates.
func SelectedKinds(spec *policyv1alpha1.PropagationSpec) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, sel := range spec.ResourceSelectors {
		gvk := schema.FromAPIVersionAndKind(sel.APIVersion, sel.Kind)
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out
}
