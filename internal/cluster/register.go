package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// SecretNamespace is where member credentials live in the control plane (and
// where join creates its ServiceAccount in a member), as in Karmada.
const SecretNamespace = "karmada-cluster"

// MaxClusterNameLength is Karmada's limit: karmada-es-<name> must stay a
// valid namespace name.
const MaxClusterNameLength = 48

var (
	// ErrAlreadyJoined is returned by Register when a Cluster of that name,
	// or with that member's ID, exists.
	ErrAlreadyJoined = errors.New("cluster is already joined")
	// ErrNotJoined is returned when the named Cluster does not exist.
	ErrNotJoined = errors.New("cluster is not joined")
)

// RegisterOptions describe a Push member to register in the control plane.
type RegisterOptions struct {
	// Name of the Cluster.
	Name string
	// APIEndpoint is the member API server's https URL.
	APIEndpoint string
	// Token is the bearer token the control plane uses for the member.
	Token string
	// CABundle verifies the member's serving certificate; empty means the
	// system's roots.
	CABundle []byte
	// InsecureSkipTLSVerification skips that verification (tests only).
	InsecureSkipTLSVerification bool
	// ProxyURL reaches the member through a proxy.
	ProxyURL string
	// ID is the member's identity (UID of its kube-system namespace);
	// a second Cluster with the same ID is refused.
	ID string
	// Provider, Region and Zones describe where the member runs.
	Provider string
	Region   string
	Zones    []string
}

// ValidateClusterName checks a Cluster name: a DNS label of at most 48
// characters.
func ValidateClusterName(name string) error {
	if name == "" {
		return fmt.Errorf("cluster name is empty")
	}
	if len(name) > MaxClusterNameLength {
		return fmt.Errorf("cluster name %q is longer than %d characters", name, MaxClusterNameLength)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("invalid cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Validate checks the options.
func (o RegisterOptions) Validate() error {
	if err := ValidateClusterName(o.Name); err != nil {
		return err
	}
	u, err := url.Parse(o.APIEndpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("API endpoint %q must be an https URL with a host and no user, query or fragment", o.APIEndpoint)
	}
	if o.Token == "" {
		return fmt.Errorf("no token for cluster %s", o.Name)
	}
	if o.ProxyURL != "" {
		p, err := url.Parse(o.ProxyURL)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "socks5") {
			return fmt.Errorf("proxy URL %q must use http, https or socks5", o.ProxyURL)
		}
	}
	return nil
}

// Register creates, in the control plane, the Secret <name> in
// karmada-cluster (keys token and caBundle) and the Push Cluster that points
// at it; the Secret is then owned by the Cluster so that it goes with it.
// The Secret comes first so that the first probe of the new Cluster can
// succeed. It returns ErrAlreadyJoined (wrapped) when the name or the
// member's ID is taken, and changes nothing then.
func Register(ctx context.Context, c client.Client, o RegisterOptions) (*clusterv1alpha1.Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var existing clusterv1alpha1.Cluster
	err := c.Get(ctx, types.NamespacedName{Name: o.Name}, &existing)
	switch {
	case err == nil:
		return nil, fmt.Errorf("%w: a Cluster named %q exists (API endpoint %s); run `lifeboat unjoin %s` first", ErrAlreadyJoined, o.Name, existing.Spec.APIEndpoint, o.Name)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Cluster %s: %w", o.Name, err)
	}
	if o.ID != "" {
		var all clusterv1alpha1.ClusterList
		if err := c.List(ctx, &all); err != nil {
			return nil, fmt.Errorf("listing Clusters: %w", err)
		}
		for _, other := range all.Items {
			if other.Spec.ID == o.ID {
				return nil, fmt.Errorf("%w: this member is already joined as %q", ErrAlreadyJoined, other.Name)
			}
		}
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SecretNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", SecretNamespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: SecretNamespace},
		Type:       corev1.SecretTypeOpaque,
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		// A Secret left from an earlier, failed join is taken over.
		secret.Data = map[string][]byte{
			clusterv1alpha1.SecretTokenKey:  []byte(o.Token),
			clusterv1alpha1.SecretCADataKey: o.CABundle,
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("writing credentials Secret %s/%s: %w", SecretNamespace, o.Name, err)
	}

	cluster := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: clusterv1alpha1.ClusterSpec{
			ID:                          o.ID,
			SyncMode:                    clusterv1alpha1.Push,
			APIEndpoint:                 o.APIEndpoint,
			SecretRef:                   &clusterv1alpha1.LocalSecretReference{Namespace: SecretNamespace, Name: o.Name},
			InsecureSkipTLSVerification: o.InsecureSkipTLSVerification,
			ProxyURL:                    o.ProxyURL,
			Provider:                    o.Provider,
			Region:                      o.Region,
			Zones:                       o.Zones,
		},
	}
	if err := c.Create(ctx, cluster); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("%w: a Cluster named %q was created meanwhile", ErrAlreadyJoined, o.Name)
		}
		return nil, fmt.Errorf("creating Cluster %s: %w", o.Name, err)
	}
	if err := ownSecret(ctx, c, cluster, secret); err != nil {
		return cluster, err
	}
	return cluster, nil
}

