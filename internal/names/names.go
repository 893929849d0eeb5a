// Package names makes valid object names out of names users chose: the
// name of a template's binding or Work is derived from the template's, and
// some kinds (RBAC objects) allow names that no other object may have.
package names

import (
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/util/rand"
)

// Hash is the FNV-32a hash of key in the alphabet of generated names
// (consonants and digits), as Karmada suffixes Work names.
func Hash(key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// Clean lower-cases s and turns every character other than a letter or a
// digit into '-', without '-' at either end: a DNS label's characters.
func Clean(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}

// Join returns base, cut to leave room, "-" and suffix within limit
// characters. The cut base loses the '-' and '.' it would end with, so a
// valid DNS subdomain base and an alphanumeric suffix give one.
func Join(base, suffix string, limit int) string {
	if keep := max(limit-len(suffix)-1, 0); len(base) > keep {
		base = strings.TrimRight(base[:keep], "-.")
	}
	if base == "" {
		return suffix
	}
	return base + "-" + suffix
}

// Hashed returns a valid DNS subdomain of at most limit characters for s,
// which is not one: s cleaned (Clean), cut to fit, and the Hash of key.
func Hashed(s string, limit int, key string) string {
	return Join(Clean(s), Hash(key), limit)
}
