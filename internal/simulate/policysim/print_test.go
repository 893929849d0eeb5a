package policysim

import (
	"strings"
	"testing"
)

func TestPrintTable(t *testing.T) {
	p := &Prediction{
		Policy:   PolicyID{Kind: "PropagationPolicy", Namespace: "app", Name: "web"},
		Warnings: []string{"no kind Widget is served for apiVersion example.io/v1"},
		Templates: []TemplateResult{
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "app", Name: "web", Binding: "web-deployment", Outcome: OutcomeScheduled, Replicas: 3,
				Clusters: []ClusterReplicas{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}}},
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "app", Name: "lost", Binding: "lost-deployment", Outcome: OutcomeUnschedulable, Replicas: 1,
				Message: "0/2 clusters are available.", Clusters: []ClusterReplicas{{Name: "member1", Replicas: 1}}, Notes: []string{"the current placement is kept"}},
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "app", Name: "owned", Binding: "owned-deployment", Outcome: OutcomeOtherPolicy,
				Message: "stays with PropagationPolicy app/owner"},
		},
	}
	var b strings.Builder
	if err := PrintTable(&b, p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Creating PropagationPolicy app/web would place (nothing was written):\n",
		"Warning: no kind Widget is served",
		"KIND",
		"web-deployment", "member1:2, member2:1",
		"0/2 clusters are available. Kept: member1:1",
		"(the current placement is kept)",
		"stays with PropagationPolicy app/owner",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	p.Existing, p.Templates, p.Warnings = true, nil, nil
	b.Reset()
	if err := PrintTable(&b, p); err != nil {
		t.Fatal(err)
	}
	if want := "Changing the existing PropagationPolicy app/web would place (nothing was written):\nNo resource template is selected.\n"; b.String() != want {
		t.Errorf("output = %q, want %q", b.String(), want)
	}
}
