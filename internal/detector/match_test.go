package detector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

func deployInfo(ns, name string, labels map[string]string) templateInfo {
	return templateInfo{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name, Labels: labels}
}

func sel(apiVersion, kind string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: apiVersion, Kind: kind}
}

func TestSelectorPriority(t *testing.T) {
	web := map[string]string{"app": "web"}
	byName := sel("apps/v1", "Deployment")
	byName.Name = "nginx"
	byLabel := sel("apps/v1", "Deployment")
	byLabel.LabelSelector = &metav1.LabelSelector{MatchLabels: web}
	nameAndWrongLabel := byName
	nameAndWrongLabel.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	otherNS := sel("apps/v1", "Deployment")
	otherNS.Namespace = "other"
	badSelector := sel("apps/v1", "Deployment")
	badSelector.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}

	cases := map[string]struct {
		sel      policyv1alpha1.ResourceSelector
		policyNS string
		t        templateInfo
		want     int
	}{
		"whole kind":                    {sel("apps/v1", "Deployment"), "default", deployInfo("default", "nginx", nil), policyv1alpha1.PriorityMatchAll},
		"other version":                 {sel("apps/v1beta1", "Deployment"), "default", deployInfo("default", "nginx", nil), policyv1alpha1.PriorityMisMatch},
		"other kind":                    {sel("apps/v1", "StatefulSet"), "default", deployInfo("default", "nginx", nil), policyv1alpha1.PriorityMisMatch},
		"name":                          {byName, "default", deployInfo("default", "nginx", nil), policyv1alpha1.PriorityMatchName},
		"other name":                    {byName, "default", deployInfo("default", "web", nil), policyv1alpha1.PriorityMisMatch},
		"name ignores label selector":   {nameAndWrongLabel, "default", deployInfo("default", "nginx", web), policyv1alpha1.PriorityMatchName},
		"label selector":                {byLabel, "default", deployInfo("default", "nginx", web), policyv1alpha1.PriorityMatchLabelSelector},
		"label selector misses":         {byLabel, "default", deployInfo("default", "nginx", nil), policyv1alpha1.PriorityMisMatch},
		"invalid label selector":        {badSelector, "default", deployInfo("default", "nginx", web), policyv1alpha1.PriorityMisMatch},
		"empty ns is the policy's":      {sel("apps/v1", "Deployment"), "default", deployInfo("prod", "nginx", nil), policyv1alpha1.PriorityMisMatch},
		"cluster policy: every ns":      {sel("apps/v1", "Deployment"), "", deployInfo("prod", "nginx", nil), policyv1alpha1.PriorityMatchAll},
		"cluster policy: selector ns":   {otherNS, "", deployInfo("prod", "nginx", nil), policyv1alpha1.PriorityMisMatch},
		"cluster policy: ns matches":    {otherNS, "", deployInfo("other", "nginx", nil), policyv1alpha1.PriorityMatchAll},
		"cluster-scoped template":       {sel("v1", "Namespace"), "", templateInfo{APIVersion: "v1", Kind: "Namespace", Name: "prod"}, policyv1alpha1.PriorityMatchAll},
		"ns selector vs cluster-scoped": {func() policyv1alpha1.ResourceSelector { s := sel("v1", "Namespace"); s.Namespace = "x"; return s }(), "", templateInfo{APIVersion: "v1", Kind: "Namespace", Name: "prod"}, policyv1alpha1.PriorityMisMatch},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := selectorPriority(tc.sel, tc.policyNS, tc.t); got != tc.want {
				t.Errorf("selectorPriority = %d, want %d", got, tc.want)
			}
		})
	}
}

type policyBuilder struct{ p PolicyRef }

func pp(ns, name string) *policyBuilder {
	return &policyBuilder{PolicyRef{Namespace: ns, Name: name, ID: "id-" + name, Spec: &policyv1alpha1.PropagationSpec{}}}
}

