package bootstrap

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// A renewal's failures say what to do, in the agent's terms rather than
// the bootstrap token's.
func TestRenewErrors(t *testing.T) {
	csrs := schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	cases := map[string]struct {
		err  error
		want string
	}{
		"refused certificate":   {apierrors.NewUnauthorized("expired"), "refused the agent's current certificate"},
		"roles without renewal": {apierrors.NewForbidden(csrs, "", errors.New("no")), "running `lifeboat token create --cluster member1` once"},
		"anything else":         {errors.New("connection refused"), "creating the CertificateSigningRequest: connection refused"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := renewError(tc.err, "member1", "creating the CertificateSigningRequest"); !strings.Contains(got.Error(), tc.want) || !errors.Is(got, tc.err) {
				t.Errorf("%v: want it to say %q and wrap the cause", got, tc.want)
			}
		})
	}
	if _, err := Renew(context.Background(), fake.NewClientset(), RenewOptions{ClusterName: "member1", Duration: time.Minute}); err == nil || !strings.Contains(err.Error(), "the API server accepts 10m0s") {
		t.Errorf("a one-minute renewal: %v, want it refused before any request", err)
	}
}
