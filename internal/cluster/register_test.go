package cluster

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func registerOptions(name string) RegisterOptions {
	return RegisterOptions{Name: name, APIEndpoint: "https://127.0.0.1:6443", Token: "tok", CABundle: []byte("ca"), ID: "id-" + name}
}

func TestRegister(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(t).Build()
	cl, err := Register(ctx, c, registerOptions("member4"))
	if err != nil {
		t.Fatal(err)
	}
	if cl.Spec.SyncMode != clusterv1alpha1.Push || cl.Spec.SecretRef.Name != "member4" || cl.Spec.SecretRef.Namespace != SecretNamespace || cl.Spec.ID != "id-member4" {
		t.Errorf("cluster spec = %+v", cl.Spec)
	}
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: SecretNamespace, Name: "member4"}, &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["token"]) != "tok" || string(s.Data["caBundle"]) != "ca" {
		t.Errorf("secret data = %v", s.Data)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Cluster" || s.OwnerReferences[0].Name != "member4" {
		t.Errorf("secret owners = %+v", s.OwnerReferences)
	}
}

func TestRegisterRefuses(t *testing.T) {
	existing := makeCluster("member4").Obj()
	existing.Spec.ID = "id-other"
	cases := map[string]struct {
		opts        RegisterOptions
		wantErr     string
		wantAlready bool
	}{
		"name taken": {
			opts: registerOptions("member4"), wantErr: `a Cluster named "member4" exists`, wantAlready: true,
		},
		"member joined under another name": {
			opts:    func() RegisterOptions { o := registerOptions("member5"); o.ID = "id-other"; return o }(),
			wantErr: `already joined as "member4"`, wantAlready: true,
		},
		"name too long": {
			opts: registerOptions(strings.Repeat("a", 49)), wantErr: "longer than 48",
		},
		"name not a DNS label": {
			opts: registerOptions("Member_4"), wantErr: "invalid cluster name",
		},
		"plain http endpoint": {
			opts:    func() RegisterOptions { o := registerOptions("member5"); o.APIEndpoint = "http://x:80"; return o }(),
			wantErr: "must be an https URL",
		},
		"bad proxy": {
			opts:    func() RegisterOptions { o := registerOptions("member5"); o.ProxyURL = "ftp://p"; return o }(),
			wantErr: "http, https or socks5",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &writeCounter{}
			c := newFakeClient(t).WithObjects(existing.DeepCopy()).WithInterceptorFuncs(w.funcs()).Build()
			_, err := Register(context.Background(), c, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrAlreadyJoined) != tc.wantAlready {
				t.Errorf("errors.Is(ErrAlreadyJoined) = %t", !tc.wantAlready)
			}
			if w.n != 0 {
				t.Errorf("a refused registration wrote %d times", w.n)
			}
		})
	}
}

func TestRegisterTakesOverLeftoverSecret(t *testing.T) {
	left := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: SecretNamespace, Name: "member4"}, Data: map[string][]byte{"token": []byte("old")}}
	c := newFakeClient(t).WithObjects(left).Build()
	if _, err := Register(context.Background(), c, registerOptions("member4")); err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(left), &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["token"]) != "tok" {
		t.Errorf("token = %q, want the new one", s.Data["token"])
	}
}

func memberClientset() *kubefake.Clientset {
	return kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "member-uid"}})
}

// tokenIssuingMember is a member whose token controller fills a
// ServiceAccount token Secret as soon as it is created.
func tokenIssuingMember() *kubefake.Clientset {
	member := memberClientset()
	member.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.CreateAction).GetObject().(*corev1.Secret)
		if s.Type == corev1.SecretTypeServiceAccountToken {
			s.Data = map[string][]byte{"token": []byte("sa-token"), "ca.crt": []byte("sa-ca")}
		}
		return false, nil, nil
	})
	return member
}

