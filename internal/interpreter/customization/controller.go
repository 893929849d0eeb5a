package customization

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "resource-interpreter-customization"

// initialLoadTimeout bounds how long the interpreter waits at start-up for
// the customizations to be listed (for example when the CRD is missing).
const initialLoadTimeout = 30 * time.Second

// Reconciler loads ResourceInterpreterCustomizations into Layer.
type Reconciler struct {
	// Client reads customizations (the manager's cached client).
	Client client.Client
	// Recorder receives ScriptInvalid Events.
	Recorder record.EventRecorder
	// Layer is the layer to keep up to date; the same one given to
	// NewInterpreter.
	// Its OnKindChanged subscribers are told when the rules of a kind
	// change.
	Layer *Layer
}

// Reconcile compiles one customization into the layer, or removes it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("customization", req.Name)
	oldTarget, served := r.Layer.Target(req.Name)
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	if err := r.Client.Get(ctx, req.NamespacedName, ric); err != nil {
		if apierrors.IsNotFound(err) {
			r.delete(ctx, req.Name, oldTarget, served)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get customization %s: %w", req.Name, err)
	}
	if !ric.DeletionTimestamp.IsZero() {
		r.delete(ctx, ric.Name, oldTarget, served)
		return ctrl.Result{}, nil
	}
	program, changed := r.load(ctx, ric)
	log.V(1).Info("customization loaded", "target", ric.Spec.Target.APIVersion+"/"+ric.Spec.Target.Kind)
	if changed {
		r.kindChanged(ctx, program.Target)
		if served && oldTarget != program.Target {
			r.kindChanged(ctx, oldTarget)
		}
	}
	return ctrl.Result{}, nil
}

// delete stops serving the customization name, which was served for
// target when served is true.
func (r *Reconciler) delete(ctx context.Context, name string, target schema.GroupVersionKind, served bool) {
	r.Layer.Delete(name)
	if served {
		r.kindChanged(ctx, target)
	}
}

func (r *Reconciler) kindChanged(ctx context.Context, target schema.GroupVersionKind) {
	if target.Empty() {
		return
	}
	ctrl.LoggerFrom(ctx).V(1).Info("interpreter rules changed", "target", target.String())
	r.Layer.kindChanged(ctx, target)
}

// load compiles ric into the layer and reports broken scripts once per
// change. It returns the program and whether the rules changed.
func (r *Reconciler) load(ctx context.Context, ric *configv1alpha1.ResourceInterpreterCustomization) (*lua.Program, bool) {
	program, changed := r.Layer.Set(ric)
	if !changed {
		return program, false
	}
	for _, op := range lua.Operations {
		err := program.Errors[op]
		if err == nil {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("customization script is invalid", "customization", ric.Name, "operation", op, "error", err.Error())
		if r.Recorder != nil {
			r.Recorder.Event(ric, corev1.EventTypeWarning, ReasonScriptInvalid,
				truncate(fmt.Sprintf("%s script (function %s): %v", op, op.Function(), err)))
		}
	}
	return program, true
}

// SetupWithManager registers the controller and a start-up step that loads
// every customization before the interpreter answers its first question.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Layer.expectInitialLoad()
	if err := mgr.Add(manager.RunnableFunc(r.initialLoad)); err != nil {
		return fmt.Errorf("add initial customization load: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&configv1alpha1.ResourceInterpreterCustomization{}).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NewQueue: queue.New}).
		Complete(r)
}

// initialLoad lists the customizations once the cache is ready, retrying
// for up to initialLoadTimeout, then releases the layer.
func (r *Reconciler) initialLoad(ctx context.Context) error {
	defer r.Layer.initialLoadDone()
	log := ctrl.LoggerFrom(ctx).WithValues("controller", ControllerName)
	deadline := r.Layer.clock.Now().Add(initialLoadTimeout)
	for {
		list := &configv1alpha1.ResourceInterpreterCustomizationList{}
		err := r.Client.List(ctx, list)
		if err == nil {
			for i := range list.Items {
				r.load(ctx, &list.Items[i])
			}
			log.Info("customizations loaded", "count", len(list.Items))
			return nil
		}
		if r.Layer.clock.Now().After(deadline) {
			log.Error(err, "cannot list customizations; interpreting without them until they can be read")
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}
