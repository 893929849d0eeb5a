package scheduler

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestWhyNotTaken(t *testing.T) {
	claimed := map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "id"}
	placed := func(mutate func(*workv1alpha2.ResourceBindingSpec)) *workv1alpha2.ResourceBindingSpec {
		spec := &workv1alpha2.ResourceBindingSpec{Placement: &policyv1alpha1.Placement{}}
		if mutate != nil {
			mutate(spec)
		}
		return spec
	}
	cases := map[string]struct {
		labels    map[string]string
		spec      *workv1alpha2.ResourceBindingSpec
		scheduler string
		want      string // "" taken, otherwise a part of the reason
	}{
		"default scheduler takes an unnamed binding": {labels: claimed, spec: placed(nil)},
		"the named scheduler takes its own": {labels: claimed, scheduler: "edge",
			spec: placed(func(s *workv1alpha2.ResourceBindingSpec) { s.SchedulerName = "edge" })},
		"empty scheduler name is the default": {labels: claimed,
			spec: placed(func(s *workv1alpha2.ResourceBindingSpec) { s.SchedulerName = DefaultSchedulerName })},
		"scheduling suspended set to false is taken": {labels: claimed,
			spec: placed(func(s *workv1alpha2.ResourceBindingSpec) {
				s.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(false)}
			})},
		"no policy claims it": {labels: map[string]string{}, spec: placed(nil), want: "no policy claims it"},
		"no placement":        {labels: claimed, spec: &workv1alpha2.ResourceBindingSpec{}, want: "no placement"},
		"scheduling suspended": {labels: claimed, want: "spec.suspension.scheduling",
			spec: placed(func(s *workv1alpha2.ResourceBindingSpec) {
				s.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
			})},
		"another scheduler": {labels: claimed, want: `spec.schedulerName "edge" is not the scheduler "default-scheduler"`,
			spec: placed(func(s *workv1alpha2.ResourceBindingSpec) { s.SchedulerName = "edge" })},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := WhyNotTaken(tc.labels, tc.spec, tc.scheduler)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("WhyNotTaken = %q, want %q", got, tc.want)
			}
		})
	}
}
