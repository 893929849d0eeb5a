package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/lifeboat-dev/lifeboat/internal/fencing"
)

// A restarted agent counts from the recorded renewal, never from the
// future, and from earlier when its Lease duration grew since.
func TestCountFrom(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name              string
		renewed           time.Time
		recorded, current time.Duration
		want              time.Time
	}{
		{"nothing recorded", time.Time{}, 6 * time.Second, 6 * time.Second, time.Time{}},
		{"no duration recorded", now.Add(-time.Second), 0, 6 * time.Second, time.Time{}},
		{"the same duration", now.Add(-2 * time.Second), 6 * time.Second, 6 * time.Second, now.Add(-2 * time.Second)},
		{"a shorter duration now: fenced earlier", now.Add(-2 * time.Second), 40 * time.Second, 6 * time.Second, now.Add(-2 * time.Second)},
		{"a longer duration now: counted from earlier", now.Add(-2 * time.Second), 6 * time.Second, 40 * time.Second, now.Add(-36 * time.Second)},
		{"a fraction of a second more than recorded", now.Add(-2 * time.Second), time.Second, 1500 * time.Millisecond, now.Add(-2500 * time.Millisecond)},
		{"recorded in the future", now.Add(time.Minute), 6 * time.Second, 6 * time.Second, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countFrom(tc.renewed, tc.recorded, tc.current, now); !got.Equal(tc.want) {
				t.Errorf("countFrom = %v, want %v", got, tc.want)
			}
			if !tc.want.IsZero() && !fencing.Due(tc.want, tc.current, fencing.Spec{}).Add(-time.Nanosecond).Before(fencing.Due(tc.renewed, tc.recorded, fencing.Spec{})) {
				t.Errorf("due %v after the control plane's %v", fencing.Due(tc.want, tc.current, fencing.Spec{}), fencing.Due(tc.renewed, tc.recorded, fencing.Spec{}))
			}
		})
	}
}

func newRecord(cs *kubefake.Clientset, clk *clocktesting.FakeClock) *RenewalRecord {
	return &RenewalRecord{Leases: cs.CoordinationV1(), Namespace: "kube-system", Name: RecordName("member3"),
		Holder: "member3/a", Duration: 6 * time.Second, Timeout: time.Second, Clock: clk}
}

// verbs lists the verbs of the Lease requests cs saw since the last call.
func verbs(cs *kubefake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		out = append(out, a.GetVerb())
	}
	cs.ClearActions()
	return out
}

// The record is created by the first renewal, then updated as last
// written, one request each; a failed write makes the next one read.
// Load returns what was last written.
func TestRenewalRecordSaveAndLoad(t *testing.T) {
	ctx := context.Background()
	cs := kubefake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	r := newRecord(cs, clk)

	if got, err := r.Load(ctx); err != nil || !got.IsZero() {
		t.Fatalf("Load without a record = %v, %v; want zero, nil", got, err)
	}
	cs.ClearActions()
	check := func(what string, at time.Time, want []string) {
		t.Helper()
		if err := r.save(ctx, at); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := verbs(cs); !slices.Equal(got, want) {
			t.Errorf("%s: requests %v, want %v", what, got, want)
		}
		got, err := r.Load(ctx)
		cs.ClearActions()
		if err != nil || !got.Equal(at) {
			t.Errorf("%s: Load = %v, %v; want %v", what, got, err, at)
		}
	}
	t1 := clk.Now().Add(-10 * time.Second)
	check("the first record", t1, []string{"get", "create"})
	check("the next", t1.Add(1500*time.Millisecond), []string{"update"})

	cs.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		cs.ReactionChain = cs.ReactionChain[1:]
		return true, nil, errors.New("context deadline exceeded")
	})
	if err := r.save(ctx, t1.Add(3*time.Second)); err == nil {
		t.Fatal("a failed update: no error")
	}
	cs.ClearActions()
	if got, _ := r.Load(ctx); !got.Equal(t1.Add(1500 * time.Millisecond)) {
		t.Errorf("after a failed update Load = %v, want the last written %v", got, t1.Add(1500*time.Millisecond))
	}
	cs.ClearActions()
	check("the one after a failure", t1.Add(4500*time.Millisecond), []string{"get", "update"})

	// Someone deletes the record: the next write fails, the one after
	// creates it again.
	if err := cs.CoordinationV1().Leases("kube-system").Delete(ctx, "lifeboat-agent-member3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()
	if err := r.save(ctx, t1.Add(6*time.Second)); err == nil {
		t.Error("updating a deleted record: no error")
	}
	cs.ClearActions()
	check("the one after the record was deleted", t1.Add(7500*time.Millisecond), []string{"get", "create"})

	var lease *coordinationv1.Lease
	lease, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "lifeboat-agent-member3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); got != 6 {
		t.Errorf("leaseDurationSeconds %d, want 6", got)
	}
}

