package bootstrap

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// ApproverReconciler approves the CertificateSigningRequests of Pull
// clusters' agents, or denies them, as Decide says. It writes only the
// Approved or Denied condition, through the /approval subresource; signing
// is kube-controller-manager's.
type ApproverReconciler struct {
	Client client.Client
	// APIReader reads a Cluster the cache does not hold yet, before a
	// request is denied for its absence (a token is often used right after
	// `lifeboat token create` made its Cluster); may be nil.
	APIReader client.Reader
	// Recorder records an Event on each decision; may be nil.
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
}

// SetupWithManager watches the requests to the kube-apiserver-client signer
// that are not decided yet.
func (r *ApproverReconciler) SetupWithManager(mgr ctrl.Manager) error {
	pending := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		if !ok {
			return false
		}
		_, _, pending := pendingAgentRequest(csr)
		return pending
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("agent-csr-approving").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(pending)).
		WithOptions(controller.Options{NewQueue: queue.New}).
		Complete(r)
}

// mayRenew asks the API server whether the requester of csr may create
// certificatesigningrequests/RenewalSubresource.
func (r *ApproverReconciler) mayRenew(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   csr.Spec.Username,
		Groups: csr.Spec.Groups,
		UID:    csr.Spec.UID,
		Extra:  extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group:       certificatesv1.GroupName,
			Resource:    "certificatesigningrequests",
			Subresource: RenewalSubresource,
			Verb:        "create",
		},
	}}
	if err := r.Client.Create(ctx, sar); err != nil {
		return false, err
	}
	if !sar.Status.Allowed && sar.Status.EvaluationError != "" {
		// An authorizer that could not decide (a webhook timing out) is
		// no answer: decide again later rather than deny.
		return false, fmt.Errorf("the authorizer could not decide: %s", sar.Status.EvaluationError)
	}
	return sar.Status.Allowed && !sar.Status.Denied, nil
}

// Reconcile decides a request and writes the decision; a request with
// nothing to decide costs no write.
func (r *ApproverReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var csr certificatesv1.CertificateSigningRequest
	if err := r.Client.Get(ctx, req.NamespacedName, &csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	approve, deny, reason, message := Decide(&csr, func(name string) (*clusterv1alpha1.Cluster, error) {
		var c clusterv1alpha1.Cluster
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &c)
		if apierrors.IsNotFound(err) && r.APIReader != nil {
			err = r.APIReader.Get(ctx, client.ObjectKey{Name: name}, &c)
		}
		if err != nil {
			return nil, err
		}
		return &c, nil
	}, func(csr *certificatesv1.CertificateSigningRequest) (bool, error) {
		return r.mayRenew(ctx, csr)
	})
	switch {
	case reason == ReasonClusterLookupFailed || reason == ReasonAuthorizationFailed:
		return ctrl.Result{}, fmt.Errorf("deciding CertificateSigningRequest %s: %s", csr.Name, message)
	case !approve && !deny:
		return ctrl.Result{}, nil
	}
	cond := certificatesv1.CertificateSigningRequestCondition{
		Type:           certificatesv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         reason,
		Message:        message,
		LastUpdateTime: metav1.NewTime(r.Clock.Now()),
	}
	eventType := corev1.EventTypeNormal
	if deny {
		cond.Type, eventType = certificatesv1.CertificateDenied, corev1.EventTypeWarning
	}
	csr.Status.Conditions = append(csr.Status.Conditions, cond)
	if err := r.Client.SubResource("approval").Update(ctx, &csr); err != nil {
		if apierrors.IsConflict(err) {
			// Changed meanwhile: decide again on what it is now.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the %s condition of CertificateSigningRequest %s: %w", cond.Type, csr.Name, err)
	}
	log.Info("agent certificate request decided", "csr", csr.Name, "decision", cond.Type, "reason", reason, "requester", csr.Spec.Username)
	if r.Recorder != nil {
		r.Recorder.Eventf(&csr, nil, eventType, reason, string(cond.Type), "%s", message)
	}
	return ctrl.Result{}, nil
}
