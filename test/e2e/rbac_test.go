//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/config/rbac"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// The controller manager of the shared environment, which every other test
// exercises, runs as its own user with the generated ClusterRole: what it
// does not need is refused.
func TestControllerManagerRunsWithLeastPrivilege(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := suite.state.ControllerManagerKubeconfigPath()
	if got := componentFlag(t, suite.state, "lifeboat-controller-manager", "--kubeconfig="); got != path {
		t.Fatalf("the controller manager runs with --kubeconfig=%s, want its own %s", got, path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs := clientsetFor(t, cfg)
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := who.Status.UserInfo; u.Username != rbac.ControllerManagerUser || strings.Contains(strings.Join(u.Groups, ","), "system:masters") {
		t.Fatalf("the controller manager is %s in groups %v", u.Username, u.Groups)
	}

	ns := newNamespace(t, "rbac-cm")
	admin := clientsetFor(t, controlPlaneConfig(t))
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "template"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		do   func() error
	}{
		{"create a ClusterRoleBinding to cluster-admin", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-e2e-escalate-" + rand.String(5)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: rbac.ControllerManagerUser}},
			}, metav1.CreateOptions{})
			return err
		}},
		{"delete a user's template", func() error {
			return cs.CoreV1().ConfigMaps(ns).Delete(ctx, "template", metav1.DeleteOptions{})
		}},
		{"create a Secret", func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{})
			return err
		}},
		{"create a Cluster", func() error {
			return clientFor(t, cfg).Create(ctx, &clusterv1alpha1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-e2e-planted"},
				Spec:       clusterv1alpha1.ClusterSpec{APIEndpoint: "https://127.0.0.1:1", SyncMode: clusterv1alpha1.Push},
			})
		}},
	} {
		if err := tc.do(); !apierrors.IsForbidden(err) {
			t.Errorf("the controller manager's identity may %s: %v, want Forbidden", tc.what, err)
		}
	}
	// What it needs is allowed: the check above is RBAC's, not a broken
	// credential.
	var clusters clusterv1alpha1.ClusterList
	if err := clientFor(t, cfg).List(ctx, &clusters); err != nil || len(clusters.Items) == 0 {
		t.Errorf("listing Clusters as the controller manager: %d, %v", len(clusters.Items), err)
	}
}

// Each member was joined with a ServiceAccount of its own whose ClusterRole
// allows the default kinds: a kind outside them is refused by the member, and
// the Work says how to allow it.
func TestMemberCredentialsAreLeastPrivilege(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp := clientFor(t, controlPlaneConfig(t))
	var c clusterv1alpha1.Cluster
	if err := cp.Get(ctx, types.NamespacedName{Name: "member1"}, &c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.InsecureSkipTLSVerification {
		t.Error("member1 is reached without verifying its certificate")
	}
	var secret corev1.Secret
	if err := cp.Get(ctx, types.NamespacedName{Namespace: c.Spec.SecretRef.Namespace, Name: c.Spec.SecretRef.Name}, &secret); err != nil {
		t.Fatal(err)
	}
	if len(secret.Data["caBundle"]) == 0 {
		t.Error("member1's Secret has no caBundle")
	}
	member := kubernetes.NewForConfigOrDie(&rest.Config{
		Host:            c.Spec.APIEndpoint,
		BearerToken:     string(secret.Data["token"]),
		TLSClientConfig: rest.TLSClientConfig{CAData: secret.Data["caBundle"]},
	})
	who, err := member.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + cluster.SecretNamespace + ":" + cluster.ServiceAccountName("member1"); who.Status.UserInfo.Username != want {
		t.Fatalf("Lifeboat is %s in member1, want %s", who.Status.UserInfo.Username, want)
	}
	for _, tc := range []struct {
		attr    authorizationv1.ResourceAttributes
		allowed bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "flink.apache.org", Resource: "flinkdeployments", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, false},
		{authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes", Name: "member1-control-plane"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, false},
	} {
		attr := tc.attr
		r, err := member.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != tc.allowed {
			t.Errorf("in member1 Lifeboat may %s %s.%s: %v, want %v", attr.Verb, attr.Resource, attr.Group, r.Status.Allowed, tc.allowed)
		}
	}

	// A ClusterRole is no default kind: its Work fails with a message that
	// names the way to allow it, and member1 has no such role.
	ns := newNamespace(t, "rbac-member")
	role := "lifeboat-e2e-rbac-" + rand.String(5)
	kubeconfig := suite.state.KubeconfigPath()
	t.Cleanup(func() {
		_, _ = kubectlE(kubeconfig, "--context", localenv.ControlPlaneName, "delete", "clusterrole,clusterpropagationpolicy", role, "--ignore-not-found")
	})
	applyYAML(t, ns, emptyClusterRoleTo(role, "member1"))
	want := "--propagate-resource clusterroles.rbac.authorization.k8s.io"
	eventually(t, 60*time.Second, "the ClusterRole's Work in member1 fails, naming "+want, func(ctx context.Context) (bool, string, error) {
		var works workv1alpha1.WorkList
		if err := cp.List(ctx, &works, client.InNamespace(cluster.ExecutionNamespace("member1"))); err != nil {
			return false, "", err
		}
		for _, w := range works.Items {
			if !strings.HasPrefix(w.Name, role) {
				continue
			}
			cond := condition(w.Status.Conditions, workv1alpha1.WorkApplied)
			if cond == nil {
				return false, "Work " + w.Name + " has no Applied condition", nil
			}
			return cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, want), cond.Reason + ": " + cond.Message, nil
		}
		return false, fmt.Sprintf("no Work for %s among %d", role, len(works.Items)), nil
	})
	if _, err := clientsetFor(t, memberConfig(t, "member1")).RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s in member1: %v, want NotFound", role, err)
	}
}

