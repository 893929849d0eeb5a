package membercluster_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
)

// TestMemberWarningsLoggedOncePerMessage: a member answering every list of
// a deprecated kind with a warning (as v1 Endpoints does) has it logged
// once, however often the kind is listed, and a different warning still
// gets through.
func TestMemberWarningsLoggedOncePerMessage(t *testing.T) {
	warning := `299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("labelSelector") == "other" {
			w.Header().Add("Warning", `299 - "another warning"`)
		} else {
			w.Header().Add("Warning", warning)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[]}`))
	}))
	defer srv.Close()

	clients, err := membercluster.NewClients(&rest.Config{Host: srv.URL}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []string
	ctx := logr.NewContext(context.Background(), funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{}))
	endpoints := schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
	for _, selector := range []string{"a", "b", "c", "other", "other"} {
		if _, err := clients.Metadata.Resource(endpoints).List(ctx, metav1.ListOptions{LabelSelector: selector}); err != nil {
			t.Fatalf("listing: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	count := func(s string) (n int) {
		for _, l := range logged {
			if strings.Contains(l, s) {
				n++
			}
		}
		return n
	}
	if n := count("v1 Endpoints is deprecated"); n != 1 {
		t.Errorf("the Endpoints warning was logged %d times, want once; logged: %q", n, logged)
	}
	if n := count("another warning"); n != 1 {
		t.Errorf("a second, different warning was logged %d times, want once; logged: %q", n, logged)
	}
}
