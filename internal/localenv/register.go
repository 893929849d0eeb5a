package localenv

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// ClusterSecretNamespace holds the member credentials, as in Karmada.
const ClusterSecretNamespace = "karmada-cluster"

// registerCluster creates the member's credentials Secret and its Cluster
// object in the control plane (push mode).
func registerCluster(ctx context.Context, s *State, c ClusterInfo) error {
	cfg, err := s.RESTConfig(ControlPlaneName)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(s.CAPath())
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ClusterSecretNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ClusterSecretNamespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: ClusterSecretNamespace},
		Data:       map[string][]byte{"token": []byte(c.Token), "caBundle": ca},
	}
	if _, err := cs.CoreV1().Secrets(ClusterSecretNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating secret: %w", err)
	}
	scheme, err := clusterScheme()
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	cluster := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name},
		Spec: clusterv1alpha1.ClusterSpec{
			APIEndpoint: c.Server,
			SyncMode:    clusterv1alpha1.Push,
			SecretRef:   &clusterv1alpha1.LocalSecretReference{Namespace: ClusterSecretNamespace, Name: c.Name},
		},
	}
	if err := cl.Create(ctx, cluster); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Cluster: %w", err)
	}
	return nil
}

func clusterScheme() (*runtime.Scheme, error) { return lbscheme.New() }
