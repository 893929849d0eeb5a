package policysim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/claim"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/customization"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
	"github.com/lifeboat-dev/lifeboat/internal/served"
)

// simulatedID is the permanent ID given to a policy that does not exist
// yet: the detector passes over policies without one, and no claim carries
// this one.
const simulatedID = "lifeboat-simulate"

// Inputs is what Predict reads.
type Inputs struct {
	// Client reads the control plane (templates, policies, bindings,
	// Clusters, customizations) and validates the policy with dry-run
	// writes; it never writes. Its scheme must know Lifeboat's types, and
	// its RESTMapper the template kinds.
	Client client.Client
	// Discovery tells which kinds the control plane serves.
	Discovery discovery.DiscoveryInterface
	// Policy is the *PropagationPolicy (namespace set) or
	// *ClusterPropagationPolicy to predict, as ParsePolicyFile returns it.
	Policy client.Object
	// Interpreter answers GetReplicas; nil builds the controllers' one
	// from the control plane's customizations (NewInterpreter).
	Interpreter interpreter.Interpreter
}

// Predict says where in.Policy would place the templates it selects,
// without writing anything: see the package documentation for the steps.
// A policy the API server rejects is an error that carries the server's
// message.
func Predict(ctx context.Context, in Inputs) (*Prediction, error) {
	if in.Client == nil || in.Discovery == nil || in.Policy == nil {
		return nil, errors.New("policysim: Client, Discovery and Policy are required")
	}
	// 1. Validate, and take the policy as the server would store it.
	policy, existing, err := validate(ctx, in.Client, in.Policy)
	if err != nil {
		return nil, err
	}
	ref, id, err := refOf(policy)
	if err != nil {
		return nil, err
	}
	if ref.ID == "" {
		ref.ID = simulatedID
	}
	pred := &Prediction{Policy: id, Existing: existing, Templates: []TemplateResult{}}

	kinds := served.New(served.FromDiscovery(in.Discovery), nil, 0)
	if err := kinds.EnsureReady(); err != nil {
		return nil, fmt.Errorf("discovering the served kinds: %w", err)
	}
	interp := in.Interpreter
	if interp == nil {
		if interp, err = NewInterpreter(ctx, in.Client); err != nil {
			return nil, err
		}
	}
	clusters, err := listClusters(ctx, in.Client)
	if err != nil {
		return nil, err
	}
	missing, err := detector.MissingOverrides(ctx, in.Client, ref)
	if err != nil {
		return nil, err
	}

	p := predictor{
		client:   in.Client,
		policy:   ref,
		source:   withPolicy{base: detector.ReaderSource(in.Client), policy: ref},
		interp:   interp,
		clusters: clusters,
		missing:  missing,
	}
	// 2. and 3. The selected kinds and their templates.
	for _, gvk := range detector.SelectedKinds(ref.Spec) {
		if msg := detector.KindProblem(kinds, ref, gvk); msg != "" {
			pred.Warnings = append(pred.Warnings, msg)
			continue
		}
		templates, err := detector.SelectedTemplates(ctx, in.Client, ref, gvk)
		if err != nil {
			return nil, err
		}
		for _, tmpl := range templates {
			if detector.IsSkippedObject(tmpl) {
				continue
			}
			res, err := p.template(ctx, tmpl)
			if err != nil {
				return nil, err
			}
			pred.Templates = append(pred.Templates, res)
		}
	}
	return pred, nil
}

