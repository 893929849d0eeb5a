// Package agent is `lifeboat agent`, which runs inside a member cluster in
// Pull mode: it watches the Works of its cluster's execution namespace in
// the control plane, applies them to its own cluster and reports their
// status, with the same execution and work status controllers the control
// plane runs for Push clusters; it reports the cluster's status and renews
// the cluster's Lease, from which the control plane tells that the agent is
// gone. It deletes member objects only for Works the control plane
// deleted (their deletionTimestamp), never because it restarted.
package agent
