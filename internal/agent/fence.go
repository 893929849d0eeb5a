package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
)

// Renewals is what the fencer reads of the Lease renewer.
type Renewals interface {
	// LastRenewed is when the Lease was last renewed (zero: never, by
	// this process).
	LastRenewed() time.Time
	// Attempted says whether the first renewal was tried.
	Attempted() bool
}

// Replicas is the part of the interpreter the fencer uses.
type Replicas interface {
	GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, bool, error)
	ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error)
}

// Fencer stops the fenced copies in the member (those carrying
// fencing.ActionLabel) once the agent has not renewed its cluster's Lease
// for the Lease duration plus each copy's toleration (fencing.Due): by
// then the control plane may have failed the copy over, and counts it as
// stopped a margin later (fencing.StoppedBy). It needs nothing from the
// control plane: the copies are found in the member by their label, so a
// fencer started during a partition fences too.
//
// An agent that starts and whose first renewal fails counts from the last
// renewal recorded in the member (RenewalRecord); without a record it
// fences at once: it cannot know when the Lease was last renewed.
//
// While a copy is fenced the execution controller does not apply its Work
// (Holds); once the Lease is renewed again the function SetOnUnfenced gave
// is called, and the copies that are still wanted are applied again from
// their Works.
type Fencer struct {
	Renewals      Renewals
	LeaseDuration time.Duration
	Member        dynamic.Interface
	Discovery     discovery.DiscoveryInterface
	Replicas      Replicas
	Clock         clock.Clock
	// Tick is how often the Lease is looked at; Scan how often, while a
	// copy may be due, the member is searched for fenced copies.
	Tick, Scan time.Duration
	// Works reads Works from the control plane, uncached. After a
	// fencing, the execution controller's cache may still hold Works the
	// control plane deleted or changed while it could not be reached (its
	// watch resumes only some time after the partition): a fenced Work is
	// applied again only once the control plane confirms it as cached.
	// nil: not checked.
	Works client.Reader
	// ScaleRetry is how long past a copy's due time a ScaleToZero whose
	// interpreter rule fails is tried again before the copy is deleted
	// instead (default DefaultScaleRetry): it must stop before the control
	// plane counts it stopped, --fencing-stop-margin after the due time.
	ScaleRetry time.Duration

	mu     sync.Mutex
	fenced bool
	// outage counts the outages in which this process fenced copies;
	// confirmed holds, for each fenced Work confirmed since, the outage
	// it was confirmed after.
	outage    int
	confirmed map[types.NamespacedName]int
	// onUnfenced is called when the Lease is renewed after a fencing.
	onUnfenced func(ctx context.Context)
}

// SetOnUnfenced sets what is called when the Lease is renewed after a
// fencing; the fencer may run already.
func (f *Fencer) SetOnUnfenced(fn func(ctx context.Context)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onUnfenced = fn
}

// NeedLeaderElection is false: fencing must run whatever the agent's
// connection to the control plane.
func (f *Fencer) NeedLeaderElection() bool { return false }

// Holds says whether the execution controller must not apply work now:
// its copy is fenced, or due to be, or was fenced in this process's last
// outage and the control plane has not yet confirmed work as the cache
// holds it (see Works).
func (f *Fencer) Holds(ctx context.Context, work *workv1alpha1.Work) bool {
	s, ok := fencing.OfWork(work)
	if !ok {
		return false
	}
	if f.due(s, f.Clock.Now()) {
		return true
	}
	return !f.current(ctx, work)
}

// current says whether work may be applied after a fencing: no fencing in
// this process, or the control plane holds work as cached (same
// resourceVersion, not being deleted). A stale cache is caught up by its
// watch, and the Work looked at again.
func (f *Fencer) current(ctx context.Context, work *workv1alpha1.Work) bool {
	key := types.NamespacedName{Namespace: work.Namespace, Name: work.Name}
	f.mu.Lock()
	outage, confirmed := f.outage, f.confirmed[key]
	f.mu.Unlock()
	if outage == 0 || confirmed == outage || f.Works == nil {
		return true
	}
	log := ctrl.LoggerFrom(ctx).WithName("fencing")
	var live workv1alpha1.Work
	if err := f.Works.Get(ctx, key, &live); err != nil {
		if apierrors.IsNotFound(err) {
			log.Info("Keeping a fenced copy stopped: its Work is gone from the control plane, not yet from the cache", "work", key)
		} else {
			log.Error(err, "reading a fenced copy's Work from the control plane before applying it again; trying again", "work", key)
		}
		return false
	}
	if !live.DeletionTimestamp.IsZero() || live.ResourceVersion != work.ResourceVersion {
		log.Info("Keeping a fenced copy stopped until the cache holds its Work as the control plane does", "work", key,
			"cached", work.ResourceVersion, "controlPlane", live.ResourceVersion, "deleting", !live.DeletionTimestamp.IsZero())
		return false
	}
	f.mu.Lock()
	if f.outage == outage {
		f.confirmed[key] = outage
	}
	f.mu.Unlock()
	return true
}

