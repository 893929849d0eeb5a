package detector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// reconcileTemplate is the template controller: observe the template, its
// binding and the policies, decide which policy claims it, write the claim
// and the binding.
func (d *Detector) reconcileTemplate(ctx context.Context, key TemplateKey) (reconcile.Result, error) {
	res, err := d.syncTemplate(ctx, key)
	switch {
	case err == nil:
		return res, nil
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		// Another writer got there first: re-read and re-decide.
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace is going away, and the template with it.
		return reconcile.Result{}, nil
	}
	return res, err
}

// conflictRequeue is how soon a reconcile that lost a write race runs again.
const conflictRequeue = 200 * time.Millisecond

func (d *Detector) syncTemplate(ctx context.Context, key TemplateKey) (reconcile.Result, error) {
	if IsSkippedKind(key.GVK) || IsSkippedNamespace(key.Namespace) {
		return reconcile.Result{}, nil
	}
	wanted, err := d.isWanted(ctx, key.GVK)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !wanted && !d.isWatching(key.GVK) {
		// No policy selects the kind: only make sure a binding does not
		// outlive its template (no garbage collector runs here).
		return reconcile.Result{}, d.collectOrphanBinding(ctx, key)
	}
	if wanted {
		if err := d.ensureWatch(ctx, key.GVK); err != nil {
			return reconcile.Result{}, err
		}
	}

	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(key.GVK)
	if err := d.Reader.Get(ctx, key.nn(), tmpl); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return reconcile.Result{}, d.deleteBindingOf(ctx, key)
		case isNoMatch(err):
			return reconcile.Result{}, d.kindNotServed(ctx, key, nil, err)
		}
		return reconcile.Result{}, fmt.Errorf("getting template %s: %w", key, err)
	}
	if IgnoredTemplate(tmpl) != "" {
		return reconcile.Result{}, nil
	}

	existing, err := d.getBinding(ctx, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	if existing != nil {
		if !refersTo(existing, key) {
			ref := BindingSpec(existing).Resource
			d.Recorder.Eventf(tmpl, corev1.EventTypeWarning, ReasonApplyPolicyFailed,
				"binding %s already belongs to %s %s %s/%s", existing.GetName(), ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)
			return reconcile.Result{}, nil
		}
		if uid := BindingSpec(existing).Resource.UID; uid != "" && uid != tmpl.GetUID() {
			// Left by a deleted template of the same name: remove it, then
			// build a new one.
			if err := d.deleteBinding(ctx, existing); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: staleBindingRetry}, nil
		}
	}

	p, ok, err := d.choosePolicy(ctx, tmpl, existing)
	if err != nil || !ok {
		return reconcile.Result{}, err
	}
	return d.applyPolicy(ctx, tmpl, existing, p)
}

// choosePolicy returns the policy that claims tmpl (see ChoosePolicy) and
// removes a stale claim first, from the binding then the template. tmpl and
// existing are updated in place when written.
func (d *Detector) choosePolicy(ctx context.Context, tmpl *unstructured.Unstructured, existing client.Object) (PolicyRef, bool, error) {
	choice, err := ChoosePolicy(ctx, ReaderSource(d.Reader), tmpl)
	if err != nil {
		return PolicyRef{}, false, err
	}
	if choice.Stale != nil {
		if err := d.releaseClaim(ctx, tmpl, existing, choice.Stale.Cluster, choice.Stale.ID); err != nil {
			return PolicyRef{}, false, err
		}
	}
	return choice.Policy, choice.OK, nil
}

