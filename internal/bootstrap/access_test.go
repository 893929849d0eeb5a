package bootstrap

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
)

// find returns the object of AgentObjects with that type, namespace and name.
func find[T client.Object](t *testing.T, objs []client.Object, namespace, name string) T {
	t.Helper()
	for _, o := range objs {
		if typed, ok := o.(T); ok && o.GetNamespace() == namespace && o.GetName() == name {
			return typed
		}
	}
	var zero T
	t.Fatalf("no %T %s/%s", zero, namespace, name)
	return zero
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: name}
}

// Every role, its exact rules and who is bound to it.
func TestAgentObjectsGrantExactly(t *testing.T) {
	objs := AgentObjects("member1")
	type grant struct {
		rules   []rbacv1.PolicyRule
		subject rbacv1.Subject
	}
	cluster := map[string]grant{
		"lifeboat:agent-bootstrapper": {
			rules:   []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}}},
			subject: groupSubject("system:bootstrappers:lifeboat"),
		},
		"lifeboat:agent": {
			rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"config.karmada.io"}, Resources: []string{"resourceinterpretercustomizations"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}},
			},
			subject: groupSubject("system:lifeboat:agents"),
		},
		"lifeboat:agent:member1": {
			rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"cluster.karmada.io"}, Resources: []string{"clusters"}, ResourceNames: []string{"member1"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"cluster.karmada.io"}, Resources: []string{"clusters/status"}, ResourceNames: []string{"member1"}, Verbs: []string{"get", "update", "patch"}},
				{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/selfagentclient"}, Verbs: []string{"create"}},
			},
			subject: userSubject("system:lifeboat:agent:member1"),
		},
	}
	for name, want := range cluster {
		role := find[*rbacv1.ClusterRole](t, objs, "", name)
		if !equality.Semantic.DeepEqual(role.Rules, want.rules) {
			t.Errorf("ClusterRole %s rules = %+v, want %+v", name, role.Rules, want.rules)
		}
		b := find[*rbacv1.ClusterRoleBinding](t, objs, "", name)
		if b.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}) || !slices.Equal(b.Subjects, []rbacv1.Subject{want.subject}) {
			t.Errorf("ClusterRoleBinding %s = %+v %+v", name, b.RoleRef, b.Subjects)
		}
	}
	namespaced := map[[2]string]grant{
		{"karmada-es-member1", "lifeboat:agent"}: {
			rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"work.karmada.io"}, Resources: []string{"works"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
				{APIGroups: []string{"work.karmada.io"}, Resources: []string{"works/status"}, Verbs: []string{"get", "update", "patch"}},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
				{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			},
			subject: userSubject("system:lifeboat:agent:member1"),
		},
		{"default", "lifeboat:agent"}: {
			rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
				{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			},
			subject: groupSubject("system:lifeboat:agents"),
		},
		{"karmada-cluster", "lifeboat:agent:member1"}: {
			rules:   []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"member1"}, Verbs: []string{"get", "update", "patch"}}},
			subject: userSubject("system:lifeboat:agent:member1"),
		},
	}
	for key, want := range namespaced {
		role := find[*rbacv1.Role](t, objs, key[0], key[1])
		if !equality.Semantic.DeepEqual(role.Rules, want.rules) {
			t.Errorf("Role %s rules = %+v, want %+v", key, role.Rules, want.rules)
		}
		b := find[*rbacv1.RoleBinding](t, objs, key[0], key[1])
		if b.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: key[1]}) || !slices.Equal(b.Subjects, []rbacv1.Subject{want.subject}) {
			t.Errorf("RoleBinding %s = %+v %+v", key, b.RoleRef, b.Subjects)
		}
	}
	var roles int
	for _, o := range objs {
		switch o.(type) {
		case *rbacv1.ClusterRole, *rbacv1.Role:
			roles++
		}
	}
	if roles != len(cluster)+len(namespaced) {
		t.Errorf("%d roles, want only the %d checked above", roles, len(cluster)+len(namespaced))
	}

	lease := find[*coordinationv1.Lease](t, objs, "karmada-cluster", "member1")
	if *lease.Spec.HolderIdentity != "member1" || *lease.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("Lease spec %+v", lease.Spec)
	}
	c := find[*clusterv1alpha1.Cluster](t, objs, "", "member1")
	if c.Spec.SyncMode != clusterv1alpha1.Pull || c.Spec.SecretRef != nil || c.Spec.APIEndpoint != "" {
		t.Errorf("Cluster spec %+v", c.Spec)
	}
	find[*corev1.Namespace](t, objs, "", "karmada-es-member1")
	find[*corev1.Namespace](t, objs, "", "karmada-cluster")
}

