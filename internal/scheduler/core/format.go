package core

import (
	"fmt"
	"sort"
	"strings"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// FormatTargets renders a placement as {member1:2, member2:1}, sorted by
// name, as the scheduler's conditions and Events show it.
func FormatTargets(ts []workv1alpha2.TargetCluster) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s:%d", t.Name, t.Replicas))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}
