package cluster

import (
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestParseMemberResource(t *testing.T) {
	for in, want := range map[string]MemberResource{
		"configmaps":                        {"", "configmaps"},
		"deployments.apps":                  {"apps", "deployments"},
		"flinkdeployments.flink.apache.org": {"flink.apache.org", "flinkdeployments"},
		"*.flink.apache.org":                {"flink.apache.org", "*"},
		"*.*":                               {"*", "*"},
		"*":                                 {"", "*"},
		" clusterroles.rbac.authorization.k8s.io ": {"rbac.authorization.k8s.io", "clusterroles"},
	} {
		got, err := ParseMemberResource(in)
		if err != nil || got != want {
			t.Errorf("ParseMemberResource(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                 "no resource",
		".apps":            "no resource",
		".":                "no resource",
		"deployments.":     "no group after the dot",
		"*.":               "no group after the dot",
		" deployments. ":   "want RESOURCE[.GROUP]",
		"Deployment.apps":  "lower-case plurals",
		"deploy ments":     "RESOURCE[.GROUP]",
		"deployments.Apps": "group",
		"deployments.a_b":  "group",
	} {
		_, err := ParseMemberResource(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMemberResource(%q) error = %v, want it to say %q", in, err, want)
		}
	}
}

func TestMemberRules(t *testing.T) {
	reads := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}},
	}
	write := func(group string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: memberWriteVerbs}
	}
	for name, tc := range map[string]struct {
		in   []MemberResource
		want []rbacv1.PolicyRule
	}{
		"nothing to write: only the reads": {nil, reads},
		"grouped, sorted, duplicates once": {
			[]MemberResource{{"apps", "statefulsets"}, {"", "configmaps"}, {"apps", "deployments"}, {"apps", "deployments"}},
			append(append([]rbacv1.PolicyRule{}, reads...), write("", "configmaps"), write("apps", "deployments", "statefulsets")),
		},
		"a wildcard covers its group": {
			[]MemberResource{{"flink.apache.org", "flinkdeployments"}, {"flink.apache.org", "*"}},
			append(append([]rbacv1.PolicyRule{}, reads...), write("flink.apache.org", "*")),
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := MemberRules(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MemberRules = %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// Kinds outside the set are only listed: no write to RBAC or to
	// anything else.
	for _, r := range MemberRules(DefaultMemberResources()) {
		for _, g := range r.APIGroups {
			if g == "rbac.authorization.k8s.io" || (g == "*" && !reflect.DeepEqual(r.Verbs, []string{"list"})) {
				t.Errorf("default rule %+v reaches beyond the propagated kinds", r)
			}
		}
	}
}
