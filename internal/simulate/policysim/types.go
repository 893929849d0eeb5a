package policysim

// Outcome says what happens to one selected template.
type Outcome string

const (
	// OutcomeScheduled: the policy claims the template and the scheduler
	// places it on Clusters.
	OutcomeScheduled Outcome = "Scheduled"
	// OutcomeUnschedulable: the policy claims the template but no placement
	// fits; Message is the scheduler's reason and Clusters what an existing
	// binding keeps.
	OutcomeUnschedulable Outcome = "Unschedulable"
	// OutcomeOtherPolicy: another policy keeps or gets the template
	// (Policy), as the detector's priority and claim rules decide.
	OutcomeOtherPolicy Outcome = "OtherPolicy"
	// OutcomeReleased: the template is claimed by the policy now but the
	// new spec no longer selects it and no other policy does: the claim
	// is removed, the binding and member objects stay.
	OutcomeReleased Outcome = "Released"
	// OutcomeWaiting: the policy claims the template but the detector
	// waits (dependent overrides missing) before it writes the binding.
	OutcomeWaiting Outcome = "Waiting"
	// OutcomeNotScheduled: the binding is written but this scheduler does
	// not place it (another schedulerName, or scheduling suspended).
	OutcomeNotScheduled Outcome = "NotScheduled"
	// OutcomeIgnored: the detector leaves the template alone (claimed by
	// another owner, being deleted, or its binding's name is taken).
	OutcomeIgnored Outcome = "Ignored"
	// OutcomeError: the template cannot be interpreted; Message says why.
	OutcomeError Outcome = "Error"
)

// Prediction is the result of Predict.
type Prediction struct {
	// Policy names the predicted policy.
	Policy PolicyID `json:"policy"`
	// Existing is true when a policy of that name exists: the prediction
	// is that of changing it.
	Existing bool `json:"existing"`
	// Warnings are the detector's problems with the selected kinds
	// ("no kind Foo is served ...").
	Warnings []string `json:"warnings,omitempty"`
	// Templates are the selected templates, in resource-selector order.
	Templates []TemplateResult `json:"templates"`
}

// PolicyID names a PropagationPolicy (with Namespace) or a
// ClusterPropagationPolicy.
type PolicyID struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (p PolicyID) String() string {
	if p.Namespace == "" {
		return p.Kind + " " + p.Name
	}
	return p.Kind + " " + p.Namespace + "/" + p.Name
}

// TemplateResult is the prediction for one template.
type TemplateResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Binding is the name of the ResourceBinding (namespaced template) or
	// ClusterResourceBinding it has or would get.
	Binding string  `json:"binding"`
	Outcome Outcome `json:"outcome"`
	// Replicas is the binding's spec.replicas (0 for kinds without
	// replicas, which go whole to each cluster).
	Replicas int32 `json:"replicas"`
	// Clusters is the binding's spec.clusters after the scheduling pass.
	Clusters []ClusterReplicas `json:"clusters,omitempty"`
	// Policy is the policy that keeps or gets the template (OtherPolicy).
	Policy *PolicyID `json:"otherPolicy,omitempty"`
	// Message explains an outcome other than Scheduled.
	Message string `json:"message,omitempty"`
	// Notes add what the user should know (a placement that stays because
	// nothing the scheduler watches changed, Lazy activation...).
	Notes []string `json:"notes,omitempty"`
}

// ClusterReplicas is one entry of spec.clusters.
type ClusterReplicas struct {
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
}
