package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// RenewalRecord keeps, in the member, a copy of the cluster's Lease as the
// control plane last accepted it: a Lease object in the member whose
// renewTime and leaseDurationSeconds are those of the last renewal that
// succeeded. An agent that starts while the control plane does not answer
// reads it to know when the Lease was last renewed, and fences its copies
// when they are due rather than at once.
//
// The record only ever lags behind the control plane's Lease (it is
// written after a renewal succeeded, and a failed write leaves the older
// time), so fencing from it is never later than fencing from the Lease.
type RenewalRecord struct {
	Leases    coordinationclient.LeasesGetter
	Namespace string
	Name      string
	Holder    string
	// Duration is the Lease duration this agent writes.
	Duration time.Duration
	// Timeout bounds each request to the member (the read at start:
	// maxLoadWait at most).
	Timeout time.Duration
	Clock   clock.PassiveClock

	mu     sync.Mutex
	next   time.Time
	signal chan struct{}

	// written is the record as this process last wrote it (see
	// LeaseRenewer.written); only Start's goroutine uses it.
	written *coordinationv1.Lease
}

// RecordName names the record of cluster's renewals in its member.
func RecordName(cluster string) string { return "lifeboat-agent-" + cluster }

// NeedLeaderElection is false: the record is written whatever the agent's
// connection to the control plane.
func (r *RenewalRecord) NeedLeaderElection() bool { return false }

// Renewed hands the record a renewal the control plane accepted; Start
// writes the newest it has been handed.
func (r *RenewalRecord) Renewed(at time.Time) {
	r.mu.Lock()
	if at.After(r.next) {
		r.next = at
	}
	signal := r.wake()
	r.mu.Unlock()
	select {
	case signal <- struct{}{}:
	default:
	}
}

func (r *RenewalRecord) wake() chan struct{} {
	if r.signal == nil {
		r.signal = make(chan struct{}, 1)
	}
	return r.signal
}

// Start writes, until ctx is done, the newest renewal handed to Renewed; a
// write that fails is not tried again: the next renewal brings a newer
// time.
func (r *RenewalRecord) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("lease-record").WithValues("lease", r.Namespace+"/"+r.Name)
	r.mu.Lock()
	signal := r.wake()
	r.mu.Unlock()
	var wrote time.Time
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-signal:
		}
		r.mu.Lock()
		at := r.next
		r.mu.Unlock()
		if !at.After(wrote) {
			continue
		}
		err := r.save(ctx, at)
		switch {
		case err != nil && !failing:
			log.Error(err, "recording the last renewal in the member; an agent restarted meanwhile counts from an older one, or fences at once without one")
		case err == nil && failing:
			log.Info("recording the last renewal in the member again")
		}
		failing = err != nil
		if err == nil {
			wrote = at
		}
	}
}

// save writes at into the record: one update of the record as this process
// last wrote it, or a read (and a creation when it does not exist) first.
func (r *RenewalRecord) save(ctx context.Context, at time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	leases := r.Leases.Leases(r.Namespace)
	lease := r.written
	r.written = nil
	if lease == nil {
		got, err := leases.Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "lifeboat-agent"}}}
			Renewed(lease, r.Holder, r.Duration, at)
			created, err := leases.Create(ctx, lease, metav1.CreateOptions{FieldManager: "lifeboat-agent"})
			if err != nil {
				return fmt.Errorf("creating Lease %s/%s in the member: %w", r.Namespace, r.Name, err)
			}
			r.written = created
			return nil
		case err != nil:
			return fmt.Errorf("reading Lease %s/%s in the member: %w", r.Namespace, r.Name, err)
		}
		lease = got
	}
	Renewed(lease, r.Holder, r.Duration, at)
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: "lifeboat-agent"})
	if err != nil {
		return fmt.Errorf("updating Lease %s/%s in the member: %w", r.Namespace, r.Name, err)
	}
	r.written = updated
	return nil
}

// maxLoadWait bounds the read of the record at start, which the first
// renewal waits for: a member that does not answer must not hold the
// Lease back for a whole interval.
const maxLoadWait = 2 * time.Second

// Load reads the record: the last renewal to count from (zero when there
// is none).
func (r *RenewalRecord) Load(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, min(r.Timeout, maxLoadWait))
	defer cancel()
	lease, err := r.Leases.Leases(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading Lease %s/%s in the member: %w", r.Namespace, r.Name, err)
	}
	if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return time.Time{}, nil
	}
	return countFrom(lease.Spec.RenewTime.Time, time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second, r.Duration, r.Clock.Now()), nil
}

// countFrom is the last renewal a restarted agent counts its Lease
// duration from, given the recorded renewal (renewed, with the duration
// then written) and the duration it uses now: never after now (a record
// from the future says the clock went back), and earlier by as much as
// the duration grew, so that copies are fenced when the control plane
// expects them to be, by the Lease it last saw. Zero when nothing was
// recorded.
func countFrom(renewed time.Time, recorded, current time.Duration, now time.Time) time.Time {
	if renewed.IsZero() || recorded <= 0 {
		return time.Time{}
	}
	if renewed.After(now) {
		renewed = now
	}
	if grew := current - recorded; grew > 0 {
		renewed = renewed.Add(-grew)
	}
	return renewed
}
