package bootstrap

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

// TokenNamespace is where the API server's bootstrap token authenticator
// reads token Secrets.
const TokenNamespace = metav1.NamespaceSystem

// DefaultTokenTTL is how long a token lives unless told otherwise.
const DefaultTokenTTL = 24 * time.Hour

// ErrMalformedToken is returned for a token that cannot be a bootstrap
// token; nothing is sent anywhere then.
var ErrMalformedToken = errors.New("malformed bootstrap token")

// Token is a bootstrap token: the ID is public (it names the Secret), the
// secret is the password.
type Token struct {
	ID, Secret string
}

// String is the token as the API server takes it: ID.SECRET.
func (t Token) String() string { return bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret) }

// NewToken returns a random token: 6 and 16 characters of [a-z0-9].
func NewToken() (Token, error) {
	s, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return Token{}, fmt.Errorf("generating a bootstrap token: %w", err)
	}
	return ParseToken(s)
}

// ParseToken parses ID.SECRET. Its error never repeats the secret.
func ParseToken(s string) (Token, error) {
	if !bootstraputil.IsValidBootstrapToken(s) {
		return Token{}, fmt.Errorf("%w: want ID.SECRET, 6 and 16 characters of a-z and 0-9, as `lifeboat token create` prints it", ErrMalformedToken)
	}
	id, secret, _ := strings.Cut(s, ".")
	return Token{ID: id, Secret: secret}, nil
}

// ValidateTokenID checks the ID of a token (the part before the dot).
func ValidateTokenID(id string) error {
	if !bootstraputil.IsValidBootstrapTokenID(id) {
		return fmt.Errorf("%q is not a bootstrap token ID: want 6 characters of a-z and 0-9 (the part of the token before the dot)", id)
	}
	return nil
}

// TokenSecretName is the name of the Secret of the token with that ID.
func TokenSecretName(id string) string { return bootstraputil.BootstrapTokenSecretName(id) }

// ValidateTokenRequest checks what `lifeboat token create` was given: a
// cluster name that can name an execution namespace, and a token that
// expires.
func ValidateTokenRequest(clusterName string, ttl time.Duration) error {
	if err := cluster.ValidateClusterName(clusterName); err != nil {
		return fmt.Errorf("%w (the execution namespace %s must be a valid namespace name)", err, cluster.ExecutionNamespace(clusterName))
	}
	if ttl <= 0 {
		return fmt.Errorf("token lifetime %s: a bootstrap token must expire; give a positive --ttl such as 1h or 24h", ttl)
	}
	if ttl < MinTokenTTL {
		return fmt.Errorf("token lifetime %s: shorter than %s, so expired when made (the token's expiry has whole seconds); give a --ttl such as 1h or 24h", ttl, MinTokenTTL)
	}
	return nil
}

// MinTokenTTL is the shortest lifetime of a bootstrap token: its expiry is
// written in whole seconds.
const MinTokenTTL = time.Second

// ValidateServerURL checks a control plane URL as lifeboat register needs
// it: https://HOST[:PORT].
func ValidateServerURL(s string) error {
	_, err := parseServerURL(s)
	return err
}

// TokenSecret builds the bootstrap token Secret of tok for clusterName,
// expiring ttl after now. The API server authenticates the token as
// system:bootstrap:ID in the groups system:bootstrappers,
// BootstrappersGroup and ClusterBootstrappersGroup(clusterName).
func TokenSecret(tok Token, clusterName string, ttl time.Duration, now time.Time) (*corev1.Secret, error) {
	if err := ValidateTokenRequest(clusterName, ttl); err != nil {
		return nil, err
	}
	if _, err := ParseToken(tok.String()); err != nil {
		return nil, err
	}
	groups := []string{BootstrappersGroup, ClusterBootstrappersGroup(clusterName)}
	for _, g := range groups {
		if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", clusterName, err)
		}
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      TokenSecretName(tok.ID),
			Namespace: TokenNamespace,
			Labels:    labels(clusterName),
		},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               tok.ID,
			bootstrapapi.BootstrapTokenSecretKey:           tok.Secret,
			bootstrapapi.BootstrapTokenExpirationKey:       now.Add(ttl).UTC().Format(time.RFC3339),
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      strings.Join(groups, ","),
			bootstrapapi.BootstrapTokenDescriptionKey:      fmt.Sprintf("Bootstrap token of the Lifeboat agent of cluster %s (lifeboat token create)", clusterName),
		},
	}, nil
}

// TokenInfo is what `lifeboat token list` shows of a token; never its
// secret.
type TokenInfo struct {
	ID      string
	Cluster string
	// Expires is the zero time when the Secret has no valid expiration.
	Expires     time.Time
	Description string
}

// Expired says whether the API server no longer accepts the token at now.
func (t TokenInfo) Expired(now time.Time) bool {
	return !t.Expires.IsZero() && !now.Before(t.Expires)
}

// TokenInfoFromSecret reads a Lifeboat bootstrap token Secret; ok is false
// for any other Secret. It works on Secrets read back from the server (Data)
// as on ones built by TokenSecret (StringData).
func TokenInfoFromSecret(s *corev1.Secret) (info TokenInfo, ok bool) {
	if s.Type != bootstrapapi.SecretTypeBootstrapToken || s.Namespace != TokenNamespace || s.Labels[LabelManagedBy] != ManagedByValue {
		return TokenInfo{}, false
	}
	get := func(key string) string {
		if v, ok := s.StringData[key]; ok {
			return v
		}
		return bootstrapsecrets.GetData(s, key)
	}
	id, ok := bootstrapsecrets.ParseName(s.Name)
	if !ok || get(bootstrapapi.BootstrapTokenIDKey) != id {
		return TokenInfo{}, false
	}
	info = TokenInfo{ID: id, Cluster: s.Labels[LabelAgentCluster], Description: get(bootstrapapi.BootstrapTokenDescriptionKey)}
	if exp, err := time.Parse(time.RFC3339, get(bootstrapapi.BootstrapTokenExpirationKey)); err == nil {
		info.Expires = exp
	}
	return info, true
}
