package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

// Defaults of certificate rotation.
const (
	// DefaultRenewFraction renews a certificate when 72-88 % of its
	// validity has passed (0.8, give or take a tenth).
	DefaultRenewFraction = 0.8
	// MaxRenewFraction leaves at least an eighth of the validity, after
	// the jitter (0.8 x 1.1 = 0.88), to renew in.
	MaxRenewFraction = 0.8
	// renewRetry and renewMaxRetry pace the attempts after a failed
	// renewal: doubled after each failure, up to the most.
	renewRetry    = 10 * time.Second
	renewMaxRetry = 5 * time.Minute
)

// KubeconfigSecretKey is the key of the agent's kubeconfig in the Secret
// --kubeconfig-secret names.
const KubeconfigSecretKey = "kubeconfig"

// RenewalTime is when a certificate valid from notBefore to notAfter is
// renewed: once fraction of its validity has passed, moved by up to a tenth
// of that either way by jitter (in [0, 1)), so that agents registered
// together do not renew together; in whole seconds. A fraction of at most
// MaxRenewFraction keeps it before notAfter.
func RenewalTime(notBefore, notAfter time.Time, fraction, jitter float64) time.Time {
	f := fraction * (0.9 + 0.2*jitter)
	return notBefore.Add(time.Duration(float64(notAfter.Sub(notBefore)) * f).Truncate(time.Second))
}

// RenewalDuration is the validity a renewal asks for: configured when set,
// else the current certificate's own validity in whole minutes, kept within
// what a request can ask.
func RenewalDuration(cert *x509.Certificate, configured time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	d := cert.NotAfter.Sub(cert.NotBefore).Truncate(time.Minute)
	return min(max(d, 10*time.Minute), bootstrap.MaxCertificateDuration)
}

// CertificateStore keeps a renewed certificate for the agent's next start.
type CertificateStore interface {
	// Save keeps certPEM and keyPEM.
	Save(ctx context.Context, certPEM, keyPEM []byte) error
	// String says where, for the log.
	String() string
}

// WithCertificate returns kubeconfig with the client certificate and key of
// context's user (the current context's when context is empty) replaced by
// certPEM and keyPEM, embedded.
func WithCertificate(kubeconfig []byte, context string, certPEM, keyPEM []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if context == "" {
		context = cfg.CurrentContext
	}
	c, ok := cfg.Contexts[context]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig has no context %q", context)
	}
	user, ok := cfg.AuthInfos[c.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig has no user %q (of context %q)", c.AuthInfo, context)
	}
	user.ClientCertificateData, user.ClientKeyData = certPEM, keyPEM
	user.ClientCertificate, user.ClientKey = "", ""
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the kubeconfig: %w", err)
	}
	return out, nil
}

// KubeconfigFile keeps renewed certificates in the agent's kubeconfig file,
// rewritten atomically (mode 0600).
type KubeconfigFile struct {
	Path    string
	Context string
}

func (f *KubeconfigFile) String() string { return "file " + f.Path }

// Save rewrites the file with the certificate.
func (f *KubeconfigFile) Save(_ context.Context, certPEM, keyPEM []byte) error {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.Path, err)
	}
	out, err := WithCertificate(data, f.Context, certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	return bootstrap.WriteFileAtomic(f.Path, out, 0o600)
}

// Writable reports why the file could not be rewritten (its directory is
// read-only, as a mounted Secret is), or nil.
func (f *KubeconfigFile) Writable() error {
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".check-*")
	if err != nil {
		return err
	}
	_ = tmp.Close()
	return os.Remove(tmp.Name())
}

// KubeconfigSecret keeps renewed certificates in a Secret of the member
// that holds the agent's kubeconfig under KubeconfigSecretKey (the agent
// chart mounts it).
type KubeconfigSecret struct {
	Secrets   corev1client.SecretsGetter
	Namespace string
	Name      string
	Context   string
}

func (s *KubeconfigSecret) String() string { return "Secret " + s.Namespace + "/" + s.Name }

// Save updates the Secret's kubeconfig with the certificate.
func (s *KubeconfigSecret) Save(ctx context.Context, certPEM, keyPEM []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		secret, err := s.Secrets.Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading %s: %w", s, err)
		}
		out, err := WithCertificate(secret.Data[KubeconfigSecretKey], s.Context, certPEM, keyPEM)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		secret.Data[KubeconfigSecretKey] = out
		if _, err := s.Secrets.Secrets(s.Namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("updating %s: %w", s, err)
		}
		return nil
	})
}

