// Package intern makes the strings that cached objects repeat share one
// copy.
//
// At thousands of workloads most of the strings in the controller manager's
// caches are the same few hundred: label and annotation keys, a policy's
// name and permanent ID on every object it claimed, the applied-placement
// annotation of every binding, the namespace, condition reasons and
// messages, cluster names. Decoding gives each object its own copy. The
// functions here replace those copies with canonical ones (Go's unique
// package), which are freed once no cached object uses them.
//
// Names, UIDs and resource versions are left alone: they are unique to an
// object, and a canonical copy would only add the interning table's entry.
package intern

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// String returns the canonical copy of s.
func String(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// Map returns a map with m's keys and values interned; nil and empty maps
// are returned as they are. m is not modified.
func Map(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[String(k)] = String(v)
	}
	return out
}

// Slice interns the elements of s in place.
func Slice(s []string) {
	for i := range s {
		s[i] = String(s[i])
	}
}

// Meta interns the metadata objects of a kind share, in place: the
// namespace, the labels and annotations, the finalizers and the owner
// references' apiVersion and kind.
func Meta(m *metav1.ObjectMeta) {
	m.Namespace = String(m.Namespace)
	m.Labels = Map(m.Labels)
	m.Annotations = Map(m.Annotations)
	Slice(m.Finalizers)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion = String(r.APIVersion)
		r.Kind = String(r.Kind)
	}
}

// Conditions interns each condition's type, status, reason and message in
// place.
func Conditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type = String(c.Type)
		c.Status = metav1.ConditionStatus(String(string(c.Status)))
		c.Reason = String(c.Reason)
		c.Message = String(c.Message)
	}
}
