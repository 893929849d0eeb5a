package eventbudget

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

func newBudget(t *testing.T, burst int) (*Budget, *clocktesting.FakeClock, *prometheus.Registry) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	b, err := New(Options{Burst: burst, Clock: clk, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return b, clk, reg
}

// allowN calls Allow n times for workloads app-<from>.. and returns how
// many were let through.
func allowN(b *Budget, cluster, reason string, from, n int) int {
	allowed := 0
	for i := from; i < from+n; i++ {
		if b.Allow(Cluster(cluster), "Warning", reason, fmt.Sprintf("Deployment bench/app-%d", i)) {
			allowed++
		}
	}
	return allowed
}

func TestBudgetLetsABurstThroughThenOneEveryRefill(t *testing.T) {
	b, clk, reg := newBudget(t, 5)
	if got := allowN(b, "member1", "EvictWorkloadFromCluster", 0, 8); got != 5 {
		t.Fatalf("allowed %d of 8 at once, want the burst of 5", got)
	}
	clk.Step(DefaultRefill - time.Millisecond)
	if b.Allow(Cluster("member1"), "Warning", "EvictWorkloadFromCluster", "Deployment bench/app-8") {
		t.Fatal("allowed before a refill period passed")
	}
	clk.Step(time.Millisecond)
	if !b.Allow(Cluster("member1"), "Warning", "EvictWorkloadFromCluster", "Deployment bench/app-9") {
		t.Fatal("not allowed once a refill period passed")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var held []float64
	for _, mf := range mfs {
		if mf.GetName() == "lifeboat_events_summarised_total" {
			for _, m := range mf.GetMetric() {
				held = append(held, m.GetCounter().GetValue())
			}
		}
	}
	if len(held) != 1 || held[0] != 4 {
		t.Errorf("lifeboat_events_summarised_total = %v, want one series at 4", held)
	}
}

// The must-not cases: Events of another cluster or another reason, a
// failover within the burst, Events with no evicted cluster, and a
// disabled budget are all recorded.
func TestBudgetKeepsEveryEventItDoesNotHoldBack(t *testing.T) {
	b, clk, _ := newBudget(t, 5)
	if got := allowN(b, "member1", "EvictWorkloadFromCluster", 0, 5); got != 5 {
		t.Fatalf("a failover within the burst: %d of 5 allowed", got)
	}
	if got := allowN(b, "member2", "EvictWorkloadFromCluster", 0, 5); got != 5 {
		t.Errorf("another cluster: %d of 5 allowed", got)
	}
	if got := allowN(b, "member1", "ScheduleBindingSucceed", 0, 5); got != 5 {
		t.Errorf("another reason: %d of 5 allowed", got)
	}
	if got := allowN(b, "", "ScheduleBindingSucceed", 0, 50); got != 50 {
		t.Errorf("no evicted cluster: %d of 50 allowed", got)
	}
	if sums := b.Due(true); len(sums) != 0 {
		t.Errorf("summaries %+v with nothing held back", sums)
	}
	// A full burst is back after burst × refill of quiet.
	clk.Step(5 * DefaultRefill)
	if got := allowN(b, "member1", "EvictWorkloadFromCluster", 100, 5); got != 5 {
		t.Errorf("after a quiet burst × refill: %d of 5 allowed", got)
	}

	for _, burst := range []int{0, -1} {
		off, err := New(Options{Burst: burst})
		if err != nil || off != nil {
			t.Fatalf("New(burst %d) = %v, %v; want nil, nil", burst, off, err)
		}
		if got := allowN(off, "member1", "EvictWorkloadFromCluster", 0, 1000); got != 1000 {
			t.Errorf("burst %d: %d of 1000 allowed", burst, got)
		}
		if sums := off.Due(true); sums != nil {
			t.Errorf("burst %d: summaries %+v", burst, sums)
		}
	}
}

func TestBudgetSummarisesWhatItHeldBackOncePerPeriod(t *testing.T) {
	b, clk, _ := newBudget(t, 2)
	allowN(b, "member1", "EvictWorkloadFromCluster", 0, 7)
	allowN(b, "member1", "ScheduleBindingSucceed", 0, 3)
	allowN(b, "member2", "EvictWorkloadFromCluster", 0, 2)
	if sums := b.Due(false); len(sums) != 0 {
		t.Fatalf("summaries before a period passed: %+v", sums)
	}
	clk.Step(DefaultSummaryPeriod)
	sums := b.Due(false)
	if len(sums) != 2 {
		t.Fatalf("summaries = %+v, want member1's two reasons", sums)
	}
	ev, sched := sums[0], sums[1]
	if ev.Subject != Cluster("member1") || ev.Reason != "EvictWorkloadFromCluster" || ev.EventType != "Warning" {
		t.Errorf("first summary = %+v", ev)
	}
	for _, want := range []string{"5 more EvictWorkloadFromCluster Events", "cluster member1", "in the last 10s",
		"Deployment bench/app-2, Deployment bench/app-3, Deployment bench/app-4 and others", "bindings and Works hold what each one said"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("message %q does not say %q", ev.Message, want)
		}
	}
	if strings.Contains(ev.Message, "app-5") {
		t.Errorf("message %q names more than %d workloads", ev.Message, examplesKept)
	}
	if sched.Reason != "ScheduleBindingSucceed" || !strings.Contains(sched.Message, "1 more ScheduleBindingSucceed Events") ||
		strings.Contains(sched.Message, "others") {
		t.Errorf("second summary = %+v", sched)
	}
	if again := b.Due(false); len(again) != 0 {
		t.Errorf("counts said twice: %+v", again)
	}

	// Held back again (one token earned in the period): said at the next
	// period, or at once when final.
	if got := allowN(b, "member1", "EvictWorkloadFromCluster", 10, 3); got != 1 {
		t.Fatalf("allowed %d of 3 a period later, want 1", got)
	}
	if sums := b.Due(true); len(sums) != 1 || !strings.Contains(sums[0].Message, "2 more EvictWorkloadFromCluster") {
		t.Errorf("final summaries = %+v", sums)
	}
}

func TestBudgetForgetsQuietClusters(t *testing.T) {
	b, clk, _ := newBudget(t, 2)
	allowN(b, "member1", "EvictWorkloadFromCluster", 0, 3)
	clk.Step(DefaultSummaryPeriod)
	b.Due(false)
	if len(b.buckets) != 1 {
		t.Fatalf("buckets = %d right after the summary, want 1", len(b.buckets))
	}
	clk.Step(2 * DefaultRefill)
	b.Due(false)
	if len(b.buckets) != 0 {
		t.Errorf("buckets = %d once the burst is back, want 0", len(b.buckets))
	}
}

func TestSummaryIsRecordedOnTheCluster(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	member1 := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", UID: "uid-member1"}}
	pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-pp"}}
	cpp := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "all", UID: "uid-cpp"}}
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	clk := clocktesting.NewFakeClock(t0)
	stopped := false
	b, err := New(Options{Burst: 1, Clock: clk, Reader: fake.NewClientBuilder().WithScheme(s).WithObjects(member1, pp, cpp).Build(), Recorder: rec,
		StopRecorder: func() { stopped = true }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		subject               Subject
		apiVersion, kind, uid string
	}{
		{Cluster("member1"), "cluster.karmada.io/v1alpha1", "Cluster", "uid-member1"},
		{Policy("shop", "web"), "policy.karmada.io/v1alpha1", "PropagationPolicy", "uid-pp"},
		{Policy("", "all"), "policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", "uid-cpp"},
		{Cluster("gone"), "cluster.karmada.io/v1alpha1", "Cluster", ""},
		{Policy("shop", "gone"), "policy.karmada.io/v1alpha1", "PropagationPolicy", ""},
	} {
		ref := b.subjectRef(context.Background(), c.subject)
		if ref.APIVersion != c.apiVersion || ref.Kind != c.kind || string(ref.UID) != c.uid ||
			ref.Namespace != c.subject.Namespace || ref.Name != c.subject.Name {
			t.Errorf("reference of %s = %+v, want %s %s with UID %q", c.subject, ref, c.apiVersion, c.kind, c.uid)
		}
	}

	allowN(b, "member1", "EvictWorkloadFromCluster", 0, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	events := eventstest.Drain(rec)
	if len(events) != 1 || !strings.HasPrefix(events[0], "Warning EvictWorkloadFromCluster 2 more EvictWorkloadFromCluster Events") ||
		!strings.Contains(events[0], "kind=Cluster") {
		t.Errorf("events at shutdown = %q, want one summary on the Cluster", events)
	}
	if !stopped {
		t.Error("the summaries' recorder was not stopped after the last summaries")
	}
	// Nothing would count an Event held back now: a reconcile still
	// finishing records its own.
	if got := allowN(b, "member1", "EvictWorkloadFromCluster", 10, 5); got != 5 {
		t.Errorf("after the last summaries: %d of 5 allowed", got)
	}
}

// A rollout's Events are budgeted per policy, apart from any cluster's,
// and their summary names the policy.
func TestBudgetKeepsPoliciesApart(t *testing.T) {
	b, clk, _ := newBudget(t, 2)
	web, all := Policy("shop", "web"), Policy("", "all")
	for _, s := range []Subject{web, all, Cluster("web")} {
		allowed := 0
		for i := range 3 {
			if b.Allow(s, "Normal", "ApplyPolicySucceed", fmt.Sprintf("Deployment shop/app-%d", i)) {
				allowed++
			}
		}
		if allowed != 2 {
			t.Errorf("%s: allowed %d of 3, want its own burst of 2", s, allowed)
		}
	}
	if !b.Allow(Policy("shop", ""), "Normal", "ApplyPolicySucceed", "Deployment shop/app-9") {
		t.Error("an Event without a policy was held back")
	}
	clk.Step(DefaultSummaryPeriod)
	var said []string
	for _, s := range b.Due(false) {
		said = append(said, s.Subject.String()+": "+s.Message)
	}
	want := []string{
		"ClusterPropagationPolicy all: 1 more ApplyPolicySucceed Events about workloads of ClusterPropagationPolicy all in the last 10s",
		"PropagationPolicy shop/web: 1 more ApplyPolicySucceed Events about workloads of PropagationPolicy shop/web in the last 10s",
		"cluster web: 1 more ApplyPolicySucceed Events about workloads of cluster web in the last 10s",
	}
	if len(said) != len(want) {
		t.Fatalf("summaries = %q, want %d", said, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(said[i], want[i]) {
			t.Errorf("summary %d = %q, want it to start %q", i, said[i], want[i])
		}
	}
}

func TestPolicyOfReadsTheClaim(t *testing.T) {
	ppID := map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "pp-1"}
	cppID := map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cpp-1"}
	both := map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "pp-1", policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cpp-1"}
	pp := map[string]string{policyv1alpha1.PropagationPolicyNamespaceAnnotation: "shop", policyv1alpha1.PropagationPolicyNameAnnotation: "web"}
	cpp := map[string]string{policyv1alpha1.ClusterPropagationPolicyAnnotation: "all"}
	bothNames := map[string]string{policyv1alpha1.PropagationPolicyNamespaceAnnotation: "shop",
		policyv1alpha1.PropagationPolicyNameAnnotation: "web", policyv1alpha1.ClusterPropagationPolicyAnnotation: "all"}
	for _, c := range []struct {
		name                string
		labels, annotations map[string]string
		want                Subject
	}{
		{"PropagationPolicy", ppID, pp, Subject{Kind: "PropagationPolicy", Namespace: "shop", Name: "web"}},
		{"ClusterPropagationPolicy", cppID, cpp, Subject{Kind: "ClusterPropagationPolicy", Name: "all"}},
		{"both claims: the PropagationPolicy's", both, bothNames, Subject{Kind: "PropagationPolicy", Namespace: "shop", Name: "web"}},
		{"a PropagationPolicy's namespace without its name", both, map[string]string{
			policyv1alpha1.PropagationPolicyNamespaceAnnotation: "shop", policyv1alpha1.ClusterPropagationPolicyAnnotation: "all",
		}, Subject{Kind: "ClusterPropagationPolicy", Name: "all"}},
		{"names without a permanent id", nil, bothNames, Subject{}},
		{"a ClusterPropagationPolicy's id without its name", cppID, pp, Subject{}},
		{"no claim", nil, nil, Subject{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Labels: c.labels, Annotations: c.annotations}
			if got := PolicyOf(obj); got != c.want {
				t.Errorf("PolicyOf = %+v, want %+v", got, c.want)
			}
		})
	}
}