// applyPolicy claims tmpl for p and creates or updates its binding, writing
// only what changed.
func (d *Detector) applyPolicy(ctx context.Context, tmpl *unstructured.Unstructured, existing client.Object, p PolicyRef) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("policy", p.String())
	if missing, err := MissingOverrides(ctx, d.Reader, p); err != nil {
		return reconcile.Result{}, err
	} else if len(missing) > 0 {
		d.Recorder.Eventf(tmpl, corev1.EventTypeWarning, ReasonApplyPolicyFailed,
			"%s waits for its dependent overrides %s", p, strings.Join(missing, ", "))
		return reconcile.Result{RequeueAfter: overridesRetry}, nil
	}

	claimed := tmpl.DeepCopy()
	claimChanged := setClaim(claimed, p)
	if !claimChanged && existing != nil {
		claimed.SetResourceVersion(d.versionForBinding(tmpl, existing))
	}
	if p.Spec.ActivationPreference == policyv1alpha1.LazyActivation && !claimChanged && existing != nil &&
		BindingSpec(existing).Resource.ResourceVersion == claimed.GetResourceVersion() {
		// Lazy: policy changes wait for the next change of the template.
		return reconcile.Result{}, nil
	}
	if claimChanged {
		if err := d.Client.Update(ctx, claimed); err != nil {
			return reconcile.Result{}, d.failed(tmpl, p, fmt.Errorf("claiming template: %w", err))
		}
	}
	tmpl = claimed

	r, err := ReplicasOf(d.Interpreter, tmpl)
	if err != nil {
		return reconcile.Result{}, d.failed(tmpl, p, err)
	}
	if existing == nil && !claimChanged && d.Echoes.Has(string(tmpl.GetUID()), tmpl.GetResourceVersion()) {
		// This controller created the binding for this very version a
		// moment ago, and the cache does not hold it yet: its creation
		// event brings the template back.
		return reconcile.Result{}, nil
	}
	if existing == nil && !claimChanged && d.APIReader != nil {
		// Claimed already, usually by this controller a moment ago, whose
		// binding has not reached the cache yet: ask the API server rather
		// than fail a create.
		key := TemplateKey{GVK: tmpl.GroupVersionKind(), Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}
		if existing, err = BindingOf(ctx, d.APIReader, key); err != nil {
			return reconcile.Result{}, err
		}
		if existing != nil && (!refersTo(existing, key) || BindingSpec(existing).Resource.UID != tmpl.GetUID()) {
			// Not simply ours: decide from the cache once it has caught up.
			return reconcile.Result{RequeueAfter: conflictRequeue}, nil
		}
	}
	if existing == nil {
		b := BuildBinding(tmpl, p, r, d.NewID())
		if err := d.Client.Create(ctx, b); err != nil {
			return reconcile.Result{}, d.failed(tmpl, p, fmt.Errorf("creating binding %s: %w", b.GetName(), err))
		}
		d.Echoes.Wrote(string(tmpl.GetUID()), tmpl.GetResourceVersion())
		log.V(1).Info("created binding", "binding", b.GetName())
		d.applied(tmpl, p, "Applied %s; created binding %s", p, b.GetName())
		return reconcile.Result{}, nil
	}
	b := existing.DeepCopyObject().(client.Object)
	if !MergeBinding(b, tmpl, p, r, d.NewID()) {
		if claimChanged {
			d.applied(tmpl, p, "Applied %s", p)
		}
		return reconcile.Result{}, nil
	}
	if err := d.Client.Update(ctx, b); err != nil {
		return reconcile.Result{}, d.failed(tmpl, p, fmt.Errorf("updating binding %s: %w", b.GetName(), err))
	}
	log.V(1).Info("updated binding", "binding", b.GetName())
	if claimChanged {
		d.applied(tmpl, p, "Applied %s; updated binding %s", p, b.GetName())
	}
	return reconcile.Result{}, nil
}

// applied records ApplyPolicySucceed on the template, within the policy's
// budget of Events: past its burst, a mass rollout's are counted on the
// policy instead.
func (d *Detector) applied(tmpl *unstructured.Unstructured, p PolicyRef, format string, args ...any) {
	workload := eventbudget.Template(tmpl.GetKind(), tmpl.GetNamespace(), tmpl.GetName())
	if d.Events.Allow(p.subject(), corev1.EventTypeNormal, ReasonApplyPolicySucceed, workload) {
		d.Recorder.Eventf(tmpl, corev1.EventTypeNormal, ReasonApplyPolicySucceed, format, args...)
	}
}

