package detector

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// kindInfo is what discovery says about one served kind.
type kindInfo struct {
	Resource   schema.GroupVersionResource
	Namespaced bool
}

// ServerResourcesFunc lists the resources the control plane serves, as
// discovery.DiscoveryInterface.ServerGroupsAndResources does (its group list
// is ignored). A partial failure (discovery.ErrGroupDiscoveryFailed) still
// returns what was found.
type ServerResourcesFunc func() ([]*metav1.APIResourceList, error)

// DiscoveryServerResources adapts a discovery client.
func DiscoveryServerResources(d discovery.DiscoveryInterface) ServerResourcesFunc {
	return func() ([]*metav1.APIResourceList, error) {
		_, lists, err := d.ServerGroupsAndResources()
		return lists, err
	}
}

// servedKinds is the detector's view of discovery: every kind (in every
// served version) that can be listed and watched. Safe for concurrent use.
type servedKinds struct {
	mu    sync.RWMutex
	kinds map[schema.GroupVersionKind]kindInfo
	ready bool
}

// lookup returns the kind's info; ready is false until the first discovery.
func (s *servedKinds) lookup(gvk schema.GroupVersionKind) (info kindInfo, served, ready bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	info, served = s.kinds[gvk]
	return info, served, s.ready
}

// replace installs a new discovery result and reports whether the set of
// served kinds changed.
func (s *servedKinds) replace(kinds map[schema.GroupVersionKind]kindInfo) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := !s.ready || len(kinds) != len(s.kinds)
	if !changed {
		for gvk, info := range kinds {
			if old, ok := s.kinds[gvk]; !ok || old != info {
				changed = true
				break
			}
		}
	}
	s.kinds, s.ready = kinds, true
	return changed
}

// parseServedKinds turns discovery lists into the served-kind map, keeping
// top-level resources with the list and watch verbs. A partial discovery
// failure is tolerated; any other error is returned.
func parseServedKinds(lists []*metav1.APIResourceList, err error) (map[schema.GroupVersionKind]kindInfo, error) {
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering served resources: %w", err)
	}
	out := map[schema.GroupVersionKind]kindInfo{}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch") {
				continue
			}
			gvk := gv.WithKind(r.Kind)
			out[gvk] = kindInfo{Resource: gv.WithResource(r.Name), Namespaced: r.Namespaced}
		}
	}
	return out, nil
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range verbs {
			if v == w {
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

// servedVersionsOf lists the served versions of a group and kind, for a
// helpful message.
func (s *servedKinds) servedVersionsOf(gk schema.GroupKind) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for gvk := range s.kinds {
		if gvk.GroupKind() == gk {
			out = append(out, gvk.GroupVersion().String())
		}
	}
	sort.Strings(out)
	return out
}

// unservedMessage is the Event message for a selector whose kind is not
// served.
func unservedMessage(gvk schema.GroupVersionKind, otherVersions []string) string {
	msg := fmt.Sprintf("no kind %s is served for apiVersion %s", gvk.Kind, gvk.GroupVersion().String())
	if len(otherVersions) > 0 {
		msg += fmt.Sprintf(" (served in: %s)", strings.Join(otherVersions, ", "))
	}
	return msg + "; retried when the API server's resources change"
}