// due says whether a copy fenced by s is due at now.
func (f *Fencer) due(s fencing.Spec, now time.Time) bool {
	if !f.Renewals.Attempted() {
		return false
	}
	return !now.Before(fencing.Due(f.Renewals.LastRenewed(), f.LeaseDuration, s))
}

// Start fences until ctx is done.
func (f *Fencer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("fencing")
	var lastScan time.Time
	for {
		now := f.Clock.Now()
		switch {
		case !f.due(fencing.Spec{}, now):
			f.mu.Lock()
			was, unfenced := f.fenced, f.onUnfenced
			f.fenced = false
			f.mu.Unlock()
			if was {
				log.Info("Lease renewed again: the fenced copies still wanted are applied again from their Works")
				if unfenced != nil {
					unfenced(ctx)
				}
			}
		case now.Sub(lastScan) >= f.Scan:
			lastScan = now
			n, err := f.scan(ctx, now)
			if err != nil {
				log.Error(err, "fencing the copies in the member; trying again", "after", f.Scan)
			}
			if n > 0 {
				f.stopped()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-f.Clock.After(f.Tick):
		}
	}
}

// stopped notes that copies are stopped: the first time in an outage, the
// Works confirmed after the last one must be confirmed again.
func (f *Fencer) stopped() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.fenced {
		f.outage++
		f.confirmed = map[types.NamespacedName]int{}
	}
	f.fenced = true
}

// scan finds the fenced copies in the member and stops those that are
// due; it returns how many are stopped (now or before).
func (f *Fencer) scan(ctx context.Context, now time.Time) (int, error) {
	log := ctrl.LoggerFrom(ctx).WithName("fencing")
	resources, err := listableResources(f.Discovery)
	if err != nil && len(resources) == 0 {
		return 0, err
	}
	stopped := 0
	var errs []error
	for _, gvr := range resources {
		list, err := f.Member.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: fencing.ActionLabel})
		if err != nil {
			// A kind the agent may not list holds nothing it applied.
			if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) && !apierrors.IsForbidden(err) {
				errs = append(errs, fmt.Errorf("listing %s: %w", gvr, err))
			}
			continue
		}
		for i := range list.Items {
			obj := &list.Items[i]
			s, ok := fencing.FromMarks(obj.GetLabels(), obj.GetAnnotations())
			if !ok || !f.due(s, now) || !obj.GetDeletionTimestamp().IsZero() {
				continue
			}
			done, err := f.stop(ctx, gvr, obj, s, now)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if done == leftRunning {
				continue
			}
			stopped++
			if done != "" {
				log.Info("Fenced a copy: the cluster's Lease was not renewed", "resource", gvr.String(), "namespace", obj.GetNamespace(), "name", obj.GetName(),
					"action", done, "lastRenewed", f.Renewals.LastRenewed(), "leaseDuration", f.LeaseDuration, "toleration", s.After)
			}
		}
	}
	return stopped, errors.Join(append(errs, err)...)
}

// DefaultScaleRetry is Fencer.ScaleRetry's default, a part of what the
// control plane's --fencing-stop-margin must cover (fencing.StopWithin).
const DefaultScaleRetry = fencing.ScaleRetry

// stop fences one copy at now; it returns what it did ("" when it was
// stopped already, leftRunning when it changed and is no longer due). ScaleToZero scales a copy whose kind has replicas to
// zero; a kind without replicas, or one the interpreter cannot scale (it
// reports replicas but has no rule to change them), is deleted instead, so
// that a copy counted as stopped never runs on. An interpreter error (a
// script's failure or timeout) is returned and tried again at the next
// scan, until ScaleRetry past the copy's due time: then the copy is
// deleted, since the control plane counts it stopped soon after.
func (f *Fencer) stop(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, s fencing.Spec, now time.Time) (string, error) {
	if s.Action == policyv1alpha1.FencingScaleToZero {
		for attempt := 1; ; attempt++ {
			done, scaled, err := f.scaleToZero(ctx, gvr, obj)
			if apierrors.IsConflict(err) && attempt < writeAttempts {
				// Changed since it was listed (a member writes its
				// status often): judged again on the member's copy.
				fresh, verdict, err := f.reread(ctx, gvr, obj, s)
				if err != nil || fresh == nil {
					return verdict, err
				}
				obj = fresh
				continue
			}
			switch {
			case err == nil && scaled:
				return done, nil
			case err != nil && now.Before(fencing.Due(f.Renewals.LastRenewed(), f.LeaseDuration, s).Add(f.scaleRetry())):
				return "", err
			case err != nil:
				ctrl.LoggerFrom(ctx).Error(err, "Could not scale a fenced copy to zero in time; deleting it, so that it does not run on while the control plane counts it stopped",
					"resource", gvr.String(), "namespace", obj.GetNamespace(), "name", obj.GetName())
			}
			break
		}
	}
	return f.deleteMarked(ctx, gvr, obj, s)
}

// leftRunning is what stop returns for a copy it found no longer to be
// stopped as judged when it came to it; the next scan judges it afresh.
const leftRunning = "left running"

