package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// Every request a command makes is bounded: an API server that accepts the
// connection and never answers ends the command with an error.
func TestRestConfigBoundsEachRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: team-a}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, ns, err := kubeconfigRef{path: path}.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Timeout != requestTimeout || requestTimeout <= 0 {
		t.Errorf("request timeout %s, want %s", cfg.Timeout, requestTimeout)
	}
	if ns != "team-a" {
		t.Errorf("namespace %q, want the context's team-a", ns)
	}
}
