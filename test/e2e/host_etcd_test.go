//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

// etcdRange is etcd's JSON gateway request for one key under "/": what
// any client able to talk to etcd could read, every Secret of the control
// plane (the members' credentials among them) included.
const etcdRange = `{"key":"Lw==","range_end":"MA==","keys_only":true,"limit":1}`

// TestHostEtcdAdmitsOnlyTheAPIServer: the chart's etcd speaks TLS on its
// client and peer ports and lets in only a client certificate signed by
// etcd's own CA, as the API server has. The host's pod network does not
// enforce NetworkPolicies (the CNI bridge plugin), as many do not, so the
// certificate is all that stands between another pod and the control
// plane's data: asked from the node, a request without a certificate, in
// plain HTTP, or with a certificate of the API server's CA (which also signs
// the Pull agents' client certificates) is refused, and the API server's
// own certificate, checked against etcd's name, reads.
func TestHostEtcdAdmitsOnlyTheAPIServer(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	e := hostEtcd(t, ctx)
	ip, serverName, etcdCA, apiserverClient, secret := e.ip, e.serverName, e.ca, e.apiserverClient, e.secret
	pki := hostRelease + "-pki"
	foreign := signedClientCert(t, secret(pki, "ca.crt"), secret(pki, "ca.key"))

	ask := func(scheme string, port int, cfg *tls.Config) (int, string, error) {
		return etcdPost(scheme, ip, port, "/v3/kv/range", etcdRange, cfg)
	}
	verified := func(cert *tls.Certificate) *tls.Config { return etcdTLS(etcdCA, serverName, cert) }

	// The API server's certificate reads: etcd answers on this address, and
	// its certificate carries the member's name.
	code, body, err := ask("https", 2379, verified(&apiserverClient))
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"count"`) {
		t.Fatalf("with the API server's certificate: status %d, body %q, error %v; want 200 with a count", code, body, err)
	}

	refused := []struct {
		what   string
		scheme string
		port   int
		cfg    *tls.Config
	}{
		{"plain HTTP on the client port", "http", 2379, nil},
		{"TLS without a client certificate", "https", 2379, verified(nil)},
		{"a client certificate of the API server's CA", "https", 2379, verified(&foreign)},
		{"TLS without a certificate on the peer port", "https", 2380, verified(nil)},
		{"a client certificate of the API server's CA on the peer port", "https", 2380, verified(&foreign)},
		{"plain HTTP on the peer port", "http", 2380, nil},
	}
	for _, r := range refused {
		code, body, err := ask(r.scheme, r.port, r.cfg)
		switch {
		case err != nil && unreached(err):
			t.Errorf("%s: etcd was not reached, so its refusal is not shown: %v", r.what, err)
		case err != nil:
			t.Logf("%s: refused: %v", r.what, err)
		case code == http.StatusOK || strings.Contains(body, `"kvs"`) || strings.Contains(body, `"count"`):
			t.Errorf("%s: etcd answered, status %d: %q", r.what, code, body)
		default:
			t.Logf("%s: refused with status %d: %q", r.what, code, strings.TrimSpace(body))
		}
	}
}

// etcdPost posts body to path on etcd's JSON gateway at ip:port; it
// returns the status and (the start of) the body, or the error.
func etcdPost(scheme, ip string, port int, path, body string, cfg *tls.Config) (int, string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(ip, fmt.Sprint(port)), path)
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16384))
	return resp.StatusCode, string(b), nil
}

// etcdTLS checks etcd's certificate against roots and serverName and
// presents cert, if any, whoever signed it (Go's client would otherwise
// leave out a certificate of a CA the server does not name).
func etcdTLS(roots *x509.CertPool, serverName string, cert *tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg
}

// unreached says whether err means nothing answered at the address: a
// refusal must come from etcd itself (a TLS alert, a closed connection),
// not from a port nobody listens on.
func unreached(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout()
}

// signedClientCert makes a client certificate signed by the CA in caPEM
// and keyPEM.
func signedClientCert(t *testing.T, caPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	caBlock, _ := pem.Decode(caPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if caBlock == nil || keyBlock == nil {
		t.Fatal("the API server's CA or its key is not PEM")
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := parsePrivateKey(keyBlock)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "lifeboat-e2e-not-etcds"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// parsePrivateKey reads a PKCS #1, PKCS #8 or EC private key.
func parsePrivateKey(b *pem.Block) (any, error) {
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("a %s block that is no private key Go reads", b.Type)
}

// etcdOfHost is the suite's etcd as the API server reaches it.
type etcdOfHost struct {
	ip, serverName  string
	ca              *x509.CertPool
	apiserverClient tls.Certificate
	secret          func(name, key string) []byte
}

// hostEtcd finds the suite's first etcd member and the API server's
// credentials for it.
func hostEtcd(t *testing.T, ctx context.Context) etcdOfHost {
	t.Helper()
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	pods := hostPods(t, ctx, "etcd")
	if len(pods) == 0 || pods[0].Status.PodIP == "" {
		t.Fatalf("no etcd pod with an address: %+v", pods)
	}
	e := etcdOfHost{ip: pods[0].Status.PodIP, serverName: fmt.Sprintf("%s.%s-etcd.%s.svc", pods[0].Name, hostRelease, hostNamespace)}
	e.secret = func(name, key string) []byte {
		t.Helper()
		v, err := chartSecret(ctx, cs, name, key)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	etcdPKI := hostRelease + "-etcd-pki"
	e.ca = x509.NewCertPool()
	if !e.ca.AppendCertsFromPEM(e.secret(etcdPKI, "ca.crt")) {
		t.Fatalf("%s/ca.crt holds no certificate", etcdPKI)
	}
	cert, err := tls.X509KeyPair(e.secret(etcdPKI, "client.crt"), e.secret(etcdPKI, "client.key"))
	if err != nil {
		t.Fatalf("the API server's etcd client certificate: %v", err)
	}
	e.apiserverClient = cert
	return e
}

// TestHostSecretsEncryptedInEtcd: a Secret written through the Lifeboat API
// server is stored in etcd encrypted with the chart's key (secretbox), its
// value nowhere in what etcd holds, and reads back through the API server;
// the Work that carries it to a member is stored encrypted too; a ConfigMap
// is stored as it is.
func TestHostSecretsEncryptedInEtcd(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	e := hostEtcd(t, ctx)
	cp := clientFor(t, controlPlaneConfig(t))
	ns := newNamespace(t, "host-encrypted")
	const marker = "lifeboat-e2e-plain-value"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, StringData: map[string]string{"password": marker}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"value": marker}}
	for _, obj := range []client.Object{secret, cm} {
		if err := cp.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(key string) []byte {
		t.Helper()
		body := fmt.Sprintf(`{"key":%q}`, base64.StdEncoding.EncodeToString([]byte(key)))
		code, out, err := etcdPost("https", e.ip, 2379, "/v3/kv/range", body, etcdTLS(e.ca, e.serverName, &e.apiserverClient))
		if err != nil || code != http.StatusOK {
			t.Fatalf("reading %s from etcd: status %d, error %v: %s", key, code, err, out)
		}
		var r struct {
			Kvs []struct {
				Value []byte `json:"value"`
			} `json:"kvs"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Kvs) != 1 {
			t.Fatalf("reading %s from etcd: %v, %d values: %s", key, err, len(r.Kvs), out)
		}
		return r.Kvs[0].Value
	}
	if got := stored("/registry/secrets/" + ns + "/db"); !bytes.HasPrefix(got, []byte("k8s:enc:secretbox:v1:key1:")) || bytes.Contains(got, []byte(marker)) {
		t.Errorf("the Secret is stored as %q..., want it encrypted with secretbox key1 and its value nowhere in it", got[:min(len(got), 40)])
	}
	if got := stored("/registry/configmaps/" + ns + "/settings"); !bytes.Contains(got, []byte(marker)) {
		t.Errorf("the ConfigMap is stored as %q..., want it as it is", got[:min(len(got), 40)])
	}
	var back corev1.Secret
	if err := cp.Get(ctx, client.ObjectKeyFromObject(secret), &back); err != nil || string(back.Data["password"]) != marker {
		t.Errorf("reading the Secret back through the API server: %v, %q", err, back.Data["password"])
	}

	// Propagated, the Secret is in its Work's manifests: the Work is
	// stored encrypted too.
	applyYAML(t, ns, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: db}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Secret, name: db}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