// failed records ApplyPolicyFailed on the template and returns err for a
// retry. Conflicts are retried without an Event: they are expected when
// several controllers write the same object. Neither is a write refused in
// a terminating namespace: the template goes with it, and the Event would
// be refused too.
func (d *Detector) failed(tmpl *unstructured.Unstructured, p PolicyRef, err error) error {
	if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		d.Recorder.Eventf(tmpl, corev1.EventTypeWarning, ReasonApplyPolicyFailed, "Applying %s failed: %v", p, err)
	}
	return err
}

// ReplicasOf is what the interpreter in says about tmpl's replicas; a kind
// without replicas has none (it is propagated whole).
func ReplicasOf(in interpreter.Interpreter, tmpl *unstructured.Unstructured) (ReplicaInfo, error) {
	replicas, reqs, ok, err := in.GetReplicas(tmpl)
	if err != nil {
		return ReplicaInfo{}, fmt.Errorf("interpreting replicas: %w", err)
	}
	if !ok {
		return ReplicaInfo{}, nil
	}
	return ReplicaInfo{Replicas: replicas, Requirements: reqs}, nil
}

// MissingOverrides lists the policy's dependentOverrides that r does not
// hold: the detector does not apply a policy until they exist.
func MissingOverrides(ctx context.Context, r client.Reader, p PolicyRef) ([]string, error) {
	var missing []string
	for _, name := range p.Spec.DependentOverrides {
		var obj client.Object = &policyv1alpha1.OverridePolicy{}
		key := types.NamespacedName{Namespace: p.Namespace, Name: name}
		if p.Cluster {
			obj, key = &policyv1alpha1.ClusterOverridePolicy{}, types.NamespacedName{Name: name}
		}
		if err := r.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, name)
				continue
			}
			return nil, fmt.Errorf("getting dependent override %s: %w", name, err)
		}
	}
	return missing, nil
}

// releaseClaim removes the claim of policy id from the binding first and
// then from the template (so that the binding never looks claimed by a
// policy the template left). Both are updated in place.
func (d *Detector) releaseClaim(ctx context.Context, tmpl *unstructured.Unstructured, binding client.Object, cluster bool, id string) error {
	if binding != nil && removeClaim(binding, cluster, id) {
		if err := d.Client.Update(ctx, binding); err != nil {
			return fmt.Errorf("removing claim from binding %s: %w", binding.GetName(), err)
		}
	}
	if removeClaim(tmpl, cluster, id) {
		if err := d.Client.Update(ctx, tmpl); err != nil {
			return fmt.Errorf("removing claim from template: %w", err)
		}
	}
	return nil
}

// getBinding returns the binding named after the template, or nil.
func (d *Detector) getBinding(ctx context.Context, key TemplateKey) (client.Object, error) {
	return BindingOf(ctx, d.Reader, key)
}

// BindingOf returns the binding named after the template key (which may be
// another template's: see BindsTemplate), or nil, reading through r.
func BindingOf(ctx context.Context, r client.Reader, key TemplateKey) (client.Object, error) {
	b := newBindingObject(key.Namespace != "")
	if err := r.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: BindingName(key.GVK.Kind, key.Name)}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting binding of %s: %w", key, err)
	}
	return b, nil
}

// refersTo reports whether binding b is the binding of the template key
// (same group, kind, namespace and name; the version may differ).
func refersTo(b client.Object, key TemplateKey) bool {
	return BindsTemplate(BindingSpec(b).Resource, key.GVK.GroupKind(), key.Namespace, key.Name)
}