func TestJoinCreatesALeastPrivilegeServiceAccount(t *testing.T) {
	ctx := context.Background()
	flink := MemberResource{Group: "flink.apache.org", Resource: "*"}
	for name, tc := range map[string]struct {
		cfg    rest.Config
		wantCA string
	}{
		// The kubeconfig's own token is never stored: it may be an admin's.
		"token kubeconfig, its CA":  {rest.Config{BearerToken: "admin-token", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("member-ca")}}, "member-ca"},
		"client certificate, no CA": {rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: []byte("cert"), KeyData: []byte("key")}}, "sa-ca"},
		"exec plugin, its CA":       {rest.Config{ExecProvider: &clientcmdapi.ExecConfig{Command: "x"}, TLSClientConfig: rest.TLSClientConfig{CAData: []byte("member-ca")}}, "member-ca"},
	} {
		t.Run(name, func(t *testing.T) {
			cp := newFakeClient(t).Build()
			member := tokenIssuingMember()
			cfg := tc.cfg
			cfg.Host = "https://10.0.0.4:6443"
			res, err := Join(ctx, cp, MemberKubeconfig{Config: &cfg}, member, JoinOptions{Name: "member4", Region: "eu", Zones: []string{"a"}, TokenTimeout: time.Second, Resources: []MemberResource{flink}})
			if err != nil {
				t.Fatal(err)
			}
			if res.ServiceAccount != "karmada-cluster/lifeboat-member4" {
				t.Errorf("ServiceAccount = %q", res.ServiceAccount)
			}
			if got := res.Cluster.Spec; got.ID != "member-uid" || got.APIEndpoint != "https://10.0.0.4:6443" || got.Region != "eu" || len(got.Zones) != 1 || got.InsecureSkipTLSVerification {
				t.Errorf("cluster spec = %+v", got)
			}
			if _, err := member.CoreV1().ServiceAccounts(SecretNamespace).Get(ctx, "lifeboat-member4", metav1.GetOptions{}); err != nil {
				t.Errorf("ServiceAccount: %v", err)
			}
			crb, err := member.RbacV1().ClusterRoleBindings().Get(ctx, "lifeboat-member4", metav1.GetOptions{})
			if err != nil || crb.RoleRef.Name != "lifeboat-member4" || crb.Subjects[0].Name != "lifeboat-member4" {
				t.Errorf("ClusterRoleBinding = %+v, %v", crb, err)
			}
			role, err := member.RbacV1().ClusterRoles().Get(ctx, "lifeboat-member4", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := MemberRules(append(DefaultMemberResources(), flink)); !reflect.DeepEqual(role.Rules, want) {
				t.Errorf("ClusterRole rules = %+v, want %+v", role.Rules, want)
			}
			var s corev1.Secret
			if err := cp.Get(ctx, types.NamespacedName{Namespace: SecretNamespace, Name: "member4"}, &s); err != nil {
				t.Fatal(err)
			}
			if string(s.Data["token"]) != "sa-token" || string(s.Data["caBundle"]) != tc.wantCA {
				t.Errorf("secret data = %q, want the ServiceAccount's token and CA %s", s.Data, tc.wantCA)
			}
			deleted, err := CleanupMember(ctx, member, "member4")
			if err != nil || len(deleted) != 4 {
				t.Errorf("CleanupMember deleted %v, %v", deleted, err)
			}
		})
	}
}