`)
	var work string
	eventually(t, time.Minute, "the Secret's Work", func(ctx context.Context) (bool, string, error) {
		var works workv1alpha1.WorkList
		if err := cp.List(ctx, &works); err != nil {
			return false, "", err
		}
		for _, w := range works.Items {
			if w.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] == ns && w.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey] == "db-secret" {
				work = "/registry/work.karmada.io/works/" + w.Namespace + "/" + w.Name
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("none of %d Works is the Secret's", len(works.Items)), nil
	})
	if got := stored(work); !bytes.HasPrefix(got, []byte("k8s:enc:secretbox:v1:key1:")) {
		t.Errorf("the Secret's Work is stored as %q..., want it encrypted with secretbox key1", got[:min(len(got), 40)])
	}
}

// TestHostEtcdMembersTalkTLS: the chart's three-member etcd (etcd.replicas=3)
// forms its quorum with TLS between the members, each checking the others'
// certificates: its StatefulSet, Service and certificates, rendered by the
// chart for a release of their own, become Ready in the host cluster; the
// member list records https:// peer and client URLs; and a write, which
// needs the quorum, succeeds.
func TestHostEtcdMembersTalkTLS(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	const release, ns = "ha", "lifeboat-etcd-ha"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	args := []string{"template", release, chartDir(), "--namespace", ns, "--kube-version", components.KubernetesVersion, "--set", "etcd.replicas=3",
		"--show-only", "templates/etcd.yaml", "--show-only", "templates/secrets.yaml"}
	args = append(args, hostValues(host.imageRef)...)
	rendered, err := helmCmd(ctx, host.env, host.helm, args...)
	if err != nil {
		t.Fatal(err)
	}
	// etcd's own objects: its Service, StatefulSet and certificates (the
	// rest of secrets.yaml is the API server's, not needed here).
	var keep []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		if strings.Contains(doc, "app.kubernetes.io/component: etcd") {
			keep = append(keep, doc)
		}
	}
	f := filepath.Join(t.TempDir(), "etcd.yaml")
	if err := os.WriteFile(f, []byte(strings.Join(keep, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, host.env.KubeconfigPath(), "--context", localenv.HostClusterName, "-n", ns, "apply", "-f", f)

	sts := release + "-lifeboat-etcd"
	eventually(t, 4*time.Minute, "three etcd members Ready", func(ctx context.Context) (bool, string, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, sts, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return s.Status.ReadyReplicas == 3, fmt.Sprintf("%d of 3 Ready", s.Status.ReadyReplicas), nil
	})

	secret, err := cs.CoreV1().Secrets(ns).Get(ctx, release+"-lifeboat-etcd-pki", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(secret.Data["ca.crt"])
	cert, err := tls.X509KeyPair(secret.Data["client.crt"], secret.Data["client.key"])
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, sts+"-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := etcdTLS(roots, fmt.Sprintf("%s-1.%s.%s.svc", sts, sts, ns), &cert)
	code, body, err := etcdPost("https", pod.Status.PodIP, 2379, "/v3/cluster/member/list", "{}", cfg)
	if err != nil || code != 200 {
		t.Fatalf("member list: status %d, error %v: %s", code, err, body)
	}
	var list struct {
		Members []struct {
			Name       string   `json:"name"`
			PeerURLs   []string `json:"peerURLs"`
			ClientURLs []string `json:"clientURLs"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("member list %q: %v", body, err)
	}
	if len(list.Members) != 3 {
		t.Errorf("%d members, want 3: %s", len(list.Members), body)
	}
	for _, m := range list.Members {
		for _, u := range append(append([]string(nil), m.PeerURLs...), m.ClientURLs...) {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s has URL %s, want https://", m.Name, u)
			}
		}
	}
	// A write is committed by the quorum: the members reach each other.
	put := `{"key":"bGlmZWJvYXQtZTJl","value":"dGxz"}`
	code, body, err = etcdPost("https", pod.Status.PodIP, 2379, "/v3/kv/put", put, cfg)
	if err != nil || code != 200 {
		t.Fatalf("a write through member 1: status %d, error %v: %s", code, err, body)
	}
	t.Logf("three members, TLS between them; a write through member 1 answered: %s", body)
}
