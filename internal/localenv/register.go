package localenv

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// controlPlaneClient is an administrator's client of the environment's
// control plane.
func (s *State) controlPlaneClient() (client.Client, error) {
	cfg, err := s.RESTConfig(ControlPlaneName)
	if err != nil {
		return nil, err
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// registerCluster joins a member to the control plane (push mode) as
// `lifeboat join` does: a ServiceAccount in the member with the
// least-privilege ClusterRole (cluster.MemberRules of the default kinds and
// resources), its token and the environment's CA in a Secret, and a Cluster
// whose ID is the member's kube-system namespace UID. The member's admin
// token is not stored in the control plane.
func registerCluster(ctx context.Context, s *State, c ClusterInfo, resources []cluster.MemberResource) error {
	cp, err := s.controlPlaneClient()
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
	// The Cluster names the proxy in front of the member (partition.go),
	// whose path `lifeboat env partition` can cut.
	endpointCfg := rest.CopyConfig(memberCfg)
	if c.Endpoint != "" {
		endpointCfg.Host = c.Endpoint
	}
	_, err = cluster.Join(ctx, cp, cluster.MemberKubeconfig{Config: endpointCfg}, member, cluster.JoinOptions{
		Name:         c.Name,
		Resources:    resources,
		TokenTimeout: 60 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("joining %s: %w", c.Name, err)
	}
	return nil
}