// writeAttempts bounds how often a copy that changed between the read and
// the write is read again; past it the next scan tries.
const writeAttempts = 3

// deleteMarked deletes obj on the condition that it is still the version
// that was judged by s, UID and resourceVersion. When it changed since (its
// status, or its marks), the member's copy is read again and deleted only
// if it is still to be stopped as judged (reread). It returns "" when the
// copy was gone or being deleted already, and leftRunning when it is no
// longer to be stopped so.
func (f *Fencer) deleteMarked(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, s fencing.Spec) (string, error) {
	client := f.Member.Resource(gvr).Namespace(obj.GetNamespace())
	background := metav1.DeletePropagationBackground
	for attempt := 1; ; attempt++ {
		uid, rv := obj.GetUID(), obj.GetResourceVersion()
		opts := metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}}
		if rv != "" {
			opts.Preconditions.ResourceVersion = &rv
		}
		err := client.Delete(ctx, obj.GetName(), opts)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return "deleted", nil
		case !apierrors.IsConflict(err):
			return "", fmt.Errorf("deleting %s %s/%s: %w", gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
		case attempt == writeAttempts:
			return "", fmt.Errorf("%s %s/%s changed %d times while being deleted: %w", gvr.Resource, obj.GetNamespace(), obj.GetName(), attempt, err)
		}
		fresh, verdict, err := f.reread(ctx, gvr, obj, s)
		if err != nil || fresh == nil {
			return verdict, err
		}
		obj = fresh
	}
}

// reread reads a copy again after a write made on the version judged was
// refused, and returns it if it is still to be stopped as judged by s: the
// same copy (UID), not being deleted, marked with the same action, and
// due. Otherwise it returns nil and what stop reports: "" for a copy gone
// or being deleted, leftRunning for one replaced, unmarked, marked
// otherwise or no longer due (the Lease renewed, its toleration grown).
func (f *Fencer) reread(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, s fencing.Spec) (*unstructured.Unstructured, string, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("resource", gvr.String(), "namespace", obj.GetNamespace(), "name", obj.GetName())
	fresh, err := f.Member.Resource(gvr).Namespace(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", nil
	case err != nil:
		return nil, "", fmt.Errorf("reading %s %s/%s again to fence it: %w", gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
	case fresh.GetUID() != obj.GetUID():
		log.Info("Not fenced now: the copy was replaced since it was read")
		return nil, leftRunning, nil
	case !fresh.GetDeletionTimestamp().IsZero():
		return nil, "", nil
	}
	now, ok := fencing.FromMarks(fresh.GetLabels(), fresh.GetAnnotations())
	if !ok || now.Action != s.Action || !f.due(now, f.Clock.Now()) {
		log.Info("Not fenced now: the copy's marks, or the Lease, changed since it was read")
		return nil, leftRunning, nil
	}
	return fresh, "", nil
}

func (f *Fencer) scaleRetry() time.Duration {
	if f.ScaleRetry <= 0 {
		return DefaultScaleRetry
	}
	return f.ScaleRetry
}

// scaleToZero scales obj to zero replicas, recording the replicas it had.
// scaled is false when its kind cannot be scaled (no replicas, or a
// revision that leaves them as they are): the caller deletes it.
func (f *Fencer) scaleToZero(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (done string, scaled bool, err error) {
	what := fmt.Sprintf("%s %s/%s", gvr.Resource, obj.GetNamespace(), obj.GetName())
	replicas, _, ok, err := f.Replicas.GetReplicas(obj)
	switch {
	case err != nil:
		return "", false, fmt.Errorf("reading the replicas of %s to scale it to zero: %w", what, err)
	case !ok:
		return "", false, nil
	case replicas == 0:
		return "", true, nil
	}
	revised, err := f.Replicas.ReviseReplica(obj, 0)
	if err != nil {
		return "", false, fmt.Errorf("scaling %s to zero: %w", what, err)
	}
	after, _, ok, err := f.Replicas.GetReplicas(revised)
	switch {
	case err != nil:
		return "", false, fmt.Errorf("reading the replicas of %s scaled to zero: %w", what, err)
	case !ok || after != 0:
		// No rule changes this kind's replicas: writing it back would leave
		// it running while it counts as stopped.
		return "", false, nil
	}
	annotations := revised.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[fencing.ReplicasAnnotation] = strconv.FormatInt(int64(replicas), 10)
	revised.SetAnnotations(annotations)
	if _, err := f.Member.Resource(gvr).Namespace(obj.GetNamespace()).Update(ctx, revised, metav1.UpdateOptions{FieldManager: "lifeboat-fencing"}); err != nil {
		return "", false, fmt.Errorf("scaling %s to zero: %w", what, err)
	}
	return "scaled to zero", true, nil
}

// listableResources are the member's resources that can be listed and
// written, in their preferred versions; subresources left out. A partial
// discovery failure returns what was found with the error.
func listableResources(d discovery.DiscoveryInterface) ([]schema.GroupVersionResource, error) {
	lists, err := discovery.ServerPreferredResources(d)
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "delete") {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, err
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
