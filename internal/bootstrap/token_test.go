package bootstrap

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

func TestNewTokenFormat(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)
	seen := map[string]bool{}
	for range 20 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if !re.MatchString(tok.String()) {
			t.Fatalf("token %q is not ID.SECRET", tok)
		}
		if seen[tok.ID] {
			t.Fatalf("ID %s drawn twice", tok.ID)
		}
		seen[tok.ID] = true
	}
}

func TestParseToken(t *testing.T) {
	cases := map[string]bool{
		"abcdef.0123456789abcdef":  true,
		"abcdef.0123456789ABCDEF":  false,
		"abcdef:0123456789abcdef":  false,
		"abcde.0123456789abcdef":   false,
		"abcdef.0123456789abcde":   false,
		"abcdef.0123456789abcdef.": false,
		"":                         false,
	}
	for in, ok := range cases {
		t.Run(in, func(t *testing.T) {
			tok, err := ParseToken(in)
			if ok != (err == nil) {
				t.Fatalf("ParseToken(%q) = %v, want ok %v", in, err, ok)
			}
			if err != nil {
				if !errors.Is(err, ErrMalformedToken) {
					t.Errorf("error %v is not ErrMalformedToken", err)
				}
				if len(in) > 7 && strings.Contains(err.Error(), in[7:]) {
					t.Errorf("error %q repeats the secret", err)
				}
				return
			}
			if tok.ID != "abcdef" || tok.Secret != "0123456789abcdef" {
				t.Errorf("parsed %+v", tok)
			}
		})
	}
}

func TestTokenSecret(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	s, err := TokenSecret(tok, "member1", 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "bootstrap-token-abcdef" || s.Namespace != "kube-system" || s.Type != corev1.SecretType("bootstrap.kubernetes.io/token") {
		t.Errorf("Secret %s/%s of type %s", s.Namespace, s.Name, s.Type)
	}
	want := map[string]string{
		"token-id":                       "abcdef",
		"token-secret":                   "0123456789abcdef",
		"expiration":                     "2026-03-02T11:00:00Z",
		"usage-bootstrap-authentication": "true",
		"auth-extra-groups":              "system:bootstrappers:lifeboat,system:bootstrappers:lifeboat:cluster:member1",
	}
	for k, v := range want {
		if s.StringData[k] != v {
			t.Errorf("%s = %q, want %q", k, s.StringData[k], v)
		}
	}
	if _, ok := s.StringData[bootstrapapi.BootstrapTokenUsageSigningKey]; ok {
		t.Error("the token may sign the cluster-info ConfigMap; it is for authentication only")
	}
	if !strings.Contains(s.StringData["description"], "member1") {
		t.Errorf("description %q does not name the cluster", s.StringData["description"])
	}
	if s.Labels[LabelManagedBy] != "lifeboat" || s.Labels[LabelAgentCluster] != "member1" {
		t.Errorf("labels %v", s.Labels)
	}
	info, ok := TokenInfoFromSecret(s)
	if !ok || info.ID != "abcdef" || info.Cluster != "member1" || !info.Expires.Equal(now.Add(24*time.Hour)) {
		t.Errorf("TokenInfoFromSecret = %+v, %v", info, ok)
	}
	if info.Expired(now.Add(24*time.Hour-time.Second)) || !info.Expired(now.Add(24*time.Hour)) {
		t.Error("Expired is wrong around the expiration")
	}
}

func TestTokenSecretRefuses(t *testing.T) {
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	cases := map[string]struct {
		cluster string
		ttl     time.Duration
		tok     Token
		want    string
	}{
		"a token that never expires": {cluster: "member1", ttl: 0, tok: tok, want: "must expire"},
		"a negative lifetime":        {cluster: "member1", ttl: -time.Hour, tok: tok, want: "must expire"},
		"a nanosecond":               {cluster: "member1", ttl: time.Nanosecond, tok: tok, want: "shorter than 1s, so expired when made"},
		"999 milliseconds":           {cluster: "member1", ttl: 999 * time.Millisecond, tok: tok, want: "shorter than 1s"},
		"upper case":                 {cluster: "Member1", ttl: time.Hour, tok: tok, want: "karmada-es-Member1"},
		"a dot":                      {cluster: "member.1", ttl: time.Hour, tok: tok, want: "invalid cluster name"},
		"empty":                      {cluster: "", ttl: time.Hour, tok: tok, want: "empty"},
		"too long":                   {cluster: strings.Repeat("a", 49), ttl: time.Hour, tok: tok, want: "longer than 48"},
		"a malformed token":          {cluster: "member1", ttl: time.Hour, tok: Token{ID: "ABCDEF", Secret: "x"}, want: "malformed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := TokenSecret(tc.tok, tc.cluster, tc.ttl, time.Now())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestTokenInfoFromSecretIgnoresOthers(t *testing.T) {
	ours, err := TokenSecret(Token{ID: "abcdef", Secret: "0123456789abcdef"}, "member1", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// As the server returns it: Data, not StringData.
	stored := ours.DeepCopy()
	stored.Data = map[string][]byte{}
	for k, v := range stored.StringData {
		stored.Data[k] = []byte(v)
	}
	stored.StringData = nil
	if info, ok := TokenInfoFromSecret(stored); !ok || info.ID != "abcdef" || info.Cluster != "member1" {
		t.Errorf("stored Secret read as %+v, %v", info, ok)
	}
	kubeadm := stored.DeepCopy()
	kubeadm.Labels = nil
	opaque := stored.DeepCopy()
	opaque.Type = corev1.SecretTypeOpaque
	renamed := stored.DeepCopy()
	renamed.Name = "bootstrap-token-zzzzzz"
	for name, s := range map[string]*corev1.Secret{"kubeadm's token": kubeadm, "an Opaque Secret": opaque, "a name that is not its ID": renamed} {
		if _, ok := TokenInfoFromSecret(s); ok {
			t.Errorf("%s read as a Lifeboat token", name)
		}
	}
}
