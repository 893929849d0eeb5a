package metricsauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// reviewingAPIServer answers TokenReviews for token as user and allows
// that user to get /metrics; it counts the reviews it was asked.
func reviewingAPIServer(t *testing.T, token, user string, reviews *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reviews.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			_ = json.NewDecoder(r.Body).Decode(&tr)
			if tr.Spec.Token == token {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
			}
			_ = json.NewEncoder(w).Encode(&tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			_ = json.NewDecoder(r.Body).Decode(&sar)
			nr := sar.Spec.NonResourceAttributes
			sar.Status.Allowed = sar.Spec.User == user && nr != nil && nr.Path == "/metrics" && nr.Verb == "get"
			_ = json.NewEncoder(w).Encode(&sar)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// With ReviewAt, a token is reviewed by that API server, not by the one the
// manager is given (a Pull agent's scraper holds a token of its member, not
// of the control plane); without it, by the manager's.
func TestServerOptionsReviewWhereTold(t *testing.T) {
	var atMember, atManager atomic.Int32
	member := reviewingAPIServer(t, "member-token", "scraper", &atMember)
	manager := reviewingAPIServer(t, "control-plane-token", "scraper", &atManager)
	scrape := func(t *testing.T, s Serving, token string) int {
		t.Helper()
		m, err := ServerOptions(s)
		if err != nil {
			t.Fatal(err)
		}
		if !m.SecureServing || m.FilterProvider == nil {
			t.Fatalf("secure serving %t, filter %t; want both", m.SecureServing, m.FilterProvider != nil)
		}
		filter, err := m.FilterProvider(&rest.Config{Host: manager.URL}, manager.Client())
		if err != nil {
			t.Fatal(err)
		}
		h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}

	atMember.Store(0)
	atManager.Store(0)
	agent := Serving{Secure: true, ReviewAt: &rest.Config{Host: member.URL}}
	if code := scrape(t, agent, "member-token"); code != http.StatusOK {
		t.Errorf("a member token with ReviewAt the member: %d, want 200", code)
	}
	if code := scrape(t, agent, "control-plane-token"); code != http.StatusUnauthorized {
		t.Errorf("a control-plane token with ReviewAt the member: %d, want 401", code)
	}
	if atMember.Load() == 0 || atManager.Load() != 0 {
		t.Errorf("reviews: %d by the member, %d by the manager's API server; want them all by the member", atMember.Load(), atManager.Load())
	}

	atMember.Store(0)
	atManager.Store(0)
	if code := scrape(t, Serving{Secure: true}, "control-plane-token"); code != http.StatusOK {
		t.Errorf("a control-plane token without ReviewAt: %d, want 200", code)
	}
	if atManager.Load() == 0 || atMember.Load() != 0 {
		t.Errorf("reviews: %d by the member, %d by the manager's API server; want them all by the manager's", atMember.Load(), atManager.Load())
	}
}

// A certificate directory without serving securely is refused, naming the
// flags given.
func TestServerOptionsRefuseACertDirWithoutSecure(t *testing.T) {
	_, err := ServerOptions(Serving{CertDir: t.TempDir(), SecureFlag: "--metrics-secure", CertDirFlag: "--metrics-cert-dir"})
	if err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir needs --metrics-secure") {
		t.Errorf("got %v, want a refusal naming both flags", err)
	}
}
