package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
)

func TestApproverReconciler(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		csr      *certificatesv1.CertificateSigningRequest
		clusters []client.Object
		// allowed answers the SubjectAccessReview of a renewal.
		allowed bool
		want    certificatesv1.RequestConditionType // "" for no write
		reason  string
	}{
		"approves a Pull cluster's agent": {
			csr: makeCSR(t, "a").Obj(), clusters: []client.Object{makeCluster("member1", clusterv1alpha1.Pull)},
			want: certificatesv1.CertificateApproved, reason: ReasonApproved,
		},
		"denies a Push cluster's name": {
			csr: makeCSR(t, "b").Obj(), clusters: []client.Object{makeCluster("member1", clusterv1alpha1.Push)},
			want: certificatesv1.CertificateDenied, reason: ReasonClusterNotPull,
		},
		"approves an agent's renewal its role allows": {
			csr: makeCSR(t, "r").Renewal("member1").Obj(), clusters: []client.Object{makeCluster("member1", clusterv1alpha1.Pull)},
			allowed: true, want: certificatesv1.CertificateApproved, reason: ReasonApproved,
		},
		"denies a renewal its role does not allow (a name and group from other credentials)": {
			csr: makeCSR(t, "s").Renewal("member1").Obj(), clusters: []client.Object{makeCluster("member1", clusterv1alpha1.Pull)},
			want: certificatesv1.CertificateDenied, reason: ReasonRenewalNotAllowed,
		},
		"leaves a kubelet's request alone": {
			csr: makeCSR(t, "c").Signer(certificatesv1.KubeAPIServerClientKubeletSignerName).Obj(),
		},
		"leaves a decided request alone": {
			csr: makeCSR(t, "d").Condition(certificatesv1.CertificateDenied).Obj(), clusters: []client.Object{makeCluster("member1", clusterv1alpha1.Pull)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var writes []string
			base := fakeClient(t, append(tc.clusters, tc.csr)...)
			var reviews []authorizationv1.SubjectAccessReviewSpec
			counted := interceptor.NewClient(base, clienttest.CountWrites(func(verb string, obj client.Object) {
				writes = append(writes, verb)
			}))
			c := interceptor.NewClient(counted, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				sar, ok := obj.(*authorizationv1.SubjectAccessReview)
				if !ok {
					return c.Create(ctx, obj, opts...)
				}
				reviews = append(reviews, sar.Spec)
				sar.Status.Allowed = tc.allowed
				return nil
			}})
			r := &ApproverReconciler{Client: c, Clock: clocktesting.NewFakePassiveClock(now)}
			req := ctrl.Request{NamespacedName: types.NamespacedName{Name: tc.csr.Name}}
			for range 2 { // the second pass has nothing to do
				if _, err := r.Reconcile(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
			if renewal(tc.csr) && tc.want != "" {
				want := authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: RenewalSubresource, Verb: "create"}
				if len(reviews) == 0 || reviews[0].User != tc.csr.Spec.Username || *reviews[0].ResourceAttributes != want {
					t.Errorf("reviews %+v, want the requester's create of certificatesigningrequests/%s", reviews, RenewalSubresource)
				}
			} else if len(reviews) != 0 {
				t.Errorf("asked %d SubjectAccessReviews for a request that is no renewal", len(reviews))
			}
			if tc.want == "" {
				if len(writes) != 0 {
					t.Errorf("wrote %v", writes)
				}
				return
			}
			if len(writes) != 1 || writes[0] != "update/approval" {
				t.Fatalf("writes %v, want one update/approval", writes)
			}
			var got certificatesv1.CertificateSigningRequest
			if err := base.Get(context.Background(), req.NamespacedName, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Conditions) != 1 {
				t.Fatalf("conditions %+v", got.Status.Conditions)
			}
			cond := got.Status.Conditions[0]
			if cond.Type != tc.want || cond.Reason != tc.reason || cond.Status != "True" || !cond.LastUpdateTime.Time.Equal(now) {
				t.Errorf("condition %+v", cond)
			}
		})
	}
}

// A renewal whose authorization the authorizer could not evaluate (a
// webhook timing out) is decided again later, not denied.
func TestApproverRetriesAnUndecidedAuthorization(t *testing.T) {
	csr := makeCSR(t, "r").Renewal("member1").Obj()
	base := fakeClient(t, makeCluster("member1", clusterv1alpha1.Pull), csr)
	c := interceptor.NewClient(base, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
			sar.Status.EvaluationError = "webhook: context deadline exceeded"
			return nil
		}
		return c.Create(ctx, obj, opts...)
	}})
	r := &ApproverReconciler{Client: c, Clock: clocktesting.NewFakePassiveClock(time.Now())}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: csr.Name}}); err == nil || !strings.Contains(err.Error(), "could not decide") {
		t.Errorf("Reconcile = %v, want an error to decide again", err)
	}
	var got certificatesv1.CertificateSigningRequest
	if err := base.Get(context.Background(), client.ObjectKeyFromObject(csr), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 {
		t.Errorf("decided %+v, want no decision", got.Status.Conditions)
	}
}

// A Cluster the cache does not hold yet is read from the API server before
// the request is denied for its absence.
func TestApproverReadsAClusterTheCacheLacks(t *testing.T) {
	csr := makeCSR(t, "fresh").Obj()
	cache := fakeClient(t, csr)
	live := fakeClient(t, makeCluster("member1", clusterv1alpha1.Pull))
	r := &ApproverReconciler{Client: cache, APIReader: live, Clock: clocktesting.NewFakePassiveClock(time.Now())}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "fresh"}}); err != nil {
		t.Fatal(err)
	}
	var got certificatesv1.CertificateSigningRequest
	if err := cache.Get(context.Background(), types.NamespacedName{Name: "fresh"}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Errorf("conditions %+v, want Approved", got.Status.Conditions)
	}
}