// A member whose kubeconfig skips TLS verification joins only when asked to,
// and the refusal says how.
func TestJoinRefusesAnUnverifiedMember(t *testing.T) {
	t.Parallel()
	cfg, err := clientcmd.LoadFromFile(suite.state.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cl := cfg.Clusters["member3"]
	cl.CertificateAuthorityData, cl.InsecureSkipTLSVerify = nil, true
	path := t.TempDir() + "/insecure.kubeconfig"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	out, err := lifeboat(t, "join", "lifeboat-e2e-insecure", "--cluster-kubeconfig", path, "--cluster-context", "member3",
		"--kubeconfig", suite.state.KubeconfigPath(), "--context", localenv.ControlPlaneName)
	if err == nil || !strings.Contains(out, "skips TLS verification") || !strings.Contains(out, "--insecure-skip-tls-verification") {
		t.Fatalf("join of an unverified member: %v\n%s", err, out)
	}
	var c clusterv1alpha1.Cluster
	if err := clientFor(t, controlPlaneConfig(t)).Get(context.Background(), types.NamespacedName{Name: "lifeboat-e2e-insecure"}, &c); !apierrors.IsNotFound(err) {
		t.Errorf("Cluster lifeboat-e2e-insecure after the refusal: %v", err)
	}
}

// lifeboat init is what an installer runs at every install and upgrade: on a
// control plane that has everything, it changes nothing a user made and
// reports each step; with the controller manager's identity it is refused.
func TestInitIsIdempotentAndNeedsAnAdministrator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := clientsetFor(t, controlPlaneConfig(t))
	before, err := cs.RbacV1().ClusterRoles().Get(ctx, rbac.ControllerManagerRoleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := lifeboat(t, "init", "--kubeconfig", suite.state.KubeconfigPath(), "--context", localenv.ControlPlaneName, "--wait-for-api-server")
	if err != nil {
		t.Fatalf("lifeboat init: %v\n%s", err, out)
	}
	if !containsAll(out, "CRDs applied and Established", "ClusterRole and ClusterRoleBinding lifeboat-controller-manager", "default ClusterTaintPolicy exists; left as it is") {
		t.Errorf("lifeboat init said:\n%s", out)
	}
	after, err := cs.RbacV1().ClusterRoles().Get(ctx, rbac.ControllerManagerRoleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before.Rules, after.Rules) {
		t.Errorf("a second init changed the role's rules")
	}
	out, err = lifeboat(t, "init", "--kubeconfig", suite.state.ControllerManagerKubeconfigPath())
	if err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("lifeboat init as the controller manager: %v\n%s", err, out)
	}
}
