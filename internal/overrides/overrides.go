package overrides

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// Kinds of override policies, as used in errors.
const (
	KindOverridePolicy        = "OverridePolicy"
	KindClusterOverridePolicy = "ClusterOverridePolicy"
)

// Applied records one applied rule: the policy and the overriders it
// applied. Its JSON form is the one Karmada stores in the
// policy.karmada.io/applied-overrides and applied-cluster-overrides
// annotations.
type Applied struct {
	PolicyName string                    `json:"policyName"`
	Overriders policyv1alpha1.Overriders `json:"overriders"`
}

// Result is the overridden copy of a template and what was applied.
type Result struct {
	// Object is the changed copy; the template passed to Apply is untouched.
	Object *unstructured.Unstructured
	// ClusterOverrides are the applied ClusterOverridePolicy rules, sorted
	// by policy name (rules of one policy keep their order).
	ClusterOverrides []Applied
	// Overrides are the applied OverridePolicy rules, sorted likewise.
	Overrides []Applied
}

// Annotations returns the Work annotations recording r: applied-cluster-
// overrides and applied-overrides, each present only when something of its
// kind was applied.
func (r *Result) Annotations() (map[string]string, error) {
	out := map[string]string{}
	for key, applied := range map[string][]Applied{
		policyv1alpha1.AppliedClusterOverrides: r.ClusterOverrides,
		policyv1alpha1.AppliedOverrides:        r.Overrides,
	} {
		if len(applied) == 0 {
			continue
		}
		raw, err := json.Marshal(applied)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", key, err)
		}
		out[key] = string(raw)
	}
	return out, nil
}

// Error is a failure to apply one policy. The caller reports it to users
// (event ApplyOverridePolicyFailed) with the policy it names.
type Error struct {
	// Kind is OverridePolicy or ClusterOverridePolicy.
	Kind      string
	Namespace string
	Name      string
	Err       error
}

func (e *Error) Error() string {
	if e.Namespace != "" {
		return fmt.Sprintf("applying %s %s/%s: %v", e.Kind, e.Namespace, e.Name, e.Err)
	}
	return fmt.Sprintf("applying %s %s: %v", e.Kind, e.Name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// policy is the common view of both policy kinds.
type policy struct {
	kind      string
	namespace string
	name      string
	spec      *policyv1alpha1.OverrideSpec
	priority  int
}

// Apply returns a copy of template changed by the policies for cluster.
// cops are every ClusterOverridePolicy; ops the OverridePolicies of the
// template's namespace (others are ignored, as are all of them for a
// cluster-scoped template). A failing overrider fails the whole result with
// an *Error naming the policy, and so does a rule that changes what
// IdentityChange guards.
func Apply(template *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster, cops []policyv1alpha1.ClusterOverridePolicy, ops []policyv1alpha1.OverridePolicy) (*Result, error) {
	obj := template.DeepCopy()
	res := &Result{Object: obj}

	var clusterPolicies []policy
	for i := range cops {
		p := policy{kind: KindClusterOverridePolicy, name: cops[i].Name, spec: &cops[i].Spec}
		if p.priority = selectorPriority(p.spec.ResourceSelectors, "", template); p.priority > policyv1alpha1.PriorityMisMatch {
			clusterPolicies = append(clusterPolicies, p)
		}
	}
	var nsPolicies []policy
	if ns := template.GetNamespace(); ns != "" {
		for i := range ops {
			if ops[i].Namespace != ns {
				continue
			}
			p := policy{kind: KindOverridePolicy, namespace: ns, name: ops[i].Name, spec: &ops[i].Spec}
			if p.priority = selectorPriority(p.spec.ResourceSelectors, ns, template); p.priority > policyv1alpha1.PriorityMisMatch {
				nsPolicies = append(nsPolicies, p)
			}
		}
	}

	var err error
	if res.ClusterOverrides, err = applyPolicies(template, obj, cluster, clusterPolicies); err != nil {
		return nil, err
	}
	if res.Overrides, err = applyPolicies(template, obj, cluster, nsPolicies); err != nil {
		return nil, err
	}
	return res, nil
}

// applyPolicies applies the policies to obj in place, in Karmada's order,
// and returns the applied rules sorted by policy name. A rule that leaves
// obj with another identity than template fails its policy.
func applyPolicies(template, obj *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster, policies []policy) ([]Applied, error) {
	slices.SortStableFunc(policies, func(a, b policy) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.name, b.name))
	})
	var applied []Applied
	for _, p := range policies {
		for _, rule := range rulesOf(p.spec) {
			if !core.ClusterMatches(cluster, rule.TargetCluster) {
				continue
			}
			err := applyOverriders(obj, &rule.Overriders)
			if err == nil {
				err = IdentityChange(template, obj)
			}
			if err != nil {
				return nil, &Error{Kind: p.kind, Namespace: p.namespace, Name: p.name, Err: err}
			}
			applied = append(applied, Applied{PolicyName: p.name, Overriders: rule.Overriders})
		}
	}
	slices.SortStableFunc(applied, func(a, b Applied) int { return cmp.Compare(a.PolicyName, b.PolicyName) })
	return applied, nil
}

// IdentityChange reports the first of apiVersion, kind, metadata.namespace
// and metadata.name that differs between the template and obj, its
// rendered copy. Those say which object a Work creates in the member: an
// OverridePolicy of one namespace rewriting them would create or overwrite
// objects in another namespace (kube-system), or of another kind, in every
// member it applies to.
func IdentityChange(template, obj *unstructured.Unstructured) error {
	for _, path := range [][]string{{"apiVersion"}, {"kind"}, {"metadata", "namespace"}, {"metadata", "name"}} {
		want, have := identityField(template, path), identityField(obj, path)
		if !reflect.DeepEqual(want, have) {
			from, _ := json.Marshal(want)
			to, _ := json.Marshal(have)
			return fmt.Errorf("%s may not be changed (from %s to %s): it names the object created in the member",
				strings.Join(path, "."), from, to)
		}
	}
	return nil
}

// identityField is the value at path, "" when there is none.
func identityField(u *unstructured.Unstructured, path []string) any {
	if v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...); err == nil && found && v != nil {
		return v
	}
	return ""
}

// rulesOf returns the override rules of spec; the deprecated top-level
// targetCluster/overriders pair counts as one rule when overrideRules is
// empty (the schema forbids combining them).
func rulesOf(spec *policyv1alpha1.OverrideSpec) []policyv1alpha1.RuleWithCluster {
	if len(spec.OverrideRules) > 0 {
		return spec.OverrideRules
	}
	if spec.TargetCluster == nil && isEmpty(&spec.Overriders) {
		return nil
	}
	return []policyv1alpha1.RuleWithCluster{{TargetCluster: spec.TargetCluster, Overriders: spec.Overriders}}
}

func isEmpty(o *policyv1alpha1.Overriders) bool {
	return len(o.Plaintext) == 0 && len(o.ImageOverrider) == 0 && len(o.CommandOverrider) == 0 &&
		len(o.ArgsOverrider) == 0 && len(o.LabelsOverrider) == 0 && len(o.AnnotationsOverrider) == 0 &&
		len(o.FieldOverrider) == 0
}