// validate asks the API server to create obj in a dry run. When a policy of
// that name exists, it asks instead for a dry-run update that puts obj's
// spec (and its labels and annotations, added to the stored ones) into the
// stored policy, as kubectl apply would. It returns the object the server
// answered with (defaults applied) and whether the policy exists.
func validate(ctx context.Context, c client.Client, obj client.Object) (client.Object, bool, error) {
	what := describe(obj)
	created := obj.DeepCopyObject().(client.Object)
	err := c.Create(ctx, created, client.DryRunAll)
	if err == nil {
		return created, false, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, checkFailed(what, "dry-run create", err)
	}
	stored := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
		return nil, false, fmt.Errorf("getting the existing %s: %w", what, err)
	}
	changed := stored.DeepCopyObject().(client.Object)
	changed.SetLabels(union(stored.GetLabels(), obj.GetLabels()))
	changed.SetAnnotations(union(stored.GetAnnotations(), obj.GetAnnotations()))
	switch o := changed.(type) {
	case *policyv1alpha1.PropagationPolicy:
		o.Spec = *obj.(*policyv1alpha1.PropagationPolicy).Spec.DeepCopy()
	case *policyv1alpha1.ClusterPropagationPolicy:
		o.Spec = *obj.(*policyv1alpha1.ClusterPropagationPolicy).Spec.DeepCopy()
	}
	if err := c.Update(ctx, changed, client.DryRunAll); err != nil {
		return nil, false, checkFailed("this change of the existing "+what, "dry-run update", err)
	}
	return changed, true, nil
}

// checkFailed words a dry run that failed: the control plane's answer is a
// rejection of the policy; anything else (no answer, a refused connection)
// says the check could not be made.
func checkFailed(what, how string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("the control plane rejects %s (%s): %w", what, how, err)
	}
	return fmt.Errorf("could not ask the control plane to check %s (%s): %w", what, how, err)
}

// refOf is the policy as the detector sees it, and its name.
func refOf(obj client.Object) (detector.PolicyRef, PolicyID, error) {
	switch o := obj.(type) {
	case *policyv1alpha1.PropagationPolicy:
		return detector.PropagationPolicyRef(o), PolicyID{Kind: "PropagationPolicy", Namespace: o.Namespace, Name: o.Name}, nil
	case *policyv1alpha1.ClusterPropagationPolicy:
		return detector.ClusterPropagationPolicyRef(o), PolicyID{Kind: "ClusterPropagationPolicy", Name: o.Name}, nil
	}
	return detector.PolicyRef{}, PolicyID{}, fmt.Errorf("policysim: %T is not a PropagationPolicy or ClusterPropagationPolicy", obj)
}

func idOf(p detector.PolicyRef) PolicyID {
	if p.Cluster {
		return PolicyID{Kind: "ClusterPropagationPolicy", Name: p.Name}
	}
	return PolicyID{Kind: "PropagationPolicy", Namespace: p.Namespace, Name: p.Name}
}

func describe(obj client.Object) string {
	if _, ok := obj.(*policyv1alpha1.ClusterPropagationPolicy); ok {
		return "ClusterPropagationPolicy " + obj.GetName()
	}
	return "PropagationPolicy " + obj.GetNamespace() + "/" + obj.GetName()
}

func union(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// NewInterpreter builds the interpreter the controllers use (see
// customization.NewInterpreter) with the ResourceInterpreterCustomizations
// r holds loaded. A control plane without the customization API gives the
// shipped and native rules only.
func NewInterpreter(ctx context.Context, r client.Reader) (interpreter.Interpreter, error) {
	layer := customization.NewLayer(lua.New(lua.DefaultOptions()), nil, clock.RealClock{})
	var rics configv1alpha1.ResourceInterpreterCustomizationList
	if err := r.List(ctx, &rics); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing ResourceInterpreterCustomizations: %w", err)
	}
	for i := range rics.Items {
		layer.Set(&rics.Items[i])
	}
	interp, err := customization.NewInterpreter(layer)
	if err != nil {
		return nil, fmt.Errorf("building the interpreter: %w", err)
	}
	return interp, nil
}

