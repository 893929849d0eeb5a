package bootstrap

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

// LeaseNamespace holds each Pull cluster's Lease, which its agent renews.
const LeaseNamespace = cluster.SecretNamespace

// LeaseDurationSeconds is the duration of a Pull cluster's Lease.
const LeaseDurationSeconds = 40

// AgentObjects returns what the agent of clusterName needs in the control
// plane, in the order to create them (a binding after its role, a
// namespaced object after its namespace, the Cluster last):
//
//  1. ClusterRole and ClusterRoleBinding lifeboat:agent-bootstrapper, for
//     the group BootstrappersGroup: create CertificateSigningRequests and
//     follow them (get, list, watch).
//  2. ClusterRole and ClusterRoleBinding lifeboat:agent, for the group
//     AgentsGroup: read ResourceInterpreterCustomizations; create
//     CertificateSigningRequests and read them back, to renew the agent's
//     certificate (the approver approves only a request for the
//     requester's own name).
//  3. ClusterRole and ClusterRoleBinding lifeboat:agent:NAME, for the user
//     AgentUser(NAME): read the Cluster NAME and write its status, never
//     its spec (the agent must not switch itself to Push or point the
//     control plane at another cluster's credentials); create
//     certificatesigningrequests/RenewalSubresource, which the approver
//     requires of a renewal.
//  4. The execution namespace karmada-es-NAME, and in it the Role and
//     RoleBinding lifeboat:agent for AgentUser(NAME): read and update Works
//     (finalizers) and their status, record Events.
//  5. In the namespace default, the Role and RoleBinding lifeboat:agent
//     for AgentsGroup: record Events about Clusters (those of
//     cluster-scoped objects live there).
//  6. The namespace karmada-cluster, the Lease NAME in it, and the Role and
//     RoleBinding lifeboat:agent:NAME there: renew that one Lease. The agent
//     cannot create Leases, so it cannot forge another cluster's.
//  7. The Cluster NAME, syncMode Pull, without apiEndpoint or secretRef.
//
// Every object is labeled LabelManagedBy; the per-cluster ones also
// LabelAgentCluster.
func AgentObjects(clusterName string) []client.Object {
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: AgentUser(clusterName)}
	execNS := cluster.ExecutionNamespace(clusterName)
	perCluster := AgentClusterRoleName(clusterName)
	objs := []client.Object{}
	objs = append(objs, clusterRoleAndBinding(BootstrapperRoleName, "",
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: BootstrappersGroup},
		rbacv1.PolicyRule{
			APIGroups: []string{certificatesv1.GroupName},
			Resources: []string{"certificatesigningrequests"},
			Verbs:     []string{"create", "get", "list", "watch"},
		})...)
	objs = append(objs, clusterRoleAndBinding(AgentRoleName, "",
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: AgentsGroup},
		rbacv1.PolicyRule{
			APIGroups: []string{configv1alpha1.GroupName},
			Resources: []string{"resourceinterpretercustomizations"},
			Verbs:     []string{"get", "list", "watch"},
		},
		rbacv1.PolicyRule{
			APIGroups: []string{certificatesv1.GroupName},
			Resources: []string{"certificatesigningrequests"},
			Verbs:     []string{"create", "get"},
		})...)
	// Events about a cluster-scoped object (the Cluster's Ready changes)
	// live in the namespace default.
	objs = append(objs, roleAndBinding(AgentRoleName, metav1.NamespaceDefault, "",
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: AgentsGroup},
		eventRules()...)...)
	objs = append(objs, clusterRoleAndBinding(perCluster, clusterName, user,
		rbacv1.PolicyRule{
			APIGroups:     []string{clusterv1alpha1.GroupName},
			Resources:     []string{"clusters"},
			ResourceNames: []string{clusterName},
			Verbs:         []string{"get", "list", "watch"},
		},
		rbacv1.PolicyRule{
			APIGroups:     []string{clusterv1alpha1.GroupName},
			Resources:     []string{"clusters/status"},
			ResourceNames: []string{clusterName},
			Verbs:         []string{"get", "update", "patch"},
		},
		rbacv1.PolicyRule{
			APIGroups: []string{certificatesv1.GroupName},
			Resources: []string{"certificatesigningrequests/" + RenewalSubresource},
			Verbs:     []string{"create"},
		})...)
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: execNS, Labels: labels(clusterName)}})
	workRules := append([]rbacv1.PolicyRule{{
		APIGroups: []string{workv1alpha1.GroupName},
		Resources: []string{"works"},
		Verbs:     []string{"get", "list", "watch", "update", "patch"},
	}, {
		APIGroups: []string{workv1alpha1.GroupName},
		Resources: []string{"works/status"},
		Verbs:     []string{"get", "update", "patch"},
	}}, eventRules()...)
	objs = append(objs, roleAndBinding(AgentRoleName, execNS, clusterName, user, workRules...)...)
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LeaseNamespace, Labels: labels("")}})
	objs = append(objs, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: LeaseNamespace, Labels: labels(clusterName)},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(clusterName),
			LeaseDurationSeconds: ptr.To[int32](LeaseDurationSeconds),
		},
	})
	objs = append(objs, roleAndBinding(perCluster, LeaseNamespace, clusterName, user,
		rbacv1.PolicyRule{
			APIGroups:     []string{coordinationv1.GroupName},
			Resources:     []string{"leases"},
			ResourceNames: []string{clusterName},
			Verbs:         []string{"get", "update", "patch"},
		})...)
	objs = append(objs, PullCluster(clusterName))
	return objs
}

// eventRules allow recording Events, core and events.k8s.io.
func eventRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{corev1.GroupName},
		Resources: []string{"events"},
		Verbs:     []string{"create", "patch"},
	}, {
		APIGroups: []string{eventsv1.GroupName},
		Resources: []string{"events"},
		Verbs:     []string{"create", "patch"},
	}}
}

// PullCluster is the Cluster `lifeboat token create` creates for a cluster
// that does not exist yet: the agent reports its status, so it has no API
// endpoint or credentials in the control plane.
func PullCluster(name string) *clusterv1alpha1.Cluster {
	return &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(name)},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull},
	}
}

func clusterRoleAndBinding(name, clusterName string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) []client.Object {
	meta := metav1.ObjectMeta{Name: name, Labels: labels(clusterName)}
	return []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: *meta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{subject},
		},
	}
}

func roleAndBinding(name, namespace, clusterName string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) []client.Object {
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels(clusterName)}
	return []client.Object{
		&rbacv1.Role{ObjectMeta: meta, Rules: rules},
		&rbacv1.RoleBinding{
			ObjectMeta: *meta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{subject},
		},
	}
}