// ownSecret makes cluster an owner of secret, so the garbage collector
// deletes the Secret after the Cluster is gone.
func ownSecret(ctx context.Context, c client.Client, cluster *clusterv1alpha1.Cluster, secret *corev1.Secret) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return client.IgnoreNotFound(err)
		}
		for _, ref := range secret.OwnerReferences {
			if ref.UID == cluster.UID {
				return nil
			}
		}
		gvk := clusterv1alpha1.SchemeGroupVersion.WithKind("Cluster")
		secret.OwnerReferences = append(secret.OwnerReferences, metav1.OwnerReference{
			APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: cluster.Name, UID: cluster.UID,
		})
		if err := c.Update(ctx, secret); err != nil {
			return err
		}
		return nil
	})
}

// UnregisterResult says what Unregister did.
type UnregisterResult struct {
	// Secrets are the credentials Secrets that now go with the Cluster.
	Secrets []string
	// Gone is true when the Cluster no longer exists (only known when
	// waiting).
	Gone bool
}

// Unregister deletes the Cluster name from the control plane. It never
// contacts the member: the cluster controller deletes the execution
// namespace and its Works, then releases the Cluster. The credentials
// Secrets are made owned by the Cluster first, so that they are garbage
// collected with it (and stay usable for the clean-up until then). With
// timeout > 0 it waits that long for the Cluster to be gone and then deletes
// the Secrets itself (for control planes without a garbage collector).
func Unregister(ctx context.Context, c client.Client, name string, timeout time.Duration) (UnregisterResult, error) {
	var res UnregisterResult
	var cluster clusterv1alpha1.Cluster
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return res, fmt.Errorf("%w: no Cluster named %q", ErrNotJoined, name)
		}
		return res, fmt.Errorf("reading Cluster %s: %w", name, err)
	}
	var refs []clusterv1alpha1.LocalSecretReference
	for _, ref := range []*clusterv1alpha1.LocalSecretReference{cluster.Spec.SecretRef, cluster.Spec.ImpersonatorSecretRef} {
		if ref == nil {
			continue
		}
		refs = append(refs, *ref)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
		if err := ownSecret(ctx, c, &cluster, secret); err != nil {
			return res, fmt.Errorf("handing Secret %s/%s over to Cluster %s: %w", ref.Namespace, ref.Name, name, err)
		}
		res.Secrets = append(res.Secrets, ref.Namespace+"/"+ref.Name)
	}
	if err := c.Delete(ctx, &cluster); err != nil && !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("deleting Cluster %s: %w", name, err)
	}
	if timeout <= 0 {
		return res, nil
	}
	uid := cluster.UID
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var now clusterv1alpha1.Cluster
		err := c.Get(ctx, types.NamespacedName{Name: name}, &now)
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("waiting for Cluster %s to be deleted: %w", name, err)
		default:
			// A Cluster joined again under the same name is not ours.
			return now.UID != uid, nil
		}
	})
	switch {
	case err == nil:
		res.Gone = true
		// The garbage collector deletes owned Secrets, but a control plane
		// may run none: delete them now that the Cluster no longer needs
		// them.
		for _, ref := range refs {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
			if err := c.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
				return res, fmt.Errorf("deleting Secret %s/%s: %w", ref.Namespace, ref.Name, err)
			}
		}
	case wait.Interrupted(err) && ctx.Err() == nil:
		// Timed out: the Cluster is still being cleaned up.
	default:
		return res, err
	}
	return res, nil
}

// EditTaints applies edit to the taints of Cluster name, retrying on
// conflicts. Nothing is written when nothing changes.
func EditTaints(ctx context.Context, c client.Client, name string, edit TaintEdit, overwrite bool, now func() time.Time) (TaintEditResult, error) {
	var res TaintEditResult
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cluster clusterv1alpha1.Cluster
		if err := c.Get(ctx, types.NamespacedName{Name: name}, &cluster); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%w: no Cluster named %q", ErrNotJoined, name)
			}
			return fmt.Errorf("reading Cluster %s: %w", name, err)
		}
		taints, r, err := applyTaintEdit(cluster.Spec.Taints, edit, overwrite, now())
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		res = r
		if !r.Changed() {
			return nil
		}
		cluster.Spec.Taints = taints
		return c.Update(ctx, &cluster)
	})
	return res, err
}

// Cordon adds cluster.karmada.io/unschedulable:NoSchedule to Cluster name;
// changed is false when it was there already.
func Cordon(ctx context.Context, c client.Client, name string, now func() time.Time) (changed bool, err error) {
	res, err := EditTaints(ctx, c, name, TaintEdit{Add: []corev1.Taint{unschedulableTaint}}, false, now)
	return res.Changed(), err
}

// Uncordon removes cluster.karmada.io/unschedulable:NoSchedule from Cluster
// name; changed is false when it was not there.
func Uncordon(ctx context.Context, c client.Client, name string) (changed bool, err error) {
	var cluster clusterv1alpha1.Cluster
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("%w: no Cluster named %q", ErrNotJoined, name)
		}
		return false, fmt.Errorf("reading Cluster %s: %w", name, err)
	}
	cordoned := false
	for _, t := range cluster.Spec.Taints {
		if t.MatchTaint(&unschedulableTaint) {
			cordoned = true
		}
	}
	if !cordoned {
		return false, nil
	}
	res, err := EditTaints(ctx, c, name, TaintEdit{Remove: []corev1.Taint{unschedulableTaint}}, false, time.Now)
	if errors.Is(err, errTaintNotFound) {
		return false, nil
	}
	return res.Changed(), err
}