// No rule lets an agent create Leases or Clusters (it could forge another
// cluster's), write a Cluster's spec, reach another cluster's objects, or
// read Secrets.
func TestAgentObjectsGrantNothingMore(t *testing.T) {
	for _, o := range AgentObjects("member1") {
		var rules []rbacv1.PolicyRule
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			rules = r.Rules
		case *rbacv1.Role:
			rules = r.Rules
		default:
			if l := o.GetLabels(); l[LabelManagedBy] != ManagedByValue {
				t.Errorf("%s lacks label %s", describe(o), LabelManagedBy)
			}
			continue
		}
		for _, r := range rules {
			for _, v := range r.Verbs {
				if v == "*" || v == "escalate" || v == "bind" || v == "impersonate" || v == "delete" || v == "deletecollection" {
					t.Errorf("%s grants %s: %+v", describe(o), v, r)
				}
			}
			for _, res := range r.Resources {
				if res == "*" || res == "secrets" || res == "signers" || (strings.HasPrefix(res, "certificatesigningrequests/") && res != "certificatesigningrequests/"+RenewalSubresource) {
					t.Errorf("%s grants %s: %+v", describe(o), res, r)
				}
				switch res {
				case "leases", "clusters":
					if slices.Contains(r.Verbs, "create") {
						t.Errorf("%s grants create on %s: %+v", describe(o), res, r)
					}
					if !slices.Equal(r.ResourceNames, []string{"member1"}) {
						t.Errorf("%s grants %s beyond member1's: %+v", describe(o), res, r)
					}
				}
				if res == "clusters" && (slices.Contains(r.Verbs, "update") || slices.Contains(r.Verbs, "patch")) {
					t.Errorf("%s lets the agent write a Cluster's spec: %+v", describe(o), r)
				}
			}
			if slices.Contains(r.APIGroups, "*") {
				t.Errorf("%s grants every group: %+v", describe(o), r)
			}
		}
	}
}

func TestEnsureAgentAccessIsIdempotent(t *testing.T) {
	ctx := context.Background()
	var writes []string
	c := interceptor.NewClient(fakeClient(t), clienttest.CountWrites(func(verb string, obj client.Object) {
		writes = append(writes, verb+" "+describe(obj))
	}))
	changes, err := EnsureAgentAccess(ctx, c, "member1")
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != len(AgentObjects("member1")) {
		t.Errorf("first run: %d changes, want every object created: %v", len(changes), changes)
	}
	writes = nil
	changes, err = EnsureAgentAccess(ctx, c, "member1")
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 0 || len(writes) != 0 {
		t.Errorf("second run wrote %v (changes %v), want nothing", writes, changes)
	}
	// A second cluster shares the shared roles.
	changes, err = EnsureAgentAccess(ctx, c, "member2")
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if strings.Contains(ch, "lifeboat:agent-bootstrapper") || strings.Contains(ch, "ClusterRole lifeboat:agent ") || strings.Contains(ch, "Namespace karmada-cluster") {
			t.Errorf("member2 changed a shared object: %s", ch)
		}
	}
}

func TestEnsureAgentAccessRepairs(t *testing.T) {
	ctx := context.Background()
	widened := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lifeboat:agent:member1"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"cluster.karmada.io"}, Resources: []string{"clusters"}, Verbs: []string{"*"}}}}
	wrongRef := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lifeboat:agent", Namespace: "karmada-es-member1"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{userSubject("system:lifeboat:agent:member1")},
	}
	renewed := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "member1", Namespace: "karmada-cluster"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("member1"), RenewTime: &metav1.MicroTime{Time: time.Unix(100, 0)}}}
	c := fakeClient(t, widened, wrongRef, renewed, makeCluster("member1", clusterv1alpha1.Pull))
	changes, err := EnsureAgentAccess(ctx, c, "member1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ClusterRole lifeboat:agent:member1 updated", "RoleBinding karmada-es-member1/lifeboat:agent replaced"} {
		if !slices.Contains(changes, want) {
			t.Errorf("changes %v lack %q", changes, want)
		}
	}
	var role rbacv1.ClusterRole
	if err := c.Get(ctx, client.ObjectKey{Name: "lifeboat:agent:member1"}, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) != 3 || slices.Contains(role.Rules[0].Verbs, "*") {
		t.Errorf("role not narrowed: %+v", role.Rules)
	}
	var b rbacv1.RoleBinding
	if err := c.Get(ctx, client.ObjectKey{Namespace: "karmada-es-member1", Name: "lifeboat:agent"}, &b); err != nil {
		t.Fatal(err)
	}
	if b.RoleRef.Kind != "Role" || b.RoleRef.Name != "lifeboat:agent" {
		t.Errorf("binding still refers to %+v", b.RoleRef)
	}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: "karmada-cluster", Name: "member1"}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.Equal(&metav1.MicroTime{Time: time.Unix(100, 0)}) {
		t.Errorf("the agent's Lease renewal was overwritten: %+v", lease.Spec)
	}
}