func listClusters(ctx context.Context, r client.Reader) ([]*clusterv1alpha1.Cluster, error) {
	var list clusterv1alpha1.ClusterList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	out := make([]*clusterv1alpha1.Cluster, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// predictor predicts one policy's templates.
type predictor struct {
	client   client.Reader
	policy   detector.PolicyRef
	source   detector.PolicySource
	interp   interpreter.Interpreter
	clusters []*clusterv1alpha1.Cluster
	// missing are the policy's dependentOverrides that do not exist.
	missing []string
}

// template predicts one template, following the template controller:
// ignored templates, the binding's name taken by another template, the
// policy choice, dependent overrides, the binding, then one scheduling
// pass.
func (p predictor) template(ctx context.Context, tmpl *unstructured.Unstructured) (TemplateResult, error) {
	key := detector.TemplateKey{GVK: tmpl.GroupVersionKind(), Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}
	res := TemplateResult{
		APIVersion: tmpl.GetAPIVersion(),
		Kind:       tmpl.GetKind(),
		Namespace:  tmpl.GetNamespace(),
		Name:       tmpl.GetName(),
		Binding:    detector.BindingName(tmpl.GetKind(), tmpl.GetName()),
	}
	if why := detector.IgnoredTemplate(tmpl); why != "" {
		res.Outcome, res.Message = OutcomeIgnored, "the detector leaves it alone: "+why
		return res, nil
	}
	existing, err := detector.BindingOf(ctx, p.client, key)
	if err != nil {
		return TemplateResult{}, err
	}
	if existing != nil {
		ref := detector.BindingSpec(existing).Resource
		if !detector.BindsTemplate(ref, key.GVK.GroupKind(), key.Namespace, key.Name) {
			res.Outcome = OutcomeIgnored
			res.Message = fmt.Sprintf("binding %s already belongs to %s %s %s/%s", existing.GetName(), ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)
			return res, nil
		}
		if ref.UID != "" && ref.UID != tmpl.GetUID() {
			// Left by a deleted template of the same name: the detector
			// deletes it and builds a new one.
			existing = nil
		}
	}

	choice, err := detector.ChoosePolicy(ctx, p.source, tmpl)
	if err != nil {
		return TemplateResult{}, err
	}
	switch {
	case choice.Releasing != nil:
		other := idOf(*choice.Releasing)
		res.Outcome, res.Policy = OutcomeOtherPolicy, &other
		res.Message = fmt.Sprintf("stays with %s until that policy, being deleted, releases it; then it is decided again", other)
		return res, nil
	case choice.OtherVersion != nil && samePolicy(*choice.OtherVersion, p.policy):
		res.Outcome = OutcomeIgnored
		res.Message = "the policy keeps it and selects it at another version of its kind, where it is predicted; nothing changes at this version"
		return res, nil
	case choice.OtherVersion != nil:
		other := idOf(*choice.OtherVersion)
		res.Outcome, res.Policy = OutcomeOtherPolicy, &other
		res.Message = fmt.Sprintf("stays with %s, which selects it at another version of its kind: a claimed template is never taken over by another policy", other)
		return res, nil
	case !choice.OK:
		res.Outcome = OutcomeReleased
		res.Message = "the policy no longer selects it and no other policy does: the claim is removed, the binding and its member objects stay"
		return res, nil
	case !samePolicy(choice.Policy, p.policy):
		other := idOf(choice.Policy)
		res.Outcome, res.Policy = OutcomeOtherPolicy, &other
		if choice.Held {
			res.Message = fmt.Sprintf("stays with %s: a claimed template is never taken over by another policy", other)
		} else {
			res.Message = fmt.Sprintf("goes to %s, which wins on priority", other)
		}
		return res, nil
	}
	if len(p.missing) > 0 {
		res.Outcome = OutcomeWaiting
		res.Message = fmt.Sprintf("the detector waits for the dependent overrides %s", strings.Join(p.missing, ", "))
		return res, nil
	}

	replicas, err := detector.ReplicasOf(p.interp, tmpl)
	if err != nil {
		res.Outcome, res.Message = OutcomeError, err.Error()
		return res, nil
	}
	var binding client.Object
	var status workv1alpha2.ResourceBindingStatus
	if existing == nil {
		binding = detector.BuildBinding(tmpl, p.policy, replicas, "")
	} else {
		binding = existing.DeepCopyObject().(client.Object)
		detector.MergeBinding(binding, tmpl, p.policy, replicas, "")
		status = *statusOf(existing)
		if p.policy.Spec.ActivationPreference == policyv1alpha1.LazyActivation && choice.Held {
			res.Notes = append(res.Notes, "activationPreference is Lazy: the binding changes only at the template's next change; until then it keeps its current placement")
		}
	}
	spec := detector.BindingSpec(binding)
	res.Replicas = spec.Replicas

	if !scheduler.HandlesSpec(spec, scheduler.DefaultSchedulerName) {
		res.Outcome = OutcomeNotScheduled
		res.Clusters = clustersOf(spec.Clusters)
		if s := spec.Suspension; s != nil && s.Scheduling != nil && *s.Scheduling {
			res.Message = "scheduling of the binding is suspended"
		} else {
			res.Message = fmt.Sprintf("schedulerName %q: another scheduler places it", spec.SchedulerName)
		}
		return res, nil
	}
	// 5. One scheduling pass.
	pass := scheduler.PlanPass(spec, &status, binding.GetAnnotations(), p.clusters)
	res.Clusters = clustersOf(pass.Clusters)
	if pass.Err != nil {
		res.Outcome, res.Message = OutcomeUnschedulable, pass.Err.Error()
		if len(pass.Clusters) > 0 {
			res.Notes = append(res.Notes, "the current placement is kept")
		}
		return res, nil
	}
	res.Outcome = OutcomeScheduled
	if pass.Trigger == "" {
		res.Notes = append(res.Notes, "not rescheduled: its placement, replicas and clusters are unchanged")
	}
	return res, nil
}

func samePolicy(a, b detector.PolicyRef) bool {
	return a.Cluster == b.Cluster && a.Namespace == b.Namespace && a.Name == b.Name
}

func statusOf(obj client.Object) *workv1alpha2.ResourceBindingStatus {
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		return b.Status.DeepCopy()
	case *workv1alpha2.ClusterResourceBinding:
		return b.Status.DeepCopy()
	}
	return &workv1alpha2.ResourceBindingStatus{}
}

func clustersOf(ts []workv1alpha2.TargetCluster) []ClusterReplicas {
	if len(ts) == 0 {
		return nil
	}
	out := make([]ClusterReplicas, 0, len(ts))
	for _, t := range ts {
		out = append(out, ClusterReplicas{Name: t.Name, Replicas: t.Replicas})
	}
	return out
}

// withPolicy is the detector's view of the policies with the predicted one
// in place of the stored one of its name (or added).
type withPolicy struct {
	base   detector.PolicySource
	policy detector.PolicyRef
}

func (s withPolicy) ClaimedPolicy(ctx context.Context, c claim.Claim) (detector.PolicyRef, bool, error) {
	if c.Cluster == s.policy.Cluster && c.Name == s.policy.Name && (c.Cluster || c.Namespace == s.policy.Namespace) {
		return s.policy, true, nil
	}
	return s.base.ClaimedPolicy(ctx, c)
}

func (s withPolicy) PropagationPolicies(ctx context.Context, namespace string) ([]detector.PolicyRef, error) {
	refs, err := s.base.PropagationPolicies(ctx, namespace)
	if err != nil || s.policy.Cluster || namespace != s.policy.Namespace {
		return refs, err
	}
	return s.replace(refs), nil
}

func (s withPolicy) ClusterPropagationPolicies(ctx context.Context) ([]detector.PolicyRef, error) {
	refs, err := s.base.ClusterPropagationPolicies(ctx)
	if err != nil || !s.policy.Cluster {
		return refs, err
	}
	return s.replace(refs), nil
}

func (s withPolicy) replace(refs []detector.PolicyRef) []detector.PolicyRef {
	out := make([]detector.PolicyRef, 0, len(refs)+1)
	for _, r := range refs {
		if !samePolicy(r, s.policy) {
			out = append(out, r)
		}
	}
	return append(out, s.policy)
}
