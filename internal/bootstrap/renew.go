package bootstrap

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
)

// RenewOptions are how an agent renews its certificate.
type RenewOptions struct {
	// ClusterName is the Pull cluster the agent serves.
	ClusterName string
	// Duration is the validity asked for; the signer may cap it.
	Duration time.Duration
	// PollInterval is how often the request is read back (default 1s).
	PollInterval time.Duration
	// Timeout bounds the wait for the certificate (default 2m).
	Timeout time.Duration
	// Progress receives one line per step; may be nil.
	Progress func(line string)
}

// Renew gets the agent of o.ClusterName a new client certificate for a new
// key, asked with cs, which authenticates as the agent with its current
// certificate: the approver approves a request of AgentUser(NAME) only for
// that same name (Decide's renewal).
func Renew(ctx context.Context, cs kubernetes.Interface, o RenewOptions) (Issued, error) {
	if err := ValidateCertificateDuration(o.Duration); err != nil {
		return Issued{}, fmt.Errorf("the certificate duration %w", err)
	}
	w := certificateWait{poll: o.PollInterval, timeout: o.Timeout, progress: o.Progress,
		explain: func(err error, what string) error { return renewError(err, o.ClusterName, what) }}
	if w.poll <= 0 {
		w.poll = defaultPollInterval
	}
	if w.timeout <= 0 {
		w.timeout = DefaultRegisterTimeout
	}
	if w.progress == nil {
		w.progress = func(string) {}
	}
	return requestCertificate(ctx, cs, o.ClusterName, o.Duration, w)
}

// ValidateCertificateDuration checks that a request can ask for d: its
// expirationSeconds is an int32, of at least 600.
func ValidateCertificateDuration(d time.Duration) error {
	if d < MinCertificateDuration || d > MaxCertificateDuration {
		return fmt.Errorf("%s: the API server accepts %s to %s", d, MinCertificateDuration, MaxCertificateDuration)
	}
	return nil
}

// renewError explains a failed call made with the agent's certificate.
func renewError(err error, clusterName, what string) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the control plane refused the agent's current certificate (expired, or signed by a CA it no longer trusts); register again with `lifeboat token create --cluster %s` and `lifeboat register`: %w", what, clusterName, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: the agent may not request certificates: either its roles were made by a Lifeboat without certificate renewal, and running `lifeboat token create --cluster %s` once updates them, or the cluster was unjoined, and the agent should be removed: %w", what, clusterName, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