func TestCreateToken(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t.Run("a new Pull cluster", func(t *testing.T) {
		c := fakeClient(t)
		res, err := CreateToken(ctx, c, TokenOptions{Cluster: "member1", TTL: time.Hour}, now)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Expires.Equal(now.Add(time.Hour)) || len(res.Changes) == 0 {
			t.Errorf("result %+v", res)
		}
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "bootstrap-token-" + res.Token.ID}, &s); err != nil {
			t.Fatal(err)
		}
		var cl clusterv1alpha1.Cluster
		if err := c.Get(ctx, client.ObjectKey{Name: "member1"}, &cl); err != nil || cl.Spec.SyncMode != clusterv1alpha1.Pull {
			t.Errorf("Cluster: %v %+v", err, cl.Spec)
		}
		tokens, err := ListTokens(ctx, c)
		if err != nil || len(tokens) != 1 || tokens[0].ID != res.Token.ID || tokens[0].Cluster != "member1" {
			t.Errorf("ListTokens = %+v, %v", tokens, err)
		}
	})
	t.Run("a Push cluster is refused and nothing is written", func(t *testing.T) {
		var writes int
		c := interceptor.NewClient(fakeClient(t, makeCluster("member1", clusterv1alpha1.Push)),
			clienttest.CountWrites(func(string, client.Object) { writes++ }))
		_, err := CreateToken(ctx, c, TokenOptions{Cluster: "member1", TTL: time.Hour}, now)
		if !errors.Is(err, ErrPushCluster) || err.Error() != "cluster member1 is joined in Push mode; unjoin it first or choose another name" {
			t.Fatalf("err = %v", err)
		}
		if writes != 0 {
			t.Errorf("%d writes", writes)
		}
	})
	t.Run("an existing Pull cluster gets another token", func(t *testing.T) {
		c := fakeClient(t, makeCluster("member1", clusterv1alpha1.Pull))
		if _, err := CreateToken(ctx, c, TokenOptions{Cluster: "member1", TTL: time.Hour}, now); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no lifetime is refused", func(t *testing.T) {
		if _, err := CreateToken(ctx, fakeClient(t), TokenOptions{Cluster: "member1"}, now); err == nil {
			t.Fatal("accepted a token that never expires")
		}
	})
}

func TestDeleteAndRevoke(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	kubeadm := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-kkkkkk"}, Type: "bootstrap.kubernetes.io/token",
		Data: map[string][]byte{"token-id": []byte("kkkkkk")}}
	c := fakeClient(t, kubeadm)
	a, err := CreateToken(ctx, c, TokenOptions{Cluster: "member1", TTL: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CreateToken(ctx, c, TokenOptions{Cluster: "member1", TTL: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := CreateToken(ctx, c, TokenOptions{Cluster: "member2", TTL: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DeleteToken(ctx, c, "kkkkkk"); err == nil || !strings.Contains(err.Error(), "not a bootstrap token of lifeboat's") {
		t.Errorf("deleting kubeadm's token: %v", err)
	}
	if _, err := DeleteToken(ctx, c, "Bad!"); err == nil {
		t.Error("accepted a malformed ID")
	}
	if info, err := DeleteToken(ctx, c, a.Token.ID); err != nil || info.Cluster != "member1" {
		t.Fatalf("DeleteToken = %+v, %v", info, err)
	}
	if _, err := DeleteToken(ctx, c, a.Token.ID); err == nil {
		t.Error("deleted a token twice")
	}
	deleted, err := RevokeAgent(ctx, c, "member1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bootstrap token " + b.Token.ID, "ClusterRole lifeboat:agent:member1", "ClusterRoleBinding lifeboat:agent:member1",
		"Role karmada-cluster/lifeboat:agent:member1", "RoleBinding karmada-cluster/lifeboat:agent:member1", "Lease karmada-cluster/member1",
		"Role karmada-es-member1/lifeboat:agent", "RoleBinding karmada-es-member1/lifeboat:agent"} {
		if !slices.Contains(deleted, want) {
			t.Errorf("RevokeAgent deleted %v, not %s", deleted, want)
		}
	}
	tokens, err := ListTokens(ctx, c)
	if err != nil || len(tokens) != 1 || tokens[0].ID != other.Token.ID {
		t.Errorf("left %+v, %v; want member2's token only", tokens, err)
	}
	for _, shared := range []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lifeboat:agent"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lifeboat:agent:member2"}}, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(shared), shared); err != nil {
			t.Errorf("%s: %v", describe(shared), err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kubeadm), &corev1.Secret{}); err != nil {
		t.Errorf("kubeadm's token: %v", err)
	}
}
