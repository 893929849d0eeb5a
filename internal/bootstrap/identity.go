package bootstrap

import (
	"strings"

	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// Identities in the control plane.
const (
	// AgentUserPrefix starts the user name of a cluster's agent (the
	// common name of its client certificate): system:lifeboat:agent:NAME.
	AgentUserPrefix = "system:lifeboat:agent:"
	// AgentsGroup is the group of every agent (the organization of its
	// client certificate).
	AgentsGroup = "system:lifeboat:agents"
	// BootstrappersGroup is an extra group of every bootstrap token that
	// `lifeboat token create` makes: it may request certificates.
	BootstrappersGroup = bootstrapapi.BootstrapDefaultGroup + ":lifeboat"
	// clusterBootstrappersPrefix starts the extra group that ties a
	// bootstrap token to one cluster.
	clusterBootstrappersPrefix = BootstrappersGroup + ":cluster:"
)

// Labels on what `lifeboat token create` creates, so that `lifeboat token`
// and unjoin find them.
const (
	// LabelManagedBy is set to ManagedByValue on every object created here.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "lifeboat"
	// LabelAgentCluster names the cluster a per-cluster object (token,
	// role, binding, Lease, Cluster) is for.
	LabelAgentCluster = "cluster.lifeboat.dev/agent"
)

// Names of the shared RBAC objects.
const (
	// BootstrapperRoleName names the ClusterRole (and binding) that lets
	// bootstrap tokens request certificates.
	BootstrapperRoleName = "lifeboat:agent-bootstrapper"
	// AgentRoleName names the ClusterRole (and binding) every agent has,
	// and the Role (and binding) in each execution namespace.
	AgentRoleName = "lifeboat:agent"
)

// AgentUser is the user name of cluster's agent.
func AgentUser(cluster string) string { return AgentUserPrefix + cluster }

// ClusterBootstrappersGroup is the extra group of cluster's bootstrap
// tokens.
func ClusterBootstrappersGroup(cluster string) string { return clusterBootstrappersPrefix + cluster }

// AgentClusterRoleName names the per-cluster ClusterRole and Role (and their
// bindings) of cluster's agent.
func AgentClusterRoleName(cluster string) string { return AgentRoleName + ":" + cluster }

// clusterOfAgentUser returns NAME of system:lifeboat:agent:NAME.
func clusterOfAgentUser(user string) (string, bool) {
	name, ok := strings.CutPrefix(user, AgentUserPrefix)
	return name, ok && name != ""
}

// labels returns the labels of an object created for cluster ("" for a
// shared object).
func labels(cluster string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedByValue}
	if cluster != "" {
		l[LabelAgentCluster] = cluster
	}
	return l
}
