package detector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/claim"
)

// PolicySource is what choosing a template's policy reads: the policy a
// claim names, and the candidate policies. The detector reads through its
// cache (ReaderSource); a prediction can add a policy that does not exist
// yet.
type PolicySource interface {
	// ClaimedPolicy returns the policy a claim names; found is false when
	// it does not exist.
	ClaimedPolicy(ctx context.Context, c claim.Claim) (p PolicyRef, found bool, err error)
	// PropagationPolicies lists the PropagationPolicies of a namespace.
	PropagationPolicies(ctx context.Context, namespace string) ([]PolicyRef, error)
	// ClusterPropagationPolicies lists every ClusterPropagationPolicy.
	ClusterPropagationPolicies(ctx context.Context) ([]PolicyRef, error)
}

// Choice is which policy claims a template.
type Choice struct {
	// Policy claims the template when OK.
	Policy PolicyRef
	// OK is false when no policy claims the template (none selects it, or
	// the claiming policy is being deleted and releases it first).
	OK bool
	// Held is true when Policy is the template's current, valid claim.
	Held bool
	// Releasing is the policy being deleted that still claims the
	// template; its deletion handling releases it, and the template is
	// looked at again then. Set only when OK is false.
	Releasing *PolicyRef
	// Stale is the template's claim that no longer holds (its policy is
	// gone, was recreated, or no longer selects the template): it is
	// removed before Policy claims the template.
	Stale *claim.Claim
	// OtherVersion is the claiming policy when it does not select the
	// template at the version it was read at but does at another version
	// of its group and kind: the claim holds, and the template is handled
	// under that version; under this one nothing changes. Set only when
	// OK is false.
	OtherVersion *PolicyRef
}

// ChoosePolicy decides which policy claims tmpl, in this order:
//  1. a complete claim whose policy exists with the same permanent ID and
//     still selects the template holds (claims are sticky: a policy never
//     takes a template over from another one); when that policy is being
//     deleted nobody claims the template until it is released;
//  2. a claim whose policy selects the template only at another version of
//     its group and kind holds too, and nothing changes under this version
//     (the detector sees a template under every version a policy selects,
//     and each version must agree on the claim);
//  3. any other claim is stale;
//  4. the best PropagationPolicy of the template's namespace (bestPolicy:
//     explicit priority, implicit priority, name);
//  5. else the best ClusterPropagationPolicy.
//
// It reads through src and writes nothing.
func ChoosePolicy(ctx context.Context, src PolicySource, tmpl *unstructured.Unstructured) (Choice, error) {
	info := infoOf(tmpl)
	var choice Choice
	if c, ok := claim.Read(tmpl); ok {
		p, found, err := src.ClaimedPolicy(ctx, c)
		if err != nil {
			return Choice{}, err
		}
		switch {
		case found && p.ID == c.ID && p.Deleting:
			return Choice{Releasing: &p}, nil
		case found && p.ID == c.ID && matches(p, info):
			return Choice{Policy: p, OK: true, Held: true}, nil
		case found && p.ID == c.ID && matchesAtOtherVersion(p, info):
			return Choice{OtherVersion: &p}, nil
		}
		choice.Stale = &c
	}

	if tmpl.GetNamespace() != "" {
		pps, err := src.PropagationPolicies(ctx, tmpl.GetNamespace())
		if err != nil {
			return Choice{}, err
		}
		if p, ok := bestPolicy(pps, info); ok {
			choice.Policy, choice.OK = p, true
			return choice, nil
		}
	}
	cpps, err := src.ClusterPropagationPolicies(ctx)
	if err != nil {
		return Choice{}, err
	}
	choice.Policy, choice.OK = bestPolicy(cpps, info)
	return choice, nil
}

// ReaderSource is the PolicySource of the policies r holds.
func ReaderSource(r client.Reader) PolicySource { return readerSource{r} }

type readerSource struct{ r client.Reader }

func (s readerSource) ClaimedPolicy(ctx context.Context, c claim.Claim) (PolicyRef, bool, error) {
	if c.Cluster {
		var cpp policyv1alpha1.ClusterPropagationPolicy
		if err := s.r.Get(ctx, types.NamespacedName{Name: c.Name}, &cpp); err != nil {
			if apierrors.IsNotFound(err) {
				return PolicyRef{}, false, nil
			}
			return PolicyRef{}, false, fmt.Errorf("getting ClusterPropagationPolicy %s: %w", c.Name, err)
		}
		return ClusterPropagationPolicyRef(&cpp), true, nil
	}
	var pp policyv1alpha1.PropagationPolicy
	if err := s.r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, &pp); err != nil {
		if apierrors.IsNotFound(err) {
			return PolicyRef{}, false, nil
		}
		return PolicyRef{}, false, fmt.Errorf("getting PropagationPolicy %s/%s: %w", c.Namespace, c.Name, err)
	}
	return PropagationPolicyRef(&pp), true, nil
}

func (s readerSource) PropagationPolicies(ctx context.Context, namespace string) ([]PolicyRef, error) {
	var pps policyv1alpha1.PropagationPolicyList
	if err := s.r.List(ctx, &pps, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing PropagationPolicies: %w", err)
	}
	refs := make([]PolicyRef, 0, len(pps.Items))
	for i := range pps.Items {
		refs = append(refs, PropagationPolicyRef(&pps.Items[i]))
	}
	return refs, nil
}

func (s readerSource) ClusterPropagationPolicies(ctx context.Context) ([]PolicyRef, error) {
	var cpps policyv1alpha1.ClusterPropagationPolicyList
	if err := s.r.List(ctx, &cpps); err != nil {
		return nil, fmt.Errorf("listing ClusterPropagationPolicies: %w", err)
	}
	refs := make([]PolicyRef, 0, len(cpps.Items))
	for i := range cpps.Items {
		refs = append(refs, ClusterPropagationPolicyRef(&cpps.Items[i]))
	}
	return refs, nil
}

// IgnoredTemplate says why the detector leaves tmpl alone whatever the
// policies say, or "": objects never propagated (IsSkippedObject), templates
// another owner claimed (ClaimedByLabel) and templates being deleted.
func IgnoredTemplate(tmpl *unstructured.Unstructured) string {
	switch {
	case IsSkippedObject(tmpl):
		return "never propagated"
	case tmpl.GetLabels()[ClaimedByLabel] != "":
		return fmt.Sprintf("claimed by %s (label %s)", tmpl.GetLabels()[ClaimedByLabel], ClaimedByLabel)
	case !tmpl.GetDeletionTimestamp().IsZero():
		return "being deleted"
	}
	return ""
}

// Selects reports whether policy p selects tmpl (any of its resource
// selectors matches).
func Selects(p PolicyRef, tmpl *unstructured.Unstructured) bool {
	return matches(p, infoOf(tmpl))
}