// Start writes the newest renewal it was handed.
func TestRenewalRecordStart(t *testing.T) {
	cs := kubefake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	r := newRecord(cs, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Start(ctx) }()
	defer func() { cancel(); <-done }()

	at := clk.Now()
	r.Renewed(at.Add(-time.Second))
	r.Renewed(at)
	r.Renewed(at.Add(-2 * time.Second)) // older: ignored
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := r.Load(context.Background())
		if err == nil && got.Equal(at) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record says %v (%v), want %v", got, err, at)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stubRecord is a Record that returns loaded and keeps what it is told.
type stubRecord struct {
	loaded  time.Time
	loadErr error
	mu      sync.Mutex
	renewed []time.Time
}

func (s *stubRecord) Load(context.Context) (time.Time, error) { return s.loaded, s.loadErr }
func (s *stubRecord) Renewed(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewed = append(s.renewed, at)
}

// An agent whose first renewal fails counts from the recorded renewal: a
// copy with a toleration is due at the recorded renewal plus the Lease
// duration and the toleration, not at once. Without a record (or when it
// cannot be read) it is due at once.
func TestRestartedAgentCountsFromRecord(t *testing.T) {
	timeout := errors.New("context deadline exceeded")
	spec := fencing.Spec{Action: "ScaleToZero", After: 20 * time.Second}
	for _, tc := range []struct {
		name    string
		record  *stubRecord
		dueAt   time.Duration // after the start; <0: at once
		renewed time.Duration // LastRenewed after the first attempt, from the start
	}{
		{"recorded 2 s before the start", &stubRecord{}, 24 * time.Second, -2 * time.Second},
		{"nothing recorded", nil, -1, 0},
		{"the record unreadable", &stubRecord{loadErr: errors.New("connection refused")}, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := &leaseCalls{failUpdates: []error{timeout, timeout, timeout}}
			r, _, clk := newRenewer(t, calls, memberLease())
			start := clk.Now()
			if tc.record != nil {
				if tc.record.loadErr == nil {
					tc.record.loaded = start.Add(tc.renewed)
				}
				r.Record = tc.record
			}
			f := &Fencer{Renewals: r, LeaseDuration: r.Duration, Clock: clk}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = r.Start(ctx) }()
			defer func() { cancel(); <-done }()
			deadline := time.Now().Add(10 * time.Second)
			for !r.Attempted() {
				if time.Now().After(deadline) {
					t.Fatal("no renewal attempted")
				}
				time.Sleep(time.Millisecond)
			}
			if tc.dueAt < 0 {
				if !f.due(spec, start) {
					t.Errorf("not due at the start, with LastRenewed %v", r.LastRenewed())
				}
				return
			}
			if got := r.LastRenewed(); !got.Equal(start.Add(tc.renewed)) {
				t.Errorf("LastRenewed() = %v, want the recorded %v", got, start.Add(tc.renewed))
			}
			if f.due(spec, start.Add(tc.dueAt-time.Millisecond)) {
				t.Errorf("due %s after the start, before the recorded renewal plus Lease and toleration", tc.dueAt-time.Millisecond)
			}
			if !f.due(spec, start.Add(tc.dueAt)) {
				t.Errorf("not due %s after the start", tc.dueAt)
			}
		})
	}
}

// Each renewal that succeeds is handed to the record; a failed one is not.
func TestLeaseRenewerTellsRecord(t *testing.T) {
	calls := &leaseCalls{}
	r, _, clk := newRenewer(t, calls, memberLease())
	rec := &stubRecord{}
	r.Record = rec
	ctx := context.Background()
	if err := r.renew(ctx); err != nil {
		t.Fatal(err)
	}
	first := clk.Now()
	clk.Step(r.Interval)
	calls.failUpdates = []error{errors.New("context deadline exceeded")}
	if err := r.renew(ctx); err == nil {
		t.Fatal("want the failed update's error")
	}
	if len(rec.renewed) != 1 || !rec.renewed[0].Equal(first) {
		t.Errorf("the record was told %v, want only %v", rec.renewed, first)
	}
}
