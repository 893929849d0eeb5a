package undecodable

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func TestDecide(t *testing.T) {
	deleting := metav1.Now()
	standIn := &metav1.ObjectMeta{Name: "p", UID: "u1"}
	beingDeleted := &metav1.ObjectMeta{Name: "p", UID: "u1", DeletionTimestamp: &deleting}
	same := &metav1.ObjectMeta{Name: "p", UID: "u1"}
	older := &metav1.ObjectMeta{Name: "p", UID: types.UID("u0")}
	cases := map[string]struct {
		typ     watch.EventType
		standIn *metav1.ObjectMeta
		cached  *metav1.ObjectMeta
		want    outcome
	}{
		"1: list item of a cached object keeps its cached version":        {listItem, standIn, same, deliverCached},
		"1: ADDED of a cached object (initial events) keeps it":           {watch.Added, standIn, same, deliverCached},
		"2: list item of a new object is not seen":                        {listItem, standIn, nil, drop},
		"2: ADDED of a new object is not seen":                            {watch.Added, standIn, nil, drop},
		"2: list item of a recreated object drops the older one":          {listItem, standIn, older, drop},
		"2: ADDED of a recreated object is not seen":                      {watch.Added, standIn, older, drop},
		"3: MODIFIED starting a cached object's deletion is delivered":    {watch.Modified, beingDeleted, same, deliverDeleting},
		"4: MODIFIED of a cached object leaves the cached version":        {watch.Modified, standIn, same, drop},
		"4: MODIFIED of an object never seen is not seen":                 {watch.Modified, standIn, nil, drop},
		"4: MODIFIED deleting an object never seen is not seen":           {watch.Modified, beingDeleted, nil, drop},
		"4: MODIFIED deleting a recreated object leaves the older one":    {watch.Modified, beingDeleted, older, drop},
		"5: DELETED of a cached object deletes it":                        {watch.Deleted, standIn, same, deliverDeleted},
		"5: DELETED of a name cached with another UID deletes the cached": {watch.Deleted, standIn, older, deliverDeleted},
		"6: DELETED of an object never seen is dropped":                   {watch.Deleted, standIn, nil, drop},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var cached metav1.Object
			if c.cached != nil {
				cached = c.cached
			}
			if got := decide(c.typ, c.standIn, cached); got != c.want {
				t.Errorf("decide = %d, want %d", got, c.want)
			}
		})
	}
}
