package core

import (
	"fmt"
	"sort"
	"strings"
)

// FitError says that no cluster passed the filters. Reasons counts the
// clusters per (first) failing reason.
type FitError struct {
	// NumClusters is the number of clusters considered.
	NumClusters int
	// Reasons maps a reason ("cluster(s) had untolerated taint {k: v}") to
	// the number of clusters that failed with it.
	Reasons map[string]int
}

// Error reads like "0/3 clusters are available: 1 cluster(s) had
// untolerated taint {cluster.karmada.io/unschedulable: }, 2 cluster(s) did
// not match the placement cluster affinity constraint."
func (e *FitError) Error() string {
	if e.NumClusters == 0 {
		return "0/0 clusters are available: no clusters are registered."
	}
	parts := make([]string, 0, len(e.Reasons))
	for reason, n := range e.Reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d clusters are available: %s.", e.NumClusters, strings.Join(parts, ", "))
}

// UnschedulableError says that clusters passed the filters but the placement
// cannot be satisfied with them (too few groups, too little capacity). It is
// worth retrying later: capacity changes without any spec change.
type UnschedulableError struct {
	Message string
}

func (e *UnschedulableError) Error() string { return e.Message }

func unschedulable(format string, args ...any) error {
	return &UnschedulableError{Message: fmt.Sprintf(format, args...)}
}
