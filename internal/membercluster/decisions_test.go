package membercluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func TestBackoff(t *testing.T) {
	cases := map[string]struct {
		failures int
		want     time.Duration
	}{
		"first failure waits the initial back-off": {1, 2 * time.Second},
		"doubles per failure":                      {3, 8 * time.Second},
		"is capped":                                {20, time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := backoff(tc.failures, 2*time.Second, time.Minute); got != tc.want {
				t.Errorf("backoff(%d) = %s, want %s", tc.failures, got, tc.want)
			}
		})
	}
}

func TestConnectionFingerprint(t *testing.T) {
	base := func() *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{Spec: clusterv1alpha1.ClusterSpec{
			APIEndpoint: "https://a:6443",
			SecretRef:   &clusterv1alpha1.LocalSecretReference{Namespace: "karmada-cluster", Name: "a"},
			ProxyHeader: map[string]string{"x": "1", "y": "2"},
		}}
	}
	ref := connectionFingerprint(base(), "7")
	cases := map[string]struct {
		mutate    func(*clusterv1alpha1.Cluster)
		secretRV  string
		wantEqual bool
	}{
		"nothing changed":          {func(*clusterv1alpha1.Cluster) {}, "7", true},
		"status-only fields":       {func(c *clusterv1alpha1.Cluster) { c.Spec.Region = "eu" }, "7", true},
		"endpoint changed":         {func(c *clusterv1alpha1.Cluster) { c.Spec.APIEndpoint = "https://b:6443" }, "7", false},
		"credentials rotated":      {func(*clusterv1alpha1.Cluster) {}, "8", false},
		"other secret":             {func(c *clusterv1alpha1.Cluster) { c.Spec.SecretRef.Name = "b" }, "7", false},
		"TLS verification toggled": {func(c *clusterv1alpha1.Cluster) { c.Spec.InsecureSkipTLSVerification = true }, "7", false},
		"proxy header changed":     {func(c *clusterv1alpha1.Cluster) { c.Spec.ProxyHeader["y"] = "3" }, "7", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := base()
			tc.mutate(c)
			if got := connectionFingerprint(c, tc.secretRV) == ref; got != tc.wantEqual {
				t.Errorf("fingerprint equal = %t, want %t", got, tc.wantEqual)
			}
		})
	}
}

func TestIsConnectionFailure(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := map[string]struct {
		ctx  context.Context
		err  error
		want bool
	}{
		"no error":                  {context.Background(), nil, false},
		"refused connection":        {context.Background(), fmt.Errorf("get: %w", errors.New("connect: connection refused")), true},
		"request deadline":          {context.Background(), context.DeadlineExceeded, true},
		"not found is an answer":    {context.Background(), apierrors.NewNotFound(gr, "x"), false},
		"conflict is an answer":     {context.Background(), apierrors.NewConflict(gr, "x", errors.New("rv")), false},
		"service unavailable":       {context.Background(), apierrors.NewServiceUnavailable("overloaded"), true},
		"unknown kind is an answer": {context.Background(), &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Foo"}}, false},
		"caller gave up":            {cancelled, context.Canceled, false},
		"forbidden is an answer":    {context.Background(), apierrors.NewForbidden(gr, "x", errors.New("rbac")), false},
		"server timeout status":     {context.Background(), &apierrors.StatusError{ErrStatus: metav1.Status{Code: 504}}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := isConnectionFailure(tc.ctx, tc.err); got != tc.want {
				t.Errorf("isConnectionFailure(%v) = %t, want %t", tc.err, got, tc.want)
			}
		})
	}
}

func TestAdmitLetsOneProbeThrough(t *testing.T) {
	m := &member{name: "m"}
	now := time.Unix(0, 0)
	if _, ok := m.admit(now, time.Second, time.Time{}); !ok {
		t.Fatal("a healthy member must admit")
	}
	wait := m.recordFailure(now, errors.New("refused"), 2*time.Second, time.Minute)
	if wait != 2*time.Second {
		t.Fatalf("wait = %s", wait)
	}
	if w, ok := m.admit(now.Add(time.Second), time.Second, time.Time{}); ok || w != time.Second {
		t.Fatalf("during back-off: admit = %s, %t; want 1s, false", w, ok)
	}
	later := now.Add(2 * time.Second)
	if _, ok := m.admit(later, time.Second, time.Time{}); !ok {
		t.Fatal("after the back-off one probe must go through")
	}
	if _, ok := m.admit(later, time.Second, time.Time{}); ok {
		t.Fatal("a second caller must not probe concurrently")
	}
	m.recordSuccess()
	if _, ok := m.admit(later, time.Second, time.Time{}); !ok {
		t.Fatal("after a successful probe every caller is admitted")
	}
}

func TestAdmitEndsTheBackoffWhenTheClusterIsReadyAgain(t *testing.T) {
	failedAt := time.Date(2025, 1, 1, 0, 0, 10, 500e6, time.UTC) // 00:00:10.5
	for name, tc := range map[string]struct {
		readySince time.Time
		want       bool
	}{
		"not Ready": {want: false},
		"Ready before the failure (stale condition)":       {readySince: failedAt.Add(-time.Hour), want: false},
		"Ready after the failure":                          {readySince: failedAt.Add(20 * time.Second), want: true},
		"Ready in the failure's second (second precision)": {readySince: failedAt.Truncate(time.Second), want: true},
	} {
		t.Run(name, func(t *testing.T) {
			m := &member{name: "m"}
			for i := 0; i < 6; i++ { // a long outage: the back-off has grown to a minute
				m.recordFailure(failedAt, errors.New("refused"), 2*time.Second, time.Minute)
			}
			now := failedAt.Add(25 * time.Second)
			if _, ok := m.admit(now, time.Second, tc.readySince); ok != tc.want {
				t.Fatalf("admit = %t, want %t", ok, tc.want)
			}
			if tc.want {
				if _, ok := m.admit(now, time.Second, tc.readySince); ok {
					t.Fatal("a second caller must not probe while the first one does")
				}
			}
		})
	}
}
