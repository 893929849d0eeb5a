package undecodable

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// outcome is what an informer does with a stand-in.
type outcome int

const (
	// drop: nothing reaches the store or the controllers.
	drop outcome = iota
	// deliverCached: the cached, last decodable version, in the stand-in's
	// place.
	deliverCached
	// deliverDeleting: the cached version with the stand-in's metadata
	// (deletionTimestamp, finalizers, resourceVersion).
	deliverDeleting
	// deliverDeleted: the deletion, carrying the cached version.
	deliverDeleted
)

// listItem is decide's event type for an item of a list response.
const listItem watch.EventType = ""

// decide says what an informer does with a stand-in that arrives as a list
// item (listItem) or in a watch event of type typ, given the version of the
// same namespace/name its store holds (nil when none). "Cached" below means
// cached with the stand-in's UID: the same object, not an older one of the
// same name.
//
//  1. A list item or ADDED of a cached object: its cached version. A relist
//     (or a watch's initial events) replaces the whole store, and an object
//     missing from it would look deleted to the controllers.
//  2. A list item or ADDED otherwise: dropped. A new undecodable object is
//     not seen; a cached object of another UID is gone from the server.
//  3. MODIFIED of a cached object that is being deleted (the stand-in has a
//     deletionTimestamp): the cached version with the stand-in's metadata,
//     so that the controllers see the deletion, run their finalizers and
//     remove them with the current resourceVersion.
//  4. MODIFIED otherwise: dropped; the store keeps the cached version.
//  5. DELETED of a key the store holds (whatever its UID): the deletion,
//     with the cached version, so that the store forgets it and the
//     controllers see what they knew of it.
//  6. DELETED of a key the store does not hold: dropped; there is nothing
//     to delete.
func decide(typ watch.EventType, standIn, cached metav1.Object) outcome {
	same := cached != nil && cached.GetUID() == standIn.GetUID()
	switch typ {
	case listItem, watch.Added:
		if same {
			return deliverCached // 1
		}
		return drop // 2
	case watch.Modified:
		if same && standIn.GetDeletionTimestamp() != nil {
			return deliverDeleting // 3
		}
		return drop // 4
	case watch.Deleted:
		if cached != nil {
			return deliverDeleted // 5
		}
		return drop // 6
	}
	return drop
}
