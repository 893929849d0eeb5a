package conflict

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Versions remembers, per object, the resourceVersions that this process's
// own writes replaced. The controllers of one process read from the same
// informer cache, which learns of a write only when its watch event comes
// back; under load that is later than the write's answer, and a controller
// that reads the object meanwhile gets the version the write replaced. A
// write preconditioned on such a version is refused by the API server with
// a Conflict, always: the object has changed since. A Client given Versions
// refuses it itself, without sending it, and Retrying runs the reconcile
// again reading from the API server, as after a refusal by the server.
//
// Only versions known to be replaced are refused, so the answer is the API
// server's own; resourceVersions are compared for equality only. Writes
// made by other processes, or through clients without Versions, are not
// known here and are refused by the server as before.
//
// The zero value is not usable; use NewVersions. A nil *Versions remembers
// nothing.
type Versions struct {
	clock clock.PassiveClock

	mu        sync.Mutex
	byUID     map[types.UID]*replaced
	lastSweep time.Time
}

// keptVersions is how many replaced versions are kept per object: a cache
// that lags by more writes than this still gets the server's refusal.
const keptVersions = 4

// versionsKeepFor is how long an object's replaced versions are kept after
// its last write. The cache has caught up long before in all but the worst
// overloads, and a version kept too briefly only costs the request the
// server refuses.
const versionsKeepFor = 2 * time.Minute

// replaced are the latest versions of one object that its writes replaced.
type replaced struct {
	versions [keptVersions]string
	next     int
	at       time.Time
}

// NewVersions returns an empty Versions; c is its clock (nil: the real one).
func NewVersions(c clock.PassiveClock) *Versions {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Versions{clock: c, byUID: map[types.UID]*replaced{}}
}

// written records that a write of object uid replaced version from.
func (v *Versions) written(uid types.UID, from string) {
	if v == nil || uid == "" || from == "" {
		return
	}
	now := v.clock.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sweepLocked(now)
	r := v.byUID[uid]
	if r == nil {
		r = &replaced{}
		v.byUID[uid] = r
	}
	r.versions[r.next] = from
	r.next = (r.next + 1) % keptVersions
	r.at = now
}

// sweepLocked forgets, at most once per versionsKeepFor, the objects not
// written for that long. The check before each write sweeps too, so that
// what a burst of writes left goes at the next write of any object.
func (v *Versions) sweepLocked(now time.Time) {
	if now.Sub(v.lastSweep) < versionsKeepFor {
		return
	}
	for k, r := range v.byUID {
		if now.Sub(r.at) >= versionsKeepFor {
			delete(v.byUID, k)
		}
	}
	v.lastSweep = now
}

// replacedVersion reports whether a write of this process replaced version
// rv of object uid.
func (v *Versions) replacedVersion(uid types.UID, rv string) bool {
	if v == nil || uid == "" || rv == "" {
		return false
	}
	now := v.clock.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sweepLocked(now)
	r := v.byUID[uid]
	if r == nil || now.Sub(r.at) >= versionsKeepFor {
		return false
	}
	for _, s := range r.versions {
		if s == rv {
			return true
		}
	}
	return false
}

// Len is how many objects have replaced versions remembered.
func (v *Versions) Len() int {
	if v == nil {
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.byUID)
}

// staleUpdate returns the Conflict the API server would answer to an update
// of obj preconditioned on its resourceVersion, when this process's writes
// replaced that version; nil otherwise.
func (v *Versions) staleUpdate(obj client.Object) error {
	if !v.replacedVersion(obj.GetUID(), obj.GetResourceVersion()) {
		return nil
	}
	return staleError(obj)
}

// stalePatch is staleUpdate for a patch: only a patch that carries the
// resourceVersion as its precondition is refused.
func (v *Versions) stalePatch(obj client.Object, patch client.Patch) error {
	if !v.replacedVersion(obj.GetUID(), obj.GetResourceVersion()) {
		return nil
	}
	data, err := patch.Data(obj)
	if err != nil {
		return nil // the client reports it
	}
	if rv, ok := patchPrecondition(data); !ok || rv != obj.GetResourceVersion() {
		return nil
	}
	return staleError(obj)
}

// patchPrecondition returns the metadata.resourceVersion a merge or apply
// patch carries. Other patches (a JSON patch's list of operations) give
// none and are sent as they are.
func patchPrecondition(data []byte) (string, bool) {
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &p) != nil || p.Metadata.ResourceVersion == "" {
		return "", false
	}
	return p.Metadata.ResourceVersion, true
}

func staleError(obj client.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	if gr.Resource == "" {
		gr.Resource = fmt.Sprintf("%T", obj)
	}
	return apierrors.NewConflict(gr, obj.GetName(), fmt.Errorf(
		"version %s was replaced by a write of this process that the cache has not seen yet; not sent", obj.GetResourceVersion()))
}

// record notes, after a write of obj that was made on version from, that
// from is replaced when the write succeeded and changed the version; it
// returns err, noted for Retrying.
func (v *Versions) record(ctx context.Context, obj client.Object, from string, err error) error {
	if err == nil && obj.GetResourceVersion() != from {
		v.written(obj.GetUID(), from)
	}
	return note(ctx, err)
}