// Load returns the client configuration of the Secret's kubeconfig.
func (s *KubeconfigSecret) Load(ctx context.Context) (*rest.Config, error) {
	secret, err := s.Secrets.Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s, err)
	}
	raw, err := clientcmd.Load(secret.Data[KubeconfigSecretKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*raw, s.Context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	return rc, nil
}

// Rotator renews the agent's client certificate before it expires: at
// RenewalTime it asks the control plane for a certificate for a new key
// (bootstrap.Renew, authenticated by the current one), swaps it into
// Credentials and keeps it in Store.
//
//   - A failed renewal is tried again 10 s later, twice as late after each
//     failure (at most 5 minutes, and, while the certificate is valid, at
//     most a tenth of the time it has left), the current certificate
//     serving meanwhile.
//   - A renewed certificate that could not be kept is used, and kept later
//     with the same pacing; renewals go on meanwhile.
//   - After a renewal the next one waits at least a tenth of the new
//     certificate's validity (a minute at least), however early the new
//     certificate looks due: a member's clock far ahead of the signer's
//     would otherwise renew without pause.
//   - It sleeps an hour at the most and looks again, so that a wall clock
//     set anew is noticed.
type Rotator struct {
	Credentials *Credentials
	// Client creates the requests; it must authenticate with Credentials.
	Client   kubernetes.Interface
	Cluster  string
	Fraction float64
	// Duration is the validity asked for; 0 asks for the validity of the
	// certificate held at the first renewal, at every renewal: Kubernetes'
	// signer backdates a certificate shorter than 8 hours by 5 minutes, so
	// each new one would otherwise ask for 5 minutes more.
	Duration time.Duration
	// Store keeps renewed certificates; nil keeps them in memory only.
	Store CertificateStore
	// Expiry, when not nil, is set to each new certificate's expiry.
	Expiry prometheus.Gauge
	Clock  clock.Clock
	// Jitter returns a number in [0, 1).
	Jitter func() float64
	// Timeout bounds the wait for a request to be approved and signed.
	Timeout time.Duration

	// asked is the validity renewals ask for once the first one has.
	asked time.Duration
}

// maxSleep is the longest the Rotator sleeps before it looks again.
const maxSleep = time.Hour

// Start renews until ctx ends.
func (r *Rotator) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("certificate-rotation").WithValues("cluster", r.Cluster)
	var (
		held      *x509.Certificate // the certificate due was drawn for
		due       time.Time
		notBefore time.Time // no renewal before: after a failure or a renewal
		renewWait = renewRetry
		unsaved   *bootstrap.Issued
		saveAt    time.Time
		saveWait  = renewRetry
	)
	for {
		now := r.Clock.Now()
		cert := r.Credentials.Certificate()
		if cert != held {
			held = cert
			due = RenewalTime(cert.NotBefore, cert.NotAfter, r.Fraction, r.Jitter())
			log.Info("the client certificate will be renewed", "at", due.UTC().Format(time.RFC3339), "expires", cert.NotAfter.UTC().Format(time.RFC3339))
		}
		if unsaved != nil && !now.Before(saveAt) {
			if err := r.Store.Save(ctx, unsaved.CertPEM, unsaved.KeyPEM); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				log.Error(err, "keeping the renewed client certificate failed; until it is kept, a restarted agent starts with the previous one", "in", r.Store.String(), "retryIn", saveWait)
				saveAt, saveWait = now.Add(saveWait), min(2*saveWait, renewMaxRetry)
			} else {
				log.Info("kept the renewed client certificate", "in", r.Store.String())
				unsaved, saveWait = nil, renewRetry
			}
		}
		if !now.Before(due) && !now.Before(notBefore) {
			issued, err := r.Renew(ctx, log)
			if ctx.Err() != nil {
				return nil
			}
			now = r.Clock.Now()
			if err != nil {
				wait := renewWait
				if left := cert.NotAfter.Sub(now); left > 0 {
					wait = min(wait, max(left/10, time.Second))
				}
				log.Error(err, "renewing the client certificate failed; the current one serves until it expires", "retryIn", wait, "expires", cert.NotAfter.UTC().Format(time.RFC3339))
				notBefore, renewWait = now.Add(wait), min(2*renewWait, renewMaxRetry)
				continue
			}
			renewWait = renewRetry
			notBefore = now.Add(max(issued.Cert.NotAfter.Sub(issued.Cert.NotBefore)/10, time.Minute))
			if r.Store != nil {
				unsaved, saveAt, saveWait = &issued, now, renewRetry
			}
			continue
		}
		next := now.Add(maxSleep)
		next = minTime(next, maxTime(due, notBefore))
		if unsaved != nil {
			next = minTime(next, saveAt)
		}
		if !r.sleep(ctx, next.Sub(now)) {
			return nil
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Renew renews the certificate once: on success the new one is held by
// Credentials (keeping it is Start's).
func (r *Rotator) Renew(ctx context.Context, log logr.Logger) (bootstrap.Issued, error) {
	issued, err := bootstrap.Renew(ctx, r.Client, bootstrap.RenewOptions{
		ClusterName: r.Cluster,
		Duration:    r.validity(),
		Timeout:     r.Timeout,
		Progress:    func(line string) { log.V(1).Info(line) },
	})
	if err != nil {
		return issued, err
	}
	if now := r.Clock.Now(); !issued.Cert.NotAfter.After(now) {
		return issued, fmt.Errorf("CertificateSigningRequest %s: the issued certificate expired at %s, before it was used (is this machine's clock right? it says %s)",
			issued.CSR, issued.Cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if err := r.Credentials.Swap(issued.CertPEM, issued.KeyPEM); err != nil {
		return issued, fmt.Errorf("CertificateSigningRequest %s: %w", issued.CSR, err)
	}
	if r.Expiry != nil {
		r.Expiry.Set(float64(issued.Cert.NotAfter.Unix()))
	}
	log.Info("renewed the client certificate", "csr", issued.CSR, "expires", issued.Cert.NotAfter.UTC().Format(time.RFC3339), "serial", issued.Cert.SerialNumber.String())
	return issued, nil
}

// validity is the validity a renewal asks for: Duration, else the first
// renewal's figure from the certificate then held, kept for the later ones.
func (r *Rotator) validity() time.Duration {
	if r.asked == 0 {
		r.asked = RenewalDuration(r.Credentials.Certificate(), r.Duration)
	}
	return r.asked
}

// sleep waits d, and reports false when ctx ended first.
func (r *Rotator) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// errNoStore explains why a renewed certificate is kept in memory only.
var errNoStore = errors.New("renewed client certificates are kept in memory only: the control-plane kubeconfig came from the default locations, which the agent does not rewrite; give --kubeconfig, or --kubeconfig-secret")
