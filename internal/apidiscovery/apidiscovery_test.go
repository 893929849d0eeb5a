package apidiscovery

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// server answers /api and /apis as a Kubernetes API server does with
// aggregated discovery: an ETag on every answer, 304 to a matching
// If-None-Match. It counts the documents it sent in full.
type server struct {
	mu     sync.Mutex
	docs   map[string]apidiscoveryv2.APIGroupDiscoveryList
	noETag bool
	// afterSend runs (locked) after a document was sent in full.
	afterSend func(path string)
	sent      int
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := json.Marshal(doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !s.noETag {
		tag := fmt.Sprintf("%q", fmt.Sprintf("%X", sha256.Sum256(body)))
		w.Header().Set("ETag", tag)
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", discovery.AcceptV2)
	_, _ = w.Write(body)
	s.sent++
	if s.afterSend != nil {
		s.afterSend(r.URL.Path)
	}
}

func (s *server) fullAnswers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func (s *server) setApps(resources ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs["/apis"] = groups("apps", resources...)
}

func groups(name string, resources ...string) apidiscoveryv2.APIGroupDiscoveryList {
	version := apidiscoveryv2.APIVersionDiscovery{Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	for _, r := range resources {
		version.Resources = append(version.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource:         r,
			ResponseKind:     &metav1.GroupVersionKind{Group: name, Version: "v1", Kind: r},
			Scope:            apidiscoveryv2.ScopeNamespace,
			Verbs:            []string{"get", "list", "watch"},
			SingularResource: r,
		})
	}
	return apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
		Items: []apidiscoveryv2.APIGroupDiscovery{{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Versions:   []apidiscoveryv2.APIVersionDiscovery{version},
		}},
	}
}

func newServer(t *testing.T) (*server, *Lister) {
	t.Helper()
	s := &server{docs: map[string]apidiscoveryv2.APIGroupDiscoveryList{
		"/api":  groups("", "pods", "configmaps"),
		"/apis": groups("apps", "deployments"),
	}}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	l, err := NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

// served flattens lists into "group/version resource" strings.
func served(lists []*metav1.APIResourceList) []string {
	var out []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			out = append(out, l.GroupVersion+" "+r.Name)
		}
	}
	slices.Sort(out)
	return out
}

func list(t *testing.T, l *Lister) []string {
	t.Helper()
	lists, err := l.ServerResources(context.Background())
	if err != nil {
		t.Fatalf("ServerResources: %v", err)
	}
	return served(lists)
}

func TestUnchangedDocumentsAreNotReadAgain(t *testing.T) {
	s, l := newServer(t)
	want := []string{"apps/v1 deployments", "v1 configmaps", "v1 pods"}
	if got := list(t, l); !slices.Equal(got, want) {
		t.Fatalf("first round: got %v, want %v", got, want)
	}
	first := s.fullAnswers()
	for round := 2; round <= 4; round++ {
		if got := list(t, l); !slices.Equal(got, want) {
			t.Fatalf("round %d: got %v, want %v", round, got, want)
		}
	}
	if n := s.fullAnswers() - first; n != 0 {
		t.Errorf("three rounds with nothing changed sent %d documents in full, want 0", n)
	}
}

func TestAChangedDocumentIsReadInFull(t *testing.T) {
	s, l := newServer(t)
	list(t, l)
	s.setApps("deployments", "statefulsets")
	want := []string{"apps/v1 deployments", "apps/v1 statefulsets", "v1 configmaps", "v1 pods"}
	if got := list(t, l); !slices.Equal(got, want) {
		t.Fatalf("after the change: got %v, want %v", got, want)
	}
	before := s.fullAnswers()
	if got := list(t, l); !slices.Equal(got, want) {
		t.Fatalf("next round: got %v, want %v", got, want)
	}
	if n := s.fullAnswers() - before; n != 0 {
		t.Errorf("the round after the change sent %d documents in full, want 0", n)
	}
}

// A change between the check and the full read must not be hidden by the
// ETag the check saw: the next round reads again.
func TestAChangeDuringTheReadIsSeenNextRound(t *testing.T) {
	s, l := newServer(t)
	list(t, l)
	s.setApps("deployments", "replicasets")
	changed := false
	s.mu.Lock()
	s.afterSend = func(path string) {
		// The check's answer for /apis is the first full one after the
		// change; change the document again before the full read.
		if path == "/apis" && !changed {
			changed = true
			s.docs["/apis"] = groups("apps", "deployments", "replicasets", "daemonsets")
		}
	}
	s.mu.Unlock()
	list(t, l)
	want := []string{"apps/v1 daemonsets", "apps/v1 deployments", "apps/v1 replicasets", "v1 configmaps", "v1 pods"}
	if got := list(t, l); !slices.Equal(got, want) {
		t.Fatalf("the round after: got %v, want %v", got, want)
	}
}

func TestWithoutETagsEveryRoundReadsInFull(t *testing.T) {
	s, l := newServer(t)
	s.noETag = true
	list(t, l)
	s.setApps("deployments", "statefulsets")
	before := s.fullAnswers()
	want := []string{"apps/v1 deployments", "apps/v1 statefulsets", "v1 configmaps", "v1 pods"}
	if got := list(t, l); !slices.Equal(got, want) {
		t.Fatalf("after the change: got %v, want %v", got, want)
	}
	if n := s.fullAnswers() - before; n < 2 {
		t.Errorf("a round without ETags sent %d documents in full, want both read", n)
	}
}

// A partial answer (a group the server could not discover) is never reused:
// the group must be asked again even if the documents stay the same.
func TestAPartialAnswerIsNotReused(t *testing.T) {
	s, l := newServer(t)
	s.mu.Lock()
	stale := groups("metrics.k8s.io", "pods")
	stale.Items[0].Versions[0].Freshness = apidiscoveryv2.DiscoveryFreshnessStale
	apps := groups("apps", "deployments")
	apps.Items = append(apps.Items, stale.Items...)
	s.docs["/apis"] = apps
	s.mu.Unlock()
	for round := 1; round <= 2; round++ {
		before := s.fullAnswers()
		_, err := l.ServerResources(context.Background())
		if !discovery.IsGroupDiscoveryFailedError(err) {
			t.Fatalf("round %d: got %v, want a group discovery failure", round, err)
		}
		if round == 2 && s.fullAnswers()-before < 2 {
			t.Errorf("round 2 after a partial answer sent %d documents in full, want the read again", s.fullAnswers()-before)
		}
	}
}

// A document that goes away is not answered from memory.
func TestAMissingDocumentIsNotAnsweredFromMemory(t *testing.T) {
	s, l := newServer(t)
	list(t, l)
	s.mu.Lock()
	delete(s.docs, "/api")
	s.mu.Unlock()
	want := []string{"apps/v1 deployments"}
	if got := list(t, l); !slices.Equal(got, want) {
		t.Fatalf("with /api gone: got %v, want %v", got, want)
	}
	s.mu.Lock()
	s.docs["/api"] = groups("", "pods")
	s.mu.Unlock()
	want = []string{"apps/v1 deployments", "v1 pods"}
	if got := list(t, l); !slices.Equal(got, want) {
		t.Fatalf("after /api came back: got %v, want %v", got, want)
	}
}
