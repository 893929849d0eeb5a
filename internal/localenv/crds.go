package localenv

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lifeboat-dev/lifeboat/internal/install"
)

// installControlPlane puts into the control plane what `lifeboat init` does:
// the CRDs, the controller manager's RBAC and the default ClusterTaintPolicy.
func installControlPlane(ctx context.Context, s *State) error {
	cfg, err := s.RESTConfig(ControlPlaneName)
	if err != nil {
		return err
	}
	return install.ControlPlane(ctx, cfg, nil)
}

// applyCRDs server-side applies crds to the named cluster and waits until
// every one is Established.
func applyCRDs(ctx context.Context, s *State, cluster string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	cfg, err := s.RESTConfig(cluster)
	if err != nil {
		return err
	}
	return install.CRDs(ctx, cfg, crds)
}
