package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

// LeaseRenewer renews the cluster's Lease in the control plane every
// Interval, as the control plane's lease monitor expects: a cluster whose
// Lease goes without a renewal for the monitor's grace period turns
// Ready=Unknown there. The Lease exists already (it is created when the
// cluster is registered); the agent may only update it.
type LeaseRenewer struct {
	// Client writes to the control plane, uncached.
	Client   client.Client
	Cluster  string
	Holder   string
	Duration time.Duration
	Interval time.Duration
	Clock    clock.Clock
	// Record, when set, is told each renewal that succeeded, and read at
	// start for the last renewal of an earlier process (see
	// RenewalRecord).
	Record Record

	mu          sync.Mutex
	lastRenewed time.Time
	attempted   bool
	// firstDue is when the first renewal's interval ends: by then it
	// counts as attempted, even if its request has not returned.
	firstDue time.Time

	// written is the Lease as this process last wrote it: the next
	// renewal updates it without reading it first, one request instead of
	// two. It is dropped after any failure, so that the next renewal reads
	// the Lease again. Only Start's goroutine uses it.
	written *coordinationv1.Lease
}

// Record keeps the last renewal where a restarted agent finds it.
type Record interface {
	// Load returns the last renewal recorded (zero: none).
	Load(ctx context.Context) (time.Time, error)
	// Renewed records a renewal that succeeded.
	Renewed(at time.Time)
}

// NeedLeaderElection is false: the agent has no leader election of its own.
func (r *LeaseRenewer) NeedLeaderElection() bool { return false }

// LastRenewed is when the Lease was last renewed: by this process, or
// before it by the Record's account (zero when neither knows).
func (r *LeaseRenewer) LastRenewed() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRenewed
}

// Attempted says whether the first renewal was tried: it failed or
// succeeded, or its interval is over without an answer.
func (r *LeaseRenewer) Attempted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempted || (!r.firstDue.IsZero() && !r.Clock.Now().Before(r.firstDue))
}

// Start renews the Lease until ctx is done. A failed renewal is logged and
// tried again; it never stops the agent. Renewals start every Interval,
// counted from the start of the previous one: a renewal that used up its
// whole Interval (a control plane slow to answer) is followed by the next
// at once, not an Interval later.
func (r *LeaseRenewer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("lease").WithValues("cluster", r.Cluster)
	r.loadRecord(ctx)
	failing := false
	for {
		began := r.Clock.Now()
		r.mu.Lock()
		if r.firstDue.IsZero() {
			r.firstDue = began.Add(r.Interval)
		}
		r.mu.Unlock()
		err := r.renew(ctx)
		r.mu.Lock()
		r.attempted = true
		r.mu.Unlock()
		switch {
		case err != nil && !failing:
			log.Error(err, "renewing the cluster's Lease; retrying", "interval", r.Interval)
		case err == nil && failing:
			log.Info("renewing the cluster's Lease again")
		}
		failing = err != nil
		if ctx.Err() != nil {
			return nil
		}
		wait := nextRenewal(began, r.Clock.Now(), r.Interval)
		if wait <= 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.Clock.After(wait):
		}
	}
}

// loadRecord starts LastRenewed from the Record, before the first
// renewal: should that renewal fail, the fencer counts from the renewal
// an earlier process recorded instead of fencing at once.
func (r *LeaseRenewer) loadRecord(ctx context.Context) {
	if r.Record == nil {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithName("lease").WithValues("cluster", r.Cluster)
	at, err := r.Record.Load(ctx)
	if err != nil {
		log.Error(err, "reading the last renewal recorded in the member; should the first renewal fail, the fenced copies are due at once")
		return
	}
	if at.IsZero() {
		return
	}
	r.mu.Lock()
	if at.After(r.lastRenewed) {
		r.lastRenewed = at
	}
	r.mu.Unlock()
	log.Info("the last renewal recorded in the member", "renewed", at)
}

// nextRenewal is how long to wait, at now, before the renewal after the
// one that began at began: renewals start every interval, and one that
// took the interval or longer is followed at once.
func nextRenewal(began, now time.Time, interval time.Duration) time.Duration {
	return max(0, began.Add(interval).Sub(now))
}

// renew writes a new renewTime into the Lease within one Interval. It
// updates the Lease as this process last wrote it; the first renewal, and
// the first after a failure, read it first. A conflict (someone else wrote
// the Lease, or an update that timed out here went through there) is
// answered by reading the Lease and updating it once more.
func (r *LeaseRenewer) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.Interval)
	defer cancel()
	lease := r.written
	r.written = nil
	for attempt := 0; ; attempt++ {
		if lease == nil {
			var err error
			if lease, err = r.read(ctx); err != nil {
				return err
			}
		}
		now := r.Clock.Now()
		Renewed(lease, r.Holder, r.Duration, now)
		err := r.Client.Update(ctx, lease)
		if apierrors.IsConflict(err) && attempt == 0 {
			lease = nil
			continue
		}
		if err != nil {
			return fmt.Errorf("updating Lease %s/%s: %w", cluster.LeaseNamespace, r.Cluster, err)
		}
		r.written = lease
		r.mu.Lock()
		r.lastRenewed = now
		r.mu.Unlock()
		if r.Record != nil {
			r.Record.Renewed(now)
		}
		return nil
	}
}

func (r *LeaseRenewer) read(ctx context.Context) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: cluster.LeaseNamespace, Name: r.Cluster}
	if err := r.Client.Get(ctx, key, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the Lease %s does not exist: it is created when the cluster is registered (`lifeboat token create --cluster %s`): %w", key, r.Cluster, err)
		}
		return nil, fmt.Errorf("reading Lease %s: %w", key, err)
	}
	return lease, nil
}

// Renewed sets lease's spec as renewed by holder at now.
func Renewed(lease *coordinationv1.Lease, holder string, duration time.Duration, now time.Time) {
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != holder {
		lease.Spec.HolderIdentity = ptr.To(holder)
		lease.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(max(1, duration/time.Second)))
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
}
