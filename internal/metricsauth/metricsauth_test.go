package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// reviewer knows tokens by user and which users may get which paths.
type reviewer struct {
	users   map[string]string // token → user
	allowed map[string]bool   // "user verb path"
	fail    error

	authentications, authorizations int
}

func (r *reviewer) Authenticate(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	r.authentications++
	if r.fail != nil {
		return authenticationv1.UserInfo{}, false, r.fail
	}
	u, ok := r.users[token]
	return authenticationv1.UserInfo{Username: u}, ok, nil
}

func (r *reviewer) Authorize(_ context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	r.authorizations++
	return r.allowed[user.Username+" "+verb+" "+path], "no rule", nil
}

func (r *reviewer) reviews() int { return r.authentications + r.authorizations }

type fixture struct {
	t      *testing.T
	r      *reviewer
	clock  *clocktesting.FakeClock
	guard  *Guard
	served int
	h      http.Handler
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	f.r = &reviewer{
		users:   map[string]string{"reader-token": "reader", "stranger-token": "stranger"},
		allowed: map[string]bool{"reader get /metrics": true},
	}
	f.guard = New(f.r, f.clock)
	h, err := f.guard.Filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f.served++
		_, _ = fmt.Fprint(w, "metrics")
	}))
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// get requests path with an Authorization header ("" for none) and returns
// the status code.
func (f *fixture) get(path, authorization string) int {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return w.Code
}

func TestDecisions(t *testing.T) {
	cases := []struct {
		name, path, authorization string
		want, wantReviews         int
	}{
		{"no header", "/metrics", "", http.StatusUnauthorized, 0},
		{"another scheme", "/metrics", "Basic cmVhZGVyOnB3", http.StatusUnauthorized, 0},
		{"an empty token", "/metrics", "Bearer  ", http.StatusUnauthorized, 0},
		{"a token the API server does not accept", "/metrics", "Bearer forged", http.StatusUnauthorized, 1},
		{"a user without the right", "/metrics", "Bearer stranger-token", http.StatusForbidden, 2},
		{"a user with the right", "/metrics", "Bearer reader-token", http.StatusOK, 2},
		{"the scheme in any case", "/metrics", "bearer reader-token", http.StatusOK, 2},
		{"the right to /metrics is not the right to another path", "/debug/pprof/", "Bearer reader-token", http.StatusForbidden, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if got := f.get(tc.path, tc.authorization); got != tc.want {
				t.Errorf("code %d, want %d", got, tc.want)
			}
			if f.r.reviews() != tc.wantReviews {
				t.Errorf("%d reviews, want %d", f.r.reviews(), tc.wantReviews)
			}
			if served := f.served > 0; served != (tc.want == http.StatusOK) {
				t.Errorf("handler served: %v, want %v", served, tc.want == http.StatusOK)
			}
		})
	}
}

func TestAnAllowedRequestIsRememberedForAllowTTL(t *testing.T) {
	f := newFixture(t)
	f.get("/metrics", "Bearer reader-token")
	reviews := f.r.reviews()

	f.clock.Step(AllowTTL - time.Second)
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusOK {
		t.Fatalf("code %d", got)
	}
	if f.r.reviews() != reviews {
		t.Errorf("reviewed again within AllowTTL: %d reviews, want %d", f.r.reviews(), reviews)
	}

	// A revoked right is seen once the decision expires.
	f.r.allowed = map[string]bool{}
	f.clock.Step(2 * time.Second)
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusForbidden {
		t.Errorf("after AllowTTL with the right revoked: code %d, want 403", got)
	}
}

func TestARefusalIsRememberedOnlyForDenyTTL(t *testing.T) {
	f := newFixture(t)
	f.get("/metrics", "Bearer stranger-token")
	reviews := f.r.reviews()
	f.get("/metrics", "Bearer stranger-token")
	if f.r.reviews() != reviews {
		t.Errorf("a refusal was reviewed again at once")
	}

	f.r.allowed["stranger get /metrics"] = true
	f.clock.Step(DenyTTL)
	if got := f.get("/metrics", "Bearer stranger-token"); got != http.StatusOK {
		t.Errorf("a right granted is not seen after DenyTTL: code %d", got)
	}
}

func TestAFailedReviewServesNothingAndIsNotRemembered(t *testing.T) {
	f := newFixture(t)
	f.r.fail = errors.New("connection refused")
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusInternalServerError {
		t.Fatalf("code %d, want 500", got)
	}
	if f.served != 0 {
		t.Fatal("served without a review")
	}

	f.r.fail = nil
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusOK {
		t.Errorf("after the API server answers again: code %d, want 200", got)
	}
}

func TestRememberedDecisionsAreBounded(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 3*maxRemembered; i++ {
		f.get("/metrics", fmt.Sprintf("Bearer token-%d", i))
	}
	if n := len(f.guard.remembered); n > maxRemembered {
		t.Errorf("%d decisions remembered, want at most %d", n, maxRemembered)
	}
	// The allowed user is still served after the churn.
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusOK {
		t.Errorf("code %d", got)
	}
}
