package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// Renewals start every interval from the previous one's start; one that
// took the interval or longer is followed at once.
func TestNextRenewal(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		took time.Duration
		want time.Duration
	}{
		{"answered at once", 0, 1500 * time.Millisecond},
		{"answered in half the interval", 750 * time.Millisecond, 750 * time.Millisecond},
		{"timed out after the whole interval", 1500 * time.Millisecond, 0},
		{"took longer than the interval", 4 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextRenewal(t0, t0.Add(tc.took), 1500*time.Millisecond); got != tc.want {
				t.Errorf("nextRenewal after %s = %s, want %s", tc.took, got, tc.want)
			}
		})
	}
}

// leaseCalls counts the renewer's requests and fails the next Updates
// with the errors queued in failUpdates.
type leaseCalls struct {
	gets, updates int
	failUpdates   []error
}

func newRenewer(t *testing.T, calls *leaseCalls, objs ...client.Object) (*LeaseRenewer, client.Client, *clocktesting.FakeClock) {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			calls.gets++
			return c.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			calls.updates++
			if len(calls.failUpdates) > 0 {
				err := calls.failUpdates[0]
				calls.failUpdates = calls.failUpdates[1:]
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	return &LeaseRenewer{Client: c, Cluster: "member3", Holder: "member3/a", Duration: 6 * time.Second, Interval: 1500 * time.Millisecond, Clock: clk}, c, clk
}

func memberLease() *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.LeaseNamespace, Name: "member3"}}
}

func renewTime(t *testing.T, c client.Client) time.Time {
	t.Helper()
	var lease coordinationv1.Lease
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: cluster.LeaseNamespace, Name: "member3"}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.RenewTime == nil {
		return time.Time{}
	}
	return lease.Spec.RenewTime.Time
}

// A renewal reads the Lease only when it has not written it yet, or after
// a failure; otherwise it is one update.
func TestLeaseRenewerWritesWhatItLastWrote(t *testing.T) {
	ctx := context.Background()
	calls := &leaseCalls{}
	r, c, clk := newRenewer(t, calls, memberLease())

	step := func(what string, wantGets, wantUpdates int) {
		t.Helper()
		calls.gets, calls.updates = 0, 0
		clk.Step(r.Interval)
		err := r.renew(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if calls.gets != wantGets || calls.updates != wantUpdates {
			t.Errorf("%s: %d reads and %d updates, want %d and %d", what, calls.gets, calls.updates, wantGets, wantUpdates)
		}
		if got := renewTime(t, c); !got.Equal(clk.Now()) {
			t.Errorf("%s: renewTime %v, want %v", what, got, clk.Now())
		}
		if got := r.LastRenewed(); !got.Equal(clk.Now()) {
			t.Errorf("%s: LastRenewed() = %v, want %v", what, got, clk.Now())
		}
	}
	step("the first renewal", 1, 1)
	step("the second renewal", 0, 1)
	step("the third renewal", 0, 1)

	// Someone else wrote the Lease (or an update that timed out here went
	// through there): the update conflicts, and the renewal reads and
	// updates again within the same attempt.
	var other coordinationv1.Lease
	if err := c.Get(ctx, types.NamespacedName{Namespace: cluster.LeaseNamespace, Name: "member3"}, &other); err != nil {
		t.Fatal(err)
	}
	other.Spec.HolderIdentity = ptr.To("member3/b")
	if err := c.Update(ctx, &other); err != nil {
		t.Fatal(err)
	}
	step("a renewal after another writer", 1, 2)
	step("the renewal after that", 0, 1)

	// A failed update: the renewal fails, LastRenewed stays, and the next
	// one reads the Lease again.
	calls.gets, calls.updates = 0, 0
	calls.failUpdates = []error{errors.New("context deadline exceeded")}
	before := r.LastRenewed()
	clk.Step(r.Interval)
	if err := r.renew(ctx); err == nil || !strings.Contains(err.Error(), "updating Lease karmada-cluster/member3") {
		t.Errorf("a failed update: err = %v, want it named", err)
	}
	if got := r.LastRenewed(); !got.Equal(before) {
		t.Errorf("a failed update moved LastRenewed to %v", got)
	}
	step("the renewal after a failure", 1, 1)
}

// A second conflict in one renewal is not retried within it: the renewal
// fails and the next one reads again.
func TestLeaseRenewerConflictsTwice(t *testing.T) {
	ctx := context.Background()
	conflict := apierrors.NewConflict(coordinationv1.Resource("leases"), "member3", errors.New("the object has been modified"))
	calls := &leaseCalls{failUpdates: []error{conflict, conflict}}
	r, _, _ := newRenewer(t, calls, memberLease())
	if err := r.renew(ctx); !apierrors.IsConflict(err) {
		t.Errorf("two conflicts: err = %v, want the conflict", err)
	}
	if calls.gets != 2 || calls.updates != 2 {
		t.Errorf("%d reads and %d updates, want 2 and 2", calls.gets, calls.updates)
	}
	if !r.LastRenewed().IsZero() {
		t.Errorf("LastRenewed() = %v after a failed renewal, want zero", r.LastRenewed())
	}
}

// A Lease that does not exist is not created by the agent; the error says
// where it comes from.
func TestLeaseRenewerMissingLease(t *testing.T) {
	calls := &leaseCalls{}
	r, _, _ := newRenewer(t, calls)
	err := r.renew(context.Background())
	if err == nil || !strings.Contains(err.Error(), "created when the cluster is registered") {
		t.Errorf("err = %v, want it to say the Lease comes with registration", err)
	}
	if calls.updates != 0 {
		t.Errorf("%d updates of a Lease that does not exist", calls.updates)
	}
}

// A first renewal whose request does not return counts as attempted once
// its interval is over: the fencer does not wait for a request that a
// partition holds.
func TestLeaseRenewerFirstRenewalHangs(t *testing.T) {
	calls := &leaseCalls{}
	r, c, clk := newRenewer(t, calls, memberLease())
	release := make(chan struct{})
	r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			<-release
			return errors.New("net/http: TLS handshake timeout")
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Start(ctx) }()
	defer func() { close(release); cancel(); <-done }()

	deadline := time.Now().Add(10 * time.Second)
	for !r.firstDueSet() {
		if time.Now().After(deadline) {
			t.Fatal("the first renewal did not start")
		}
		time.Sleep(time.Millisecond)
	}
	if r.Attempted() {
		t.Fatal("attempted before the first renewal's interval is over")
	}
	clk.Step(r.Interval)
	if !r.Attempted() {
		t.Error("not attempted once the first renewal's interval is over without an answer")
	}
}

func (r *LeaseRenewer) firstDueSet() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.firstDue.IsZero()
}
