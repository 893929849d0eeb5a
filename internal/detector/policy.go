package detector

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/claim"
	"github.com/lifeboat-dev/lifeboat/internal/served"
)

func (d *Detector) reconcilePropagationPolicy(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pp policyv1alpha1.PropagationPolicy
	if err := d.Reader.Get(ctx, req.NamespacedName, &pp); err != nil {
		if apierrors.IsNotFound(err) {
			d.setWanted(ppKey(req.Namespace, req.Name), nil)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting PropagationPolicy: %w", err)
	}
	return retryConflicts(d.syncPolicy(ctx, &pp, ppKey(pp.Namespace, pp.Name),
		policyv1alpha1.PropagationPolicyPermanentIDLabel, policyv1alpha1.PropagationPolicyControllerFinalizer,
		func() PolicyRef { return PropagationPolicyRef(&pp) }))
}

func (d *Detector) reconcileClusterPropagationPolicy(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cpp policyv1alpha1.ClusterPropagationPolicy
	if err := d.Reader.Get(ctx, req.NamespacedName, &cpp); err != nil {
		if apierrors.IsNotFound(err) {
			d.setWanted(cppKey(req.Name), nil)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting ClusterPropagationPolicy: %w", err)
	}
	return retryConflicts(d.syncPolicy(ctx, &cpp, cppKey(cpp.Name),
		policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel, policyv1alpha1.ClusterPropagationPolicyControllerFinalizer,
		func() PolicyRef { return ClusterPropagationPolicyRef(&cpp) }))
}

// syncPolicy handles one policy (obj is a private copy):
//  1. being deleted: release every template it claims (binding first, then
//     template; bindings, Works and member objects stay), then drop the
//     finalizer;
//  2. give it a permanent ID and the finalizer when missing (Karmada's
//     webhook does this; Lifeboat runs no webhook);
//  3. for each selected kind: warn when it is not served or never
//     propagated, else watch it and enqueue the templates the policy selects;
//  4. enqueue the templates it claims, so that those it no longer selects
//     are released and the others get its new spec.
func (d *Detector) syncPolicy(ctx context.Context, obj client.Object, key, idLabel, finalizer string, ref func() PolicyRef) error {
	if !obj.GetDeletionTimestamp().IsZero() {
		if !controllerutil.ContainsFinalizer(obj, finalizer) {
			d.setWanted(key, nil)
			return nil
		}
		if err := d.releasePolicy(ctx, ref()); err != nil {
			return err
		}
		controllerutil.RemoveFinalizer(obj, finalizer)
		if err := d.Client.Update(ctx, obj); err != nil {
			return fmt.Errorf("removing finalizer: %w", err)
		}
		d.setWanted(key, nil)
		return nil
	}

	if obj.GetLabels()[idLabel] == "" || !controllerutil.ContainsFinalizer(obj, finalizer) {
		if obj.GetLabels()[idLabel] == "" {
			l := copyMap(obj.GetLabels())
			l[idLabel] = d.NewID()
			obj.SetLabels(l)
		}
		controllerutil.AddFinalizer(obj, finalizer)
		if err := d.Client.Update(ctx, obj); err != nil {
			return fmt.Errorf("adding permanent ID and finalizer: %w", err)
		}
	}

	p := ref()
	kinds := SelectedKinds(p.Spec)
	d.setWanted(key, kinds)
	if err := d.Served.EnsureReady(); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "discovery failed")
	}
	var problems []string
	for _, gvk := range kinds {
		if msg := KindProblem(d.Served, p, gvk); msg != "" {
			problems = append(problems, msg)
			continue
		}
		if err := d.ensureWatch(ctx, gvk); err != nil {
			return err
		}
		if err := d.enqueueSelected(ctx, p, gvk); err != nil {
			return err
		}
	}
	if err := d.enqueueClaimed(ctx, p); err != nil {
		return err
	}
	if len(problems) > 0 {
		d.Recorder.Event(obj, corev1.EventTypeWarning, ReasonApplyPolicyFailed, strings.Join(problems, "; "))
	}
	return nil
}

// KindProblem says why a policy's selected kind cannot be propagated, or
// "": an incomplete selector, a kind never propagated, a kind the control
// plane does not serve (as far as served knows), or a cluster-scoped kind
// selected by a PropagationPolicy.
func KindProblem(served *served.Kinds, p PolicyRef, gvk schema.GroupVersionKind) string {
	if gvk.Kind == "" || gvk.Version == "" {
		return fmt.Sprintf("resource selector apiVersion %q kind %q is incomplete", gvk.GroupVersion().String(), gvk.Kind)
	}
	if IsSkippedKind(gvk) {
		return fmt.Sprintf("kind %s of apiVersion %s is never propagated", gvk.Kind, gvk.GroupVersion().String())
	}
	info, ok := served.Lookup(gvk)
	if !ok {
		return unservedMessage(gvk, served.VersionsOf(gvk.GroupKind()))
	}
	if !p.Cluster && !info.Namespaced {
		return fmt.Sprintf("kind %s of apiVersion %s is cluster-scoped; select it with a ClusterPropagationPolicy", gvk.Kind, gvk.GroupVersion().String())
	}
	return ""
}

