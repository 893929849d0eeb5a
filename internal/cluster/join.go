package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/install"
)

// MemberKubeconfig is a member cluster as a kubeconfig describes it.
type MemberKubeconfig struct {
	// Config is the client configuration of the chosen context.
	Config *rest.Config
	// ProxyURL is the context cluster's proxy-url, if any.
	ProxyURL string
}

// LoadKubeconfig reads the kubeconfig at path (empty: $KUBECONFIG or
// ~/.kube/config) and returns the configuration of kubeContext (empty: the
// current context).
func LoadKubeconfig(path, kubeContext string) (MemberKubeconfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return MemberKubeconfig{}, fmt.Errorf("loading kubeconfig %s: %w", describeKubeconfig(path, kubeContext), err)
	}
	raw, err := cc.RawConfig()
	if err != nil {
		return MemberKubeconfig{}, fmt.Errorf("loading kubeconfig %s: %w", describeKubeconfig(path, kubeContext), err)
	}
	ctxName := kubeContext
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	out := MemberKubeconfig{Config: cfg}
	if kc, ok := raw.Contexts[ctxName]; ok {
		if cl, ok := raw.Clusters[kc.Cluster]; ok {
			out.ProxyURL = cl.ProxyURL
		}
	}
	return out, nil
}

func describeKubeconfig(path, kubeContext string) string {
	if path == "" {
		path = "$KUBECONFIG or ~/.kube/config"
	}
	if kubeContext != "" {
		return fmt.Sprintf("%s (context %s)", path, kubeContext)
	}
	return path
}

// JoinOptions describe a member to join.
type JoinOptions struct {
	// Name of the Cluster to create.
	Name string
	// Provider, Region and Zones are copied into the Cluster's spec.
	Provider string
	Region   string
	Zones    []string
	// TokenTimeout bounds the wait for the member to issue the token of the
	// ServiceAccount join creates; 0 is DefaultTokenTimeout, and a negative
	// one is refused.
	TokenTimeout time.Duration
	// Resources are kinds Lifeboat may write in the member on top of
	// DefaultMemberResources.
	Resources []MemberResource
	// InsecureSkipTLSVerification lets a member whose kubeconfig does not
	// verify its serving certificate join, and stores that choice in the
	// Cluster. Without it such a member is refused.
	InsecureSkipTLSVerification bool
}

// DefaultTokenTimeout is JoinOptions.TokenTimeout's default.
const DefaultTokenTimeout = 30 * time.Second

// Validate checks the options without any I/O.
func (o JoinOptions) Validate() error {
	if err := ValidateClusterName(o.Name); err != nil {
		return err
	}
	// 0 is the default; a negative value is a mistake, not a request for it.
	if o.TokenTimeout < 0 {
		return fmt.Errorf("--token-timeout %s must not be negative", o.TokenTimeout)
	}
	return nil
}

// JoinResult says what Join did.
type JoinResult struct {
	Cluster *clusterv1alpha1.Cluster
	// ServiceAccount is "namespace/name" of the ServiceAccount created in
	// the member, whose token the control plane uses.
	ServiceAccount string
}

// ServiceAccountName is the member ServiceAccount join creates for a
// cluster; its ClusterRole and ClusterRoleBinding have the same name.
func ServiceAccountName(cluster string) string { return "lifeboat-" + cluster }

// ErrInsecureMember refuses a member whose kubeconfig skips TLS verification
// when the join did not ask for it.
var ErrInsecureMember = errors.New("the member's kubeconfig skips TLS verification")

// Join registers a member: it checks the name is free, reads the member's
// identity (the UID of its kube-system namespace), creates in the member a
// ServiceAccount bound to a ClusterRole with MemberRules and a long-lived
// token Secret for it, and calls Register with that token and the member's
// CA. memberClient may be nil (built from member.Config); the kubeconfig's
// own credentials are used only for these steps, never stored.
func Join(ctx context.Context, cp client.Client, member MemberKubeconfig, memberClient kubernetes.Interface, o JoinOptions) (JoinResult, error) {
	var res JoinResult
	if err := o.Validate(); err != nil {
		return res, err
	}
	// Check the control plane before touching the member.
	var existing clusterv1alpha1.Cluster
	if err := cp.Get(ctx, client.ObjectKey{Name: o.Name}, &existing); err == nil {
		return res, fmt.Errorf("%w: a Cluster named %q exists (API endpoint %s); run `lifeboat unjoin %s` first", ErrAlreadyJoined, o.Name, existing.Spec.APIEndpoint, o.Name)
	} else if !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("reading Cluster %s in the control plane: %w", o.Name, err)
	}
	cfg := member.Config
	if cfg.Insecure && !o.InsecureSkipTLSVerification {
		return res, fmt.Errorf("%w (insecure-skip-tls-verify): Lifeboat verifies members' certificates; give the kubeconfig the member's CA (certificate-authority-data), or pass --insecure-skip-tls-verification to store the choice in the Cluster", ErrInsecureMember)
	}
	if memberClient == nil {
		var err error
		if memberClient, err = kubernetes.NewForConfig(cfg); err != nil {
			return res, fmt.Errorf("building a client for the member: %w", err)
		}
	}
	kubeSystem, err := memberClient.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return res, fmt.Errorf("reaching the member at %s: %w", cfg.Host, err)
	}
	ca, err := caBundle(cfg)
	if err != nil {
		return res, err
	}
	timeout := o.TokenTimeout
	if timeout == 0 {
		timeout = DefaultTokenTimeout
	}
	rules := MemberRules(append(DefaultMemberResources(), o.Resources...))
	token, saCA, err := ensureServiceAccountToken(ctx, memberClient, o.Name, rules, timeout)
	if err != nil {
		return res, err
	}
	insecure := cfg.Insecure || o.InsecureSkipTLSVerification
	switch {
	case insecure:
		// A client may not both skip verification and name a CA.
		ca = nil
	case len(ca) == 0:
		ca = saCA
	}
	res.ServiceAccount = SecretNamespace + "/" + ServiceAccountName(o.Name)
	cluster, err := Register(ctx, cp, RegisterOptions{
		Name:                        o.Name,
		APIEndpoint:                 cfg.Host,
		Token:                       string(token),
		CABundle:                    ca,
		InsecureSkipTLSVerification: insecure,
		ProxyURL:                    member.ProxyURL,
		ID:                          string(kubeSystem.UID),
		Provider:                    o.Provider,
		Region:                      o.Region,
		Zones:                       o.Zones,
	})
	res.Cluster = cluster
	return res, err
}