// A long mass failover says a handful of summaries, each with the running
// total: the wait between two doubles, up to five minutes.
func TestBudgetSummariesSlowDownAndCarryTheTotal(t *testing.T) {
	b, clk, _ := newBudget(t, 1)
	allowN(b, "member1", "EvictWorkloadFromCluster", 0, 4) // 3 held back, 2 more before the first look
	var said []string
	var at []time.Duration
	for step := time.Duration(0); step <= 15*time.Minute; step += DefaultSummaryPeriod {
		for _, s := range b.Due(false) {
			said = append(said, s.Message)
			at = append(at, step)
		}
		// Two more held back every period.
		allowN(b, "member1", "EvictWorkloadFromCluster", 1000, 2)
		clk.Step(DefaultSummaryPeriod)
	}
	want := []time.Duration{10 * time.Second, 30 * time.Second, 70 * time.Second, 150 * time.Second, 310 * time.Second, 610 * time.Second}
	if !slices.Equal(at, want) {
		t.Fatalf("summaries at %v, want %v", at, want)
	}
	if !strings.Contains(said[0], "5 more") || strings.Contains(said[0], " since ") {
		t.Errorf("first summary %q", said[0])
	}
	if !strings.Contains(said[1], " since 09:00:00 UTC)") || !strings.Contains(said[1], "in the last 20s") {
		t.Errorf("second summary %q, want the total since the first Event held back", said[1])
	}
}
