// Package metricsauth guards the controller manager's and the Pull agent's
// metrics endpoints the way a Kubernetes component guards its secure port:
// the request's bearer token is checked by an API server (TokenReview: the
// control plane's for the controller manager, the member's for an agent),
// and the user it names must be allowed the request's verb on its path
// (SubjectAccessReview, a non-resource URL such as get /metrics).
//
// Decisions are remembered for a short while per token, verb and path, so
// that a scraper polling every few seconds costs the API server two reviews
// a minute, not two per scrape. A review that fails (the API server does not
// answer) is not remembered and the request is answered 500: nothing is
// served that was not checked.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// AllowTTL is how long a request that was let through is remembered.
	AllowTTL = time.Minute
	// DenyTTL is how long a refusal (401 or 403) is remembered: short, so
	// that a permission just granted takes effect soon.
	DenyTTL = 10 * time.Second
	// ReviewTimeout bounds each review.
	ReviewTimeout = 10 * time.Second
	// maxRemembered bounds the decisions kept; past it the expired ones
	// are dropped, and if none has expired, all of them.
	maxRemembered = 256
)

// Reviewer asks the API server about tokens and permissions.
type Reviewer interface {
	// Authenticate returns the user a token belongs to; ok is false when
	// the API server does not accept the token.
	Authenticate(ctx context.Context, token string) (user authenticationv1.UserInfo, ok bool, err error)
	// Authorize says whether user may use verb on the non-resource path.
	Authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (allowed bool, reason string, err error)
}

// Provider is a metricsserver.Options.FilterProvider that reviews with the
// API server of cfg.
func Provider(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	// Reviews are small; JSON is what every API server and proxy speaks.
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the TokenReview client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the SubjectAccessReview client: %w", err)
	}
	g := New(apiReviewer{authn: authn.TokenReviews(), authz: authz.SubjectAccessReviews()}, clock.RealClock{})
	return g.Filter, nil
}

// Guard decides who may reach the handlers it wraps. Use New.
type Guard struct {
	reviewer Reviewer
	clock    clock.PassiveClock

	mu         sync.Mutex
	remembered map[decisionKey]decision
}

type decisionKey struct {
	token      [sha256.Size]byte
	verb, path string
}

type decision struct {
	code    int // http.StatusOK to serve
	message string
	expires time.Time
}

// New returns a Guard that asks reviewer, with c's time for how long
// decisions are remembered.
func New(reviewer Reviewer, c clock.PassiveClock) *Guard {
	return &Guard{reviewer: reviewer, clock: c, remembered: map[decisionKey]decision{}}
}

// Filter is a metricsserver.Filter: it wraps handler with the checks.
func (g *Guard) Filter(log logr.Logger, handler http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		d, err := g.decide(req.Context(), token, strings.ToLower(req.Method), req.URL.Path)
		if err != nil {
			log.Error(err, "reviewing a metrics request", "path", req.URL.Path)
			http.Error(w, "the request could not be checked with the API server", http.StatusInternalServerError)
			return
		}
		if d.code != http.StatusOK {
			log.V(4).Info("metrics request refused", "path", req.URL.Path, "code", d.code, "reason", d.message)
			http.Error(w, d.message, d.code)
			return
		}
		handler.ServeHTTP(w, req)
	}), nil
}

// decide returns the remembered decision for token on verb and path, or
// reviews it.
func (g *Guard) decide(ctx context.Context, token, verb, path string) (decision, error) {
	key := decisionKey{token: sha256.Sum256([]byte(token)), verb: verb, path: path}
	now := g.clock.Now()
	g.mu.Lock()
	d, ok := g.remembered[key]
	g.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d, nil
	}
	d, err := g.review(ctx, token, verb, path)
	if err != nil {
		return decision{}, err
	}
	ttl := DenyTTL
	if d.code == http.StatusOK {
		ttl = AllowTTL
	}
	d.expires = now.Add(ttl)
	g.remember(key, d, now)
	return d, nil
}

func (g *Guard) review(ctx context.Context, token, verb, path string) (decision, error) {
	ctx, cancel := context.WithTimeout(ctx, ReviewTimeout)
	defer cancel()
	user, ok, err := g.reviewer.Authenticate(ctx, token)
	if err != nil {
		return decision{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !ok {
		return decision{code: http.StatusUnauthorized, message: "Unauthorized: the API server does not accept the token"}, nil
	}
	allowed, reason, err := g.reviewer.Authorize(ctx, user, verb, path)
	if err != nil {
		return decision{}, fmt.Errorf("SubjectAccessReview for %s: %w", user.Username, err)
	}
	if !allowed {
		msg := fmt.Sprintf("Forbidden: user %s may not %s %s", user.Username, verb, path)
		if reason != "" {
			msg += ": " + reason
		}
		return decision{code: http.StatusForbidden, message: msg}, nil
	}
	return decision{code: http.StatusOK}, nil
}

func (g *Guard) remember(key decisionKey, d decision, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.remembered) >= maxRemembered {
		for k, old := range g.remembered {
			if !now.Before(old.expires) {
				delete(g.remembered, k)
			}
		}
		if len(g.remembered) >= maxRemembered {
			clear(g.remembered)
		}
	}
	g.remembered[key] = d
}

// bearerToken is the token of an "Authorization: Bearer" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// apiReviewer reviews with the API server.
type apiReviewer struct {
	authn authenticationclient.TokenReviewInterface
	authz authorizationclient.SubjectAccessReviewInterface
}

func (a apiReviewer) Authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	tr, err := a.authn.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, err
	}
	return tr.Status.User, tr.Status.Authenticated, nil
}

func (a apiReviewer) Authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.authz.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		Groups:                user.Groups,
		UID:                   user.UID,
		Extra:                 extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	return sar.Status.Allowed && !sar.Status.Denied, sar.Status.Reason, nil
}
