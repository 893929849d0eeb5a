package failover

import (
	"context"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// The wiring the controller manager does, without starting anything.
func TestSetupWithManager(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	// The indexes need a REST mapper; there is no API server to discover.
	mapper := func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
		m := meta.NewDefaultRESTMapper(nil)
		m.Add(workv1alpha2.SchemeGroupVersion.WithKind("ResourceBinding"), meta.RESTScopeNamespace)
		m.Add(workv1alpha2.SchemeGroupVersion.WithKind("ClusterResourceBinding"), meta.RESTScopeRoot)
		return m, nil
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{Scheme: s, MapperProvider: mapper, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	gates := features.New()
	if err := (&ApplicationFailoverReconciler{
		Client: mgr.GetClient(), Recorder: record.NewFakeRecorder(10),
		Clock: clock.RealClock{}, Gates: gates, MaxConcurrentReconciles: 4,
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&GracefulEvictionReconciler{
		Client: mgr.GetClient(), Recorder: record.NewFakeRecorder(10),
		Clock: clock.RealClock{}, Metrics: m, OldCopyExists: WorkExists(mgr.GetClient()), MaxConcurrentReconciles: 4,
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(prometheus.NewRegistry()); err != nil {
		t.Errorf("a second registry: %v", err)
	}
}

func TestWorkExists(t *testing.T) {
	rb := makeBinding("nginx").obj()
	rb.Labels = map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "id-1"}
	work := &workv1alpha1.Work{}
	work.Name, work.Namespace = "nginx-work", "karmada-es-member2"
	work.Labels = map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "id-1"}
	other := &workv1alpha1.Work{}
	other.Name, other.Namespace = "other", "karmada-es-member3"
	other.Labels = map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "id-2"}
	// A binding made by another tool has no permanent-id label: the binding
	// controller labels its Works with the binding's UID.
	unlabelled := makeBinding("made-elsewhere").obj()
	unlabelled.UID = "uid-1"
	byUID := &workv1alpha1.Work{}
	byUID.Name, byUID.Namespace = "made-elsewhere-work", "karmada-es-member1"
	byUID.Labels = map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "uid-1"}
	e := newEnv(t, nil, work, other, byUID)
	exists := WorkExists(e.client)
	for _, tc := range []struct {
		binding *workv1alpha2.ResourceBinding
		cluster string
		want    bool
	}{
		{rb, "member2", true}, {rb, "member3", false}, {rb, "member1", false},
		{unlabelled, "member1", true}, {unlabelled, "member2", false},
	} {
		got, err := exists(context.Background(), tc.binding, tc.cluster)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("WorkExists(%s, %s) = %t, want %t", tc.binding.Name, tc.cluster, got, tc.want)
		}
	}
}
