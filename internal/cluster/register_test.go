package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
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

func TestJoinWithTokenKubeconfig(t *testing.T) {
	cp := newFakeClient(t).Build()
	member := memberClientset()
	mk := MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", BearerToken: "member-token", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("member-ca")}}}
	res, err := Join(context.Background(), cp, mk, member, JoinOptions{Name: "member4", Region: "eu", Zones: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ServiceAccount != "" {
		t.Errorf("a ServiceAccount was created for a token kubeconfig: %s", res.ServiceAccount)
	}
	if got := res.Cluster.Spec; got.ID != "member-uid" || got.APIEndpoint != "https://10.0.0.4:6443" || got.Region != "eu" || len(got.Zones) != 1 {
		t.Errorf("cluster spec = %+v", got)
	}
	var s corev1.Secret
	if err := cp.Get(context.Background(), types.NamespacedName{Namespace: SecretNamespace, Name: "member4"}, &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["token"]) != "member-token" || string(s.Data["caBundle"]) != "member-ca" {
		t.Errorf("secret data = %v", s.Data)
	}
	for _, a := range member.Actions() {
		if a.GetVerb() == "create" {
			t.Errorf("join created %s in the member although the kubeconfig had a token", a.GetResource().Resource)
		}
	}
}

func TestJoinWithClientCertCreatesServiceAccount(t *testing.T) {
	cp := newFakeClient(t).Build()
	member := memberClientset()
	// The member's token controller fills the token Secret as soon as it is created.
	member.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.CreateAction).GetObject().(*corev1.Secret)
		if s.Type == corev1.SecretTypeServiceAccountToken {
			s.Data = map[string][]byte{"token": []byte("sa-token"), "ca.crt": []byte("sa-ca")}
		}
		return false, nil, nil
	})
	mk := MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", TLSClientConfig: rest.TLSClientConfig{CertData: []byte("cert"), KeyData: []byte("key")}}}
	res, err := Join(context.Background(), cp, mk, member, JoinOptions{Name: "member4", TokenTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ServiceAccount != "karmada-cluster/lifeboat-member4" {
		t.Errorf("ServiceAccount = %q", res.ServiceAccount)
	}
	ctx := context.Background()
	if _, err := member.CoreV1().ServiceAccounts(SecretNamespace).Get(ctx, "lifeboat-member4", metav1.GetOptions{}); err != nil {
		t.Errorf("ServiceAccount: %v", err)
	}
	crb, err := member.RbacV1().ClusterRoleBindings().Get(ctx, "lifeboat-member4", metav1.GetOptions{})
	if err != nil || crb.RoleRef.Name != "cluster-admin" || crb.Subjects[0].Name != "lifeboat-member4" {
		t.Errorf("ClusterRoleBinding = %+v, %v", crb, err)
	}
	var s corev1.Secret
	if err := cp.Get(ctx, types.NamespacedName{Namespace: SecretNamespace, Name: "member4"}, &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["token"]) != "sa-token" || string(s.Data["caBundle"]) != "sa-ca" {
		t.Errorf("secret data = %v, want the ServiceAccount's token and CA", s.Data)
	}
	deleted, err := CleanupMember(ctx, member, "member4")
	if err != nil || len(deleted) != 3 {
		t.Errorf("CleanupMember deleted %v, %v", deleted, err)
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

func TestJoinTokenTimeout(t *testing.T) {
	cp := newFakeClient(t).Build()
	mk := MemberKubeconfig{Config: &rest.Config{Host: "https://10.0.0.4:6443", TLSClientConfig: rest.TLSClientConfig{CertData: []byte("c")}}}
	_, err := Join(context.Background(), cp, mk, memberClientset(), JoinOptions{Name: "member4", TokenTimeout: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "did not issue a token") {
		t.Fatalf("error = %v", err)
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