func cpp(name string) *policyBuilder {
	return &policyBuilder{PolicyRef{Cluster: true, Name: name, ID: "id-" + name, Spec: &policyv1alpha1.PropagationSpec{}}}
}

func (b *policyBuilder) selectAll() *policyBuilder {
	b.p.Spec.ResourceSelectors = append(b.p.Spec.ResourceSelectors, sel("apps/v1", "Deployment"))
	return b
}

func (b *policyBuilder) selectName(name string) *policyBuilder {
	s := sel("apps/v1", "Deployment")
	s.Name = name
	b.p.Spec.ResourceSelectors = append(b.p.Spec.ResourceSelectors, s)
	return b
}

// selectNameAt selects the Deployment name at apiVersion.
func (b *policyBuilder) selectNameAt(apiVersion, name string) *policyBuilder {
	s := sel(apiVersion, "Deployment")
	s.Name = name
	b.p.Spec.ResourceSelectors = append(b.p.Spec.ResourceSelectors, s)
	return b
}

func (b *policyBuilder) selectLabels(l map[string]string) *policyBuilder {
	s := sel("apps/v1", "Deployment")
	s.LabelSelector = &metav1.LabelSelector{MatchLabels: l}
	b.p.Spec.ResourceSelectors = append(b.p.Spec.ResourceSelectors, s)
	return b
}

func (b *policyBuilder) priority(p int32) *policyBuilder { b.p.Spec.Priority = ptr.To(p); return b }
func (b *policyBuilder) deleting() *policyBuilder        { b.p.Deleting = true; return b }
func (b *policyBuilder) noID() *policyBuilder            { b.p.ID = ""; return b }
func (b *policyBuilder) ref() PolicyRef                  { return b.p }

func TestBestPolicy(t *testing.T) {
	web := map[string]string{"app": "web"}
	nginx := deployInfo("default", "nginx", web)
	cases := map[string]struct {
		candidates []PolicyRef
		want       string // "" for no match
	}{
		"none":                 {nil, ""},
		"only non-matching":    {[]PolicyRef{pp("default", "a").selectName("other").ref()}, ""},
		"other namespace":      {[]PolicyRef{pp("prod", "a").selectAll().ref()}, ""},
		"name beats label":     {[]PolicyRef{pp("default", "a").selectLabels(web).ref(), pp("default", "b").selectName("nginx").ref()}, "b"},
		"label beats all":      {[]PolicyRef{pp("default", "a").selectAll().ref(), pp("default", "b").selectLabels(web).ref()}, "b"},
		"explicit beats name":  {[]PolicyRef{pp("default", "a").selectName("nginx").ref(), pp("default", "b").selectAll().priority(5).ref()}, "b"},
		"negative priority":    {[]PolicyRef{pp("default", "a").selectAll().priority(-1).ref(), pp("default", "b").selectAll().ref()}, "b"},
		"tie: smaller name":    {[]PolicyRef{pp("default", "zeta").selectAll().ref(), pp("default", "alpha").selectAll().ref()}, "alpha"},
		"best selector counts": {[]PolicyRef{pp("default", "a").selectAll().selectName("nginx").ref(), pp("default", "b").selectLabels(web).ref()}, "a"},
		"deleting skipped":     {[]PolicyRef{pp("default", "a").selectName("nginx").deleting().ref(), pp("default", "b").selectAll().ref()}, "b"},
		"no id yet skipped":    {[]PolicyRef{pp("default", "a").selectName("nginx").noID().ref()}, ""},
		"cluster policies":     {[]PolicyRef{cpp("x").selectAll().ref(), cpp("y").selectName("nginx").ref()}, "y"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := bestPolicy(tc.candidates, nginx)
			if tc.want == "" {
				if ok {
					t.Fatalf("bestPolicy = %s, want none", got)
				}
				return
			}
			if !ok || got.Name != tc.want {
				t.Fatalf("bestPolicy = %q (ok=%v), want %q", got.Name, ok, tc.want)
			}
		})
	}
}