// collectOrphanBinding deletes the binding of a template of a kind no policy
// selects when the template is gone. It reads metadata only, sharing the
// metadata informers of the dependencies distributor.
func (d *Detector) collectOrphanBinding(ctx context.Context, key TemplateKey) error {
	b, err := d.getBinding(ctx, key)
	if err != nil || b == nil || !refersTo(b, key) {
		return err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(key.GVK)
	switch err := d.Reader.Get(ctx, key.nn(), m); {
	case err == nil:
		if uid := BindingSpec(b).Resource.UID; uid == "" || uid == m.GetUID() {
			return nil
		}
	case apierrors.IsNotFound(err):
	case isNoMatch(err):
		return d.kindNotServed(ctx, key, b, err)
	default:
		return fmt.Errorf("getting template %s: %w", key, err)
	}
	return d.deleteBinding(ctx, b)
}

// TemplateKindNotServedError says the API server does not serve the kind of
// a template at the version its key (from a binding, say) names: a CRD that
// stopped serving that version or was removed, or a group the RESTMapper
// cannot resolve for a moment. That says nothing of whether the template
// exists, so its binding is kept (deleting it would delete every Work, and
// the workload in every member); the template is read again with back-off.
type TemplateKindNotServedError struct {
	Key TemplateKey
	Err error
}

func (e *TemplateKindNotServedError) Error() string {
	apiVersion, kind := e.Key.GVK.ToAPIVersionAndKind()
	return fmt.Sprintf("%s %s of template %s is not served; its binding is kept and the template read again: %v",
		kind, apiVersion, e.Key.name(), e.Err)
}

func (e *TemplateKindNotServedError) Unwrap() error { return e.Err }

// kindNotServed reports a template whose kind is not served: a Warning
// event on its binding (b, or the one named after key), and the error that
// has the template read again with back-off.
func (d *Detector) kindNotServed(ctx context.Context, key TemplateKey, b client.Object, cause error) error {
	notServed := &TemplateKindNotServedError{Key: key, Err: cause}
	if b == nil {
		found, err := d.getBinding(ctx, key)
		if err != nil {
			return errors.Join(notServed, err)
		}
		if found != nil && refersTo(found, key) {
			b = found
		}
	}
	if b != nil {
		apiVersion, kind := key.GVK.ToAPIVersionAndKind()
		d.Recorder.Eventf(b, corev1.EventTypeWarning, ReasonTemplateKindNotServed,
			"%s %s is not served, so whether template %s exists is not known: the binding, its Works and the member copies are kept; delete the binding to remove them",
			kind, apiVersion, key.name())
	}
	return notServed
}

// deleteBindingOf deletes the binding of a template that no longer exists.
func (d *Detector) deleteBindingOf(ctx context.Context, key TemplateKey) error {
	b, err := d.getBinding(ctx, key)
	if err != nil || b == nil || !refersTo(b, key) {
		return err
	}
	return d.deleteBinding(ctx, b)
}

// deleteBinding deletes b, guarded by its UID so that a binding recreated
// meanwhile is kept. Karmada relies on the garbage collector through the
// owner reference; this control plane runs none.
func (d *Detector) deleteBinding(ctx context.Context, b client.Object) error {
	if !b.GetDeletionTimestamp().IsZero() {
		return nil
	}
	uid := b.GetUID()
	err := d.Client.Delete(ctx, b, client.Preconditions{UID: &uid})
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).Info("deleted binding of a deleted template", "binding", b.GetName())
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	default:
		return fmt.Errorf("deleting binding %s: %w", b.GetName(), err)
	}
}

func infoOf(u *unstructured.Unstructured) templateInfo {
	return templateInfo{
		APIVersion: u.GetAPIVersion(),
		Kind:       u.GetKind(),
		Namespace:  u.GetNamespace(),
		Name:       u.GetName(),
		Labels:     u.GetLabels(),
	}
}

func isNoMatch(err error) bool {
	var noKind *meta.NoKindMatchError
	return meta.IsNoMatchError(err) || errors.As(err, &noKind)
}

// versionForBinding is the template version the binding should name: the
// binding's own when the template has since changed only by status writes
// of this process (the binding-status controller's), else the template's.
// At thousands of templates the detector reaches a template's claim event
// after its first status was written; updating the binding for that
// version alone would make the scheduler, binding and binding-status
// controllers run again for nothing.
func (d *Detector) versionForBinding(tmpl *unstructured.Unstructured, existing client.Object) string {
	named := BindingSpec(existing).Resource.ResourceVersion
	if named != tmpl.GetResourceVersion() && d.Statuses.SameButStatus(tmpl.GetUID(), named, tmpl.GetResourceVersion()) {
		return named
	}
	return tmpl.GetResourceVersion()
}