func caBundle(cfg *rest.Config) ([]byte, error) {
	if cfg.Insecure {
		return nil, nil
	}
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the member's CA file: %w", err)
		}
		return b, nil
	}
	return nil, nil
}

// ensureServiceAccountToken creates (or reuses) in the member the namespace
// karmada-cluster, the ServiceAccount lifeboat-<name>, the ClusterRole
// lifeboat-<name> with rules (brought up to date when it exists), its
// ClusterRoleBinding and a long-lived token Secret, and returns the token and
// the CA the member put next to it.
func ensureServiceAccountToken(ctx context.Context, cs kubernetes.Interface, name string, rules []rbacv1.PolicyRule, timeout time.Duration) ([]byte, []byte, error) {
	sa := ServiceAccountName(name)
	objects := []struct {
		what   string
		create func() error
	}{
		{"namespace " + SecretNamespace, func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				Name: SecretNamespace, Labels: map[string]string{"karmada.io/system": "true"},
			}}, metav1.CreateOptions{})
			return err
		}},
		{"ServiceAccount " + sa, func() error {
			_, err := cs.CoreV1().ServiceAccounts(SecretNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
				Name: sa, Namespace: SecretNamespace,
			}}, metav1.CreateOptions{})
			return err
		}},
		{"ClusterRole " + sa, func() error {
			return install.EnsureClusterRole(ctx, cs, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: rules})
		}},
		{"ClusterRoleBinding " + sa, func() error {
			return ensureClusterRoleBinding(ctx, cs, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: sa},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: SecretNamespace}},
			})
		}},
		{"Secret " + sa + "-token", func() error {
			_, err := cs.CoreV1().Secrets(SecretNamespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name: sa + "-token", Namespace: SecretNamespace,
					Annotations: map[string]string{corev1.ServiceAccountNameKey: sa},
				},
				Type: corev1.SecretTypeServiceAccountToken,
			}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, o := range objects {
		if err := o.create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("creating %s in the member: %w", o.what, err)
		}
	}
	var token, ca []byte
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(SecretNamespace).Get(ctx, sa+"-token", metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading the token Secret in the member: %w", err)
		}
		token, ca = s.Data[corev1.ServiceAccountTokenKey], s.Data[corev1.ServiceAccountRootCAKey]
		return len(token) > 0, nil
	})
	if err != nil {
		if wait.Interrupted(err) {
			return nil, nil, fmt.Errorf("the member did not issue a token for Secret %s/%s-token within %s (is its kube-controller-manager running the serviceaccount-token controller?)", SecretNamespace, sa, timeout)
		}
		return nil, nil, err
	}
	return token, ca, nil
}

// ensureClusterRoleBinding creates b, or replaces a binding of that name
// whose role or subjects differ (a role reference cannot be changed in
// place): one left by an older join bound the ServiceAccount to
// cluster-admin.
func ensureClusterRoleBinding(ctx context.Context, cs kubernetes.Interface, b *rbacv1.ClusterRoleBinding) error {
	bindings := cs.RbacV1().ClusterRoleBindings()
	_, err := bindings.Create(ctx, b, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := bindings.Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if old.RoleRef == b.RoleRef && equality.Semantic.DeepEqual(old.Subjects, b.Subjects) {
		return nil
	}
	uid := old.UID
	if err := bindings.Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err = bindings.Create(ctx, b, metav1.CreateOptions{})
	return err
}

// CleanupMember deletes what join may have created in the member for
// cluster: the ClusterRoleBinding, ClusterRole, ServiceAccount and token
// Secret named lifeboat-<name>. The namespace karmada-cluster is left alone (it may hold
// other things). It returns what it deleted.
func CleanupMember(ctx context.Context, cs kubernetes.Interface, name string) ([]string, error) {
	sa := ServiceAccountName(name)
	var deleted []string
	var errs []error
	for _, o := range []struct {
		what string
		del  func() error
	}{
		{"ClusterRoleBinding " + sa, func() error {
			return cs.RbacV1().ClusterRoleBindings().Delete(ctx, sa, metav1.DeleteOptions{})
		}},
		{"ClusterRole " + sa, func() error {
			return cs.RbacV1().ClusterRoles().Delete(ctx, sa, metav1.DeleteOptions{})
		}},
		{"Secret " + SecretNamespace + "/" + sa + "-token", func() error {
			return cs.CoreV1().Secrets(SecretNamespace).Delete(ctx, sa+"-token", metav1.DeleteOptions{})
		}},
		{"ServiceAccount " + SecretNamespace + "/" + sa, func() error {
			return cs.CoreV1().ServiceAccounts(SecretNamespace).Delete(ctx, sa, metav1.DeleteOptions{})
		}},
	} {
		switch err := o.del(); {
		case err == nil:
			deleted = append(deleted, o.what)
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("deleting %s in the member: %w", o.what, err))
		}
	}
	return deleted, errors.Join(errs...)
}
