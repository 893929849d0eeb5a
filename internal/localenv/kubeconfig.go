package localenv

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes DIR/kubeconfig with one context per cluster, named
// after it, and the control plane as the current context.
func writeKubeconfig(s *State) error {
	ca, err := os.ReadFile(s.CAPath())
	if err != nil {
		return fmt.Errorf("reading CA: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	for _, c := range s.Clusters {
		cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: ca}
		cfg.AuthInfos[c.Name] = &clientcmdapi.AuthInfo{Token: c.Token}
		cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	}
	cfg.CurrentContext = ControlPlaneName
	if err := clientcmd.WriteToFile(*cfg, s.KubeconfigPath()); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// writeSingleKubeconfig writes a kubeconfig for one cluster (used by that
// member's own components).
func writeSingleKubeconfig(path string, c ClusterInfo, caFile string) error {
	return writeKubeconfigFile(path, c.Name, c.Server, c.Token, caFile)
}

// writeKubeconfigFile writes a kubeconfig with one context, name, that
// reaches server with a bearer token.
func writeKubeconfigFile(path, name, server, token, caFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("reading CA: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig returns a client configuration for the named cluster.
func (s *State) RESTConfig(name string) (*rest.Config, error) {
	c, ok := s.Cluster(name)
	if !ok {
		return nil, fmt.Errorf("no cluster %q in the local environment", name)
	}
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAPath()},
		QPS:             50,
		Burst:           100,
	}, nil
}
