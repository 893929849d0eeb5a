package bench

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// benchQPS is the bench's own client rate: high enough that creating
// hundreds of objects "at once" is not throttled on our side.
const benchQPS, benchBurst = 500, 1000

// Env is the control plane and its members as the bench reaches them: one
// kubeconfig, a context for the control plane and one per member.
type Env struct {
	Scheme             *runtime.Scheme
	ControlPlane       client.Client
	ControlPlaneConfig *rest.Config
	// Members are the member clusters' names, sorted, as listed by the
	// control plane's Clusters.
	Members       []string
	MemberClients map[string]client.Client
	MemberConfigs map[string]*rest.Config
}

// Connect builds clients from kubeconfig: controlPlane is the control
// plane's context; each Cluster's context is its name unless
// memberContexts maps it to another.
func Connect(ctx context.Context, kubeconfig, controlPlane string, memberContexts map[string]string) (*Env, error) {
	scheme, err := lbscheme.New()
	if err != nil {
		return nil, err
	}
	cpCfg, err := contextConfig(kubeconfig, controlPlane)
	if err != nil {
		return nil, err
	}
	cp, err := client.New(cpCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("control-plane client: %w", err)
	}
	var clusters clusterv1alpha1.ClusterList
	if err := cp.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("listing the control plane's Clusters: %w", err)
	}
	e := &Env{Scheme: scheme, ControlPlane: cp, ControlPlaneConfig: cpCfg,
		MemberClients: map[string]client.Client{}, MemberConfigs: map[string]*rest.Config{}}
	for _, c := range clusters.Items {
		name := c.Name
		kctx := name
		if m, ok := memberContexts[name]; ok {
			kctx = m
		}
		cfg, err := contextConfig(kubeconfig, kctx)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w (map it with --member-context %s=CONTEXT)", name, err, name)
		}
		mc, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, fmt.Errorf("member %s client: %w", name, err)
		}
		e.Members = append(e.Members, name)
		e.MemberClients[name] = mc
		e.MemberConfigs[name] = cfg
	}
	sort.Strings(e.Members)
	if len(e.Members) < 2 {
		return nil, fmt.Errorf("the control plane has %d member cluster(s); the scenarios need at least 2", len(e.Members))
	}
	return e, nil
}

func contextConfig(kubeconfig, name string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: name}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	cfg.QPS, cfg.Burst = benchQPS, benchBurst
	return cfg, nil
}
