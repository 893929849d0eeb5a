// Package membercluster is the one door to member clusters: it turns a Cluster
// object and its credentials Secret into a client configuration, and (in
// cache.go) owns the per-member clients and informers that controllers share.
package membercluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// ConfigSource builds the client configuration of a member cluster.
type ConfigSource func(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*rest.Config, error)

// SecretConfig is the control plane's ConfigSource: ConfigFor, reading the
// credentials through reader.
func SecretConfig(reader client.Reader) ConfigSource {
	return func(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
		return ConfigFor(ctx, reader, cluster)
	}
}

// LocalConfig is the ConfigSource of an agent inside the member cluster
// name: its own configuration for that cluster, and an error for any other.
func LocalConfig(name string, cfg *rest.Config) ConfigSource {
	return func(_ context.Context, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
		if cluster.Name != name {
			return nil, fmt.Errorf("this agent serves cluster %s, not %s", name, cluster.Name)
		}
		return rest.CopyConfig(cfg), nil
	}
}

// ConfigFor builds the client configuration of a push-mode member from its
// Cluster object and the Secret that spec.secretRef names (keys "token" and
// "caBundle", as Karmada stores them).
func ConfigFor(ctx context.Context, reader client.Reader, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	if cluster.Spec.APIEndpoint == "" {
		return nil, fmt.Errorf("cluster %s has no spec.apiEndpoint", cluster.Name)
	}
	if cluster.Spec.SecretRef == nil {
		return nil, fmt.Errorf("cluster %s has no spec.secretRef", cluster.Name)
	}
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: cluster.Spec.SecretRef.Namespace, Name: cluster.Spec.SecretRef.Name}
	if err := reader.Get(ctx, key, &secret); err != nil {
		return nil, fmt.Errorf("reading credentials %s of cluster %s: %w", key, cluster.Name, err)
	}
	token := string(secret.Data[clusterv1alpha1.SecretTokenKey])
	if token == "" {
		return nil, fmt.Errorf("credentials %s of cluster %s have no %q", key, cluster.Name, clusterv1alpha1.SecretTokenKey)
	}
	cfg := &rest.Config{
		Host:        cluster.Spec.APIEndpoint,
		BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   secret.Data[clusterv1alpha1.SecretCADataKey],
			Insecure: cluster.Spec.InsecureSkipTLSVerification,
		},
	}
	if cfg.Insecure {
		cfg.CAData = nil
	}
	if cluster.Spec.ProxyURL != "" {
		u, err := url.Parse(cluster.Spec.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: parsing spec.proxyURL: %w", cluster.Name, err)
		}
		cfg.Proxy = http.ProxyURL(u)
	}
	return cfg, nil
}
