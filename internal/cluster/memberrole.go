package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MemberResource is a kind Lifeboat may write in a member: a resource (plural,
// "*" for every resource) of an API group ("" for the core group, "*" for
// every group).
type MemberResource struct {
	Group, Resource string
}

// String is the resource as kubectl names it: RESOURCE[.GROUP].
func (r MemberResource) String() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// DefaultMemberResources are the kinds a member joined by `lifeboat join`
// lets Lifeboat create, update and delete, without --propagate-resource: the
// workloads and what they commonly need. A kind outside them fails to apply
// in that member with an error that names it.
func DefaultMemberResources() []MemberResource {
	return []MemberResource{
		{"", "namespaces"}, {"", "configmaps"}, {"", "secrets"}, {"", "services"},
		{"", "serviceaccounts"}, {"", "persistentvolumeclaims"}, {"", "limitranges"}, {"", "resourcequotas"},
		{"apps", "deployments"}, {"apps", "statefulsets"}, {"apps", "daemonsets"}, {"apps", "replicasets"},
		{"batch", "jobs"}, {"batch", "cronjobs"},
		{"autoscaling", "horizontalpodautoscalers"},
		{"policy", "poddisruptionbudgets"},
		{"networking.k8s.io", "ingresses"}, {"networking.k8s.io", "networkpolicies"},
	}
}

// ParseMemberResource reads RESOURCE[.GROUP] as kubectl writes it
// (deployments.apps, configmaps, flinkdeployments.flink.apache.org), where
// RESOURCE may be "*" (every resource of the group) and "*.*" is every
// resource of every group.
func ParseMemberResource(s string) (MemberResource, error) {
	resource, group, dotted := strings.Cut(strings.TrimSpace(s), ".")
	r := MemberResource{Group: group, Resource: resource}
	bad := func(why string) (MemberResource, error) {
		return MemberResource{}, fmt.Errorf("resource %q: %s; want RESOURCE[.GROUP] as kubectl names it, for example deployments.apps, configmaps, *.flink.apache.org or *.*", s, why)
	}
	if resource == "" {
		return bad("no resource")
	}
	// The core group is written without the dot (configmaps): a trailing
	// dot is a group left out by mistake, not the core group.
	if dotted && group == "" {
		return bad("no group after the dot (write a core-group resource without it, as configmaps)")
	}
	if strings.ToLower(resource) != resource {
		return bad("resources are lower-case plurals (deployments, not Deployment)")
	}
	if resource != "*" {
		if errs := validation.IsDNS1123Subdomain(resource); len(errs) > 0 {
			return bad(strings.Join(errs, "; "))
		}
	}
	if group != "" && group != "*" {
		if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 {
			return bad("group: " + strings.Join(errs, "; "))
		}
	}
	return r, nil
}

// Verbs Lifeboat uses on the kinds it writes in a member: server-side apply
// (patch, and create for a new object), the informers of the execution and
// status controllers (list, watch, get), and the deletes of Works removed.
var memberWriteVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// MemberRules are the rules of the ClusterRole join grants Lifeboat in a
// member: write access to resources (DefaultMemberResources plus what the
// user added), read access to nodes and pods for the resource summary, and
// list on everything, with which the orphan sweep finds what Lifeboat left
// behind and proves a namespace it created empty before removing it.
func MemberRules(resources []MemberResource) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	for _, r := range resources {
		byGroup[r.Group] = append(byGroup[r.Group], r.Resource)
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}},
	}
	for _, g := range groups {
		rs := byGroup[g]
		slices.Sort(rs)
		rs = slices.Compact(rs)
		if slices.Contains(rs, "*") {
			rs = []string{"*"}
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: rs, Verbs: memberWriteVerbs})
	}
	return rules
}
