package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failback"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// lifeboat failback lists the bindings with failback configured, where each
// stands, and leaves the others out.
func TestFailbackRows(t *testing.T) {
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	member1 := schedtesting.MakeCluster("member1").Obj()
	member1.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-100 * time.Second))
	member2 := schedtesting.MakeCluster("member2").Obj()
	failedOver := func(name string, failback bool) *workv1alpha2.ResourceBinding {
		groups := schedtesting.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
		b := schedtesting.MakeBinding("shop", name).Replicas(1).Placement(groups).Cluster("member2", 1).Obj()
		b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}}
		if failback {
			b.Spec.Failover.Failback = &policyv1alpha1.FailbackBehavior{StabilizationSeconds: ptr.To[int32](600)}
		}
		b.Status.FailoverHistory = []workv1alpha2.FailoverHistoryItem{{
			Time: metav1.NewTime(now.Add(-time.Hour)), Reason: workv1alpha2.EvictionReasonTaintUntolerated, FromCluster: "member1", Producer: "test",
		}}
		return b
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(member1, member2, failedOver("web", true), failedOver("db", false)).Build()

	rows, err := failbackRows(context.Background(), c, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Name != "web-deployment" || rows[0].State != failback.StateWaiting || rows[0].Cluster != "member1" ||
		!rows[0].At.Equal(now.Add(500*time.Second)) {
		t.Fatalf("rows = %+v, want web-deployment waiting for member1 until +500s", rows)
	}
	var out bytes.Buffer
	if err := printFailbacks(&out, rows, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shop/web-deployment", "Waiting", "member1", "in 8m20s", "0 failback(s) moving now."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := printFailbacks(&out, nil, now); err != nil || !strings.Contains(out.String(), "No workload is waiting") {
		t.Errorf("empty output = %q (%v)", out.String(), err)
	}
}

// -o json has "at" only for a row that waits until then, not the zero time.
func TestFailbackJSONOmitsAnUnsetAt(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 8, 20, 0, time.UTC)
	rows := []failbackRow{
		{Kind: "ResourceBinding", Namespace: "shop", Name: "web", Pending: failback.Pending{State: failback.StateWaiting, Cluster: "member1", At: at, Reason: "stabilizing"}},
		{Kind: "ResourceBinding", Namespace: "shop", Name: "db", Pending: failback.Pending{State: failback.StateNone, Reason: "nothing to move back"}},
	}
	data, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got[0]["at"] != "2026-03-01T12:08:20Z" {
		t.Errorf("waiting row: at = %v, want 2026-03-01T12:08:20Z (%s)", got[0]["at"], data)
	}
	if v, ok := got[1]["at"]; ok {
		t.Errorf("row with nothing to wait for has at = %v (%s)", v, data)
	}
}