func TestJoinReplacesAClusterAdminBindingOfAnOlderJoin(t *testing.T) {
	ctx := context.Background()
	member := tokenIssuingMember()
	old := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-member4"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "lifeboat-member4", Namespace: SecretNamespace}},
	}
	if _, err := member.RbacV1().ClusterRoleBindings().Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := member.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-member4"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk := MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}}
	if _, err := Join(ctx, newFakeClient(t).Build(), mk, member, JoinOptions{Name: "member4", TokenTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	crb, err := member.RbacV1().ClusterRoleBindings().Get(ctx, "lifeboat-member4", metav1.GetOptions{})
	if err != nil || crb.RoleRef.Name != "lifeboat-member4" {
		t.Errorf("ClusterRoleBinding = %+v, %v; want it bound to lifeboat-member4", crb, err)
	}
	role, err := member.RbacV1().ClusterRoles().Get(ctx, "lifeboat-member4", metav1.GetOptions{})
	if err != nil || len(role.Rules) == 0 {
		t.Errorf("ClusterRole = %+v, %v; want its rules set", role, err)
	}
}

func TestJoinInsecureMember(t *testing.T) {
	ctx := context.Background()
	insecure := func() MemberKubeconfig {
		return MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}}
	}
	member := tokenIssuingMember()
	_, err := Join(ctx, newFakeClient(t).Build(), insecure(), member, JoinOptions{Name: "member4", TokenTimeout: time.Second})
	if !errors.Is(err, ErrInsecureMember) || !strings.Contains(err.Error(), "--insecure-skip-tls-verification") {
		t.Fatalf("error = %v, want ErrInsecureMember naming the flag", err)
	}
	if n := len(member.Actions()); n != 0 {
		t.Errorf("the member was contacted %d times before the refusal", n)
	}
	for name, mk := range map[string]MemberKubeconfig{
		"insecure kubeconfig":  insecure(),
		"verifiable, flag set": {Config: &rest.Config{Host: "https://10.0.0.4:6443", BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}},
	} {
		t.Run(name, func(t *testing.T) {
			cp := newFakeClient(t).Build()
			res, err := Join(ctx, cp, mk, tokenIssuingMember(), JoinOptions{Name: "member4", TokenTimeout: time.Second, InsecureSkipTLSVerification: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Cluster.Spec.InsecureSkipTLSVerification {
				t.Error("the Cluster does not say that it skips verification")
			}
			var s corev1.Secret
			if err := cp.Get(ctx, types.NamespacedName{Namespace: SecretNamespace, Name: "member4"}, &s); err != nil {
				t.Fatal(err)
			}
			if len(s.Data["caBundle"]) != 0 {
				t.Errorf("caBundle %q stored beside insecureSkipTLSVerification (a client refuses both)", s.Data["caBundle"])
			}
		})
	}
}

func TestJoinRefusesJoinedNameWithoutTouchingTheMember(t *testing.T) {
	cp := newFakeClient(t).WithObjects(makeCluster("member4").Obj()).Build()
	member := memberClientset()
	mk := MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", BearerToken: "t"}}
	_, err := Join(context.Background(), cp, mk, member, JoinOptions{Name: "member4"})
	if !errors.Is(err, ErrAlreadyJoined) {
		t.Fatalf("error = %v, want ErrAlreadyJoined", err)
	}
	if n := len(member.Actions()); n != 0 {
		t.Errorf("the member was contacted %d times", n)
	}
}

// TestJoinTokenTimeout: the wait for the member's token ends within
// --token-timeout; a negative one is refused before the member is
// contacted, not replaced by the default.
func TestJoinTokenTimeout(t *testing.T) {
	cases := map[string]struct {
		timeout time.Duration
		want    string
		// contacted says the member is reached before the error.
		contacted bool
	}{
		"1ms: the wait ends":    {timeout: time.Millisecond, want: "did not issue a token", contacted: true},
		"negative: refused":     {timeout: -time.Second, want: "--token-timeout -1s must not be negative"},
		"a negative nanosecond": {timeout: -1, want: "--token-timeout -1ns must not be negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cp := newFakeClient(t).Build()
			member := memberClientset()
			mk := MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", TLSClientConfig: rest.TLSClientConfig{CertData: []byte("c")}}}
			o := JoinOptions{Name: "member4", TokenTimeout: tc.timeout}
			if err := o.Validate(); (err == nil) != tc.contacted {
				t.Errorf("Validate() = %v", err)
			}
			_, err := Join(context.Background(), cp, mk, member, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if n := len(member.Actions()); (n != 0) != tc.contacted {
				t.Errorf("the member was contacted %d times", n)
			}
		})
	}
}

func TestCordonUncordon(t *testing.T) {
	ctx := context.Background()
	user := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	w := &writeCounter{}
	c := newFakeClient(t).WithObjects(makeCluster("m1").Taints(user).Obj()).WithInterceptorFuncs(w.funcs()).Build()
	now := func() time.Time { return t0 }
	steps := []struct {
		do          func() (bool, error)
		wantChanged bool
		wantTaints  int
	}{
		{func() (bool, error) { return Cordon(ctx, c, "m1", now) }, true, 2},
		{func() (bool, error) { return Cordon(ctx, c, "m1", now) }, false, 2},
		{func() (bool, error) { return Uncordon(ctx, c, "m1") }, true, 1},
		{func() (bool, error) { return Uncordon(ctx, c, "m1") }, false, 1},
	}
	for i, s := range steps {
		changed, err := s.do()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if changed != s.wantChanged {
			t.Errorf("step %d: changed = %t, want %t", i, changed, s.wantChanged)
		}
		var got clusterv1alpha1.Cluster
		if err := c.Get(ctx, types.NamespacedName{Name: "m1"}, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.Taints) != s.wantTaints || got.Spec.Taints[0] != user {
			t.Errorf("step %d: taints = %v", i, got.Spec.Taints)
		}
	}
	if w.n != 2 {
		t.Errorf("writes = %d, want 2 (idempotent steps write nothing)", w.n)
	}
	if _, err := Cordon(ctx, c, "nope", now); !errors.Is(err, ErrNotJoined) {
		t.Errorf("cordon of a missing cluster: %v", err)
	}
}

func TestEditTaintsSetsTimeAddedForNoExecute(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(t).WithObjects(makeCluster("m1").Obj()).Build()
	edit, err := ParseTaintSpecs([]string{"maintenance:NoExecute"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EditTaints(ctx, c, "m1", edit, false, func() time.Time { return t0 }); err != nil {
		t.Fatal(err)
	}
	var got clusterv1alpha1.Cluster
	if err := c.Get(ctx, types.NamespacedName{Name: "m1"}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].TimeAdded == nil || !got.Spec.Taints[0].TimeAdded.Time.Equal(t0) {
		t.Errorf("taints = %+v", got.Spec.Taints)
	}
}

func TestUnregister(t *testing.T) {
	ctx := context.Background()
	cl := makeCluster("m1").Finalizer().Obj()
	cl.UID = "uid-m1"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: SecretNamespace, Name: "m1"}}
	c := newFakeClient(t).WithObjects(cl, secret).Build()
	res, err := Unregister(ctx, c, "m1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Gone || len(res.Secrets) != 1 {
		t.Errorf("result = %+v", res)
	}
	var got clusterv1alpha1.Cluster
	if err := c.Get(ctx, types.NamespacedName{Name: "m1"}, &got); err != nil || got.DeletionTimestamp.IsZero() {
		t.Errorf("cluster not marked for deletion (finalizer kept it): %v", err)
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "uid-m1" {
		t.Errorf("secret not handed over to the cluster: %+v", s.OwnerReferences)
	}
	if _, err := Unregister(ctx, c, "nope", 0); !errors.Is(err, ErrNotJoined) {
		t.Errorf("unjoin of a missing cluster: %v", err)
	}
}

func TestUnregisterWaitsAndDeletesSecrets(t *testing.T) {
	ctx := context.Background()
	cl := makeCluster("m1").Obj() // no finalizer: goes at once
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: SecretNamespace, Name: "m1"}}
	c := newFakeClient(t).WithObjects(cl, secret).Build()
	res, err := Unregister(ctx, c, "m1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Gone {
		t.Errorf("Gone = false")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}); err == nil {
		t.Errorf("secret still there")
	}
}

func TestJoinKeepsABindingThatIsAlreadyRight(t *testing.T) {
	ctx := context.Background()
	member := tokenIssuingMember()
	mk := MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}}
	if _, err := Join(ctx, newFakeClient(t).Build(), mk, member, JoinOptions{Name: "member4", TokenTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	member.ClearActions()
	// Joined again after an unjoin that left the member as it was.
	if _, err := Join(ctx, newFakeClient(t).Build(), mk, member, JoinOptions{Name: "member4", TokenTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, a := range member.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("the second join deleted %s in the member", a.GetResource().Resource)
		}
	}
}