// enqueueSelected enqueues the templates of one kind that p selects or
// claims.
func (d *Detector) enqueueSelected(ctx context.Context, p PolicyRef, gvk schema.GroupVersionKind) error {
	selected, err := SelectedTemplates(ctx, d.Reader, p, gvk)
	if err != nil {
		return err
	}
	for _, t := range selected {
		d.enqueueTemplate(ctx, TemplateKey{GVK: gvk, Namespace: t.GetNamespace(), Name: t.GetName()})
	}
	return nil
}

// SelectedTemplates lists, through r, the templates of one kind that p
// selects or claims: in p's namespace for a PropagationPolicy, everywhere
// for a ClusterPropagationPolicy.
func SelectedTemplates(ctx context.Context, r client.Reader, p PolicyRef, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	var opts []client.ListOption
	if !p.Cluster {
		opts = append(opts, client.InNamespace(p.Namespace))
	}
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvk, err)
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		t := &list.Items[i]
		c, claimed := claim.Read(t)
		if matches(p, infoOf(t)) || (claimed && c.Cluster == p.Cluster && c.ID == p.ID) {
			out = append(out, t)
		}
	}
	return out, nil
}

// claimedBindings lists the bindings carrying p's claim.
func (d *Detector) claimedBindings(ctx context.Context, p PolicyRef) ([]client.Object, error) {
	if p.ID == "" {
		return nil, nil
	}
	sel := client.MatchingFields{IndexClaimedBy: claimIndexValue(p.Cluster, p.ID)}
	var rbs workv1alpha2.ResourceBindingList
	opts := []client.ListOption{sel}
	if !p.Cluster {
		opts = append(opts, client.InNamespace(p.Namespace))
	}
	if err := d.Reader.List(ctx, &rbs, opts...); err != nil {
		return nil, fmt.Errorf("listing ResourceBindings of %s: %w", p, err)
	}
	out := make([]client.Object, 0, len(rbs.Items))
	for i := range rbs.Items {
		out = append(out, &rbs.Items[i])
	}
	if p.Cluster {
		var crbs workv1alpha2.ClusterResourceBindingList
		if err := d.Reader.List(ctx, &crbs, sel); err != nil {
			return nil, fmt.Errorf("listing ClusterResourceBindings of %s: %w", p, err)
		}
		for i := range crbs.Items {
			out = append(out, &crbs.Items[i])
		}
	}
	return out, nil
}

func (d *Detector) enqueueClaimed(ctx context.Context, p PolicyRef) error {
	bindings, err := d.claimedBindings(ctx, p)
	if err != nil {
		return err
	}
	for _, b := range bindings {
		r := BindingSpec(b).Resource
		d.enqueueTemplate(ctx, TemplateKey{GVK: schema.FromAPIVersionAndKind(r.APIVersion, r.Kind), Namespace: r.Namespace, Name: r.Name})
	}
	return nil
}

// releasePolicy removes a deleted policy's claim from the bindings and
// templates it claims, binding first. Karmada keeps the bindings, their
// Works and the member objects; without claim labels the scheduler ignores
// the binding, and the template's update event lets another policy claim it.
func (d *Detector) releasePolicy(ctx context.Context, p PolicyRef) error {
	if p.ID == "" {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	bindings, err := d.claimedBindings(ctx, p)
	if err != nil {
		return err
	}
	for _, b := range bindings {
		b = b.DeepCopyObject().(client.Object)
		if removeClaim(b, p.Cluster, p.ID) {
			// A binding deleted since the cache listed it holds no claim;
			// its template, if still there, is released below.
			if err := d.Client.Update(ctx, b); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing claim from binding %s: %w", b.GetName(), err)
			}
		}
		r := BindingSpec(b).Resource
		tmpl := &unstructured.Unstructured{}
		tmpl.SetGroupVersionKind(schema.FromAPIVersionAndKind(r.APIVersion, r.Kind))
		if err := d.Reader.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Name}, tmpl); err != nil {
			if apierrors.IsNotFound(err) || isNoMatch(err) {
				continue
			}
			return fmt.Errorf("getting template %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
		}
		if err := d.releaseTemplate(ctx, tmpl, p); err != nil {
			return err
		}
	}
	// Templates claimed whose binding was never created.
	idLabel := policyv1alpha1.PropagationPolicyPermanentIDLabel
	if p.Cluster {
		idLabel = policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel
	}
	for _, gvk := range SelectedKinds(p.Spec) {
		if KindProblem(d.Served, p, gvk) != "" {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabels{idLabel: p.ID}}
		if !p.Cluster {
			opts = append(opts, client.InNamespace(p.Namespace))
		}
		if err := d.Reader.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("listing %s claimed by %s: %w", gvk, p, err)
		}
		for i := range list.Items {
			if err := d.releaseTemplate(ctx, list.Items[i].DeepCopy(), p); err != nil {
				return err
			}
		}
	}
	log.Info("released templates of deleted policy", "policy", p.String(), "bindings", len(bindings))
	return nil
}

func (d *Detector) releaseTemplate(ctx context.Context, tmpl *unstructured.Unstructured, p PolicyRef) error {
	if !removeClaim(tmpl, p.Cluster, p.ID) {
		return nil
	}
	if err := d.Client.Update(ctx, tmpl); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing claim from %s %s/%s: %w", tmpl.GetKind(), tmpl.GetNamespace(), tmpl.GetName(), err)
	}
	return nil
}

// retryConflicts turns a lost write race into a quick, quiet requeue: the
// next pass re-reads the policy and decides again.
func retryConflicts(err error) (reconcile.Result, error) {
	if err != nil && apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	return reconcile.Result{}, err
}
