package localenv

import (
	"context"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// registerCluster joins a member to the control plane (push mode) the way
// `lifeboat join` does: a credentials Secret and a Cluster object whose ID is
// the member's kube-system namespace UID.
func registerCluster(ctx context.Context, s *State, c ClusterInfo) error {
	cpCfg, err := s.RESTConfig(ControlPlaneName)
	if err != nil {
		return err
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return err
	}
	cp, err := client.New(cpCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	memberCfg, err := s.RESTConfig(c.Name)
	if err != nil {
		return err
	}
	member, err := kubernetes.NewForConfig(memberCfg)
	if err != nil {
		return err
	}
	ns, err := member.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading %s's identity: %w", c.Name, err)
	}
	ca, err := os.ReadFile(s.CAPath())
	if err != nil {
		return err
	}
	_, err = cluster.Register(ctx, cp, cluster.RegisterOptions{
		Name:        c.Name,
		APIEndpoint: c.Server,
		Token:       c.Token,
		CABundle:    ca,
		ID:          string(ns.UID),
	})
	return err
}
