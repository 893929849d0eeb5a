package failback

import (
	"fmt"
	"time"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
)

// States of a binding's failback, as `lifeboat failback` shows them.
const (
	// StateMoving: a failback was asked for and has not finished.
	StateMoving = "Moving"
	// StateDue: it moves back as soon as the fleet's cap and rate admit it.
	StateDue = "Due"
	// StateWaiting: it moves back when a window ends, if nothing changes.
	StateWaiting = "Waiting"
	// StateNone: nothing moves back.
	StateNone = "None"
)

// Pending is where one binding's failback stands.
type Pending struct {
	State   string    `json:"state"`
	Cluster string    `json:"cluster,omitempty"`
	At      time.Time `json:"at,omitzero"`
	Reason  string    `json:"reason"`
}

// Describe says where a binding's failback stands at now, with the
// decision the controller makes (Decide); the fleet's cap and rate are not
// part of it.
func Describe(labels, annotations map[string]string, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus,
	clusters []*clusterv1alpha1.Cluster, now time.Time) Pending {
	if v, ok := annotations[FailbackAnnotation]; ok {
		f, err := parseInFlight(v)
		if err != nil {
			return Pending{State: StateMoving, Reason: err.Error()}
		}
		return Pending{State: StateMoving, Cluster: f.cluster,
			Reason: fmt.Sprintf("moving back to %s; the current copy stays until the copy there is Healthy", f.cluster)}
	}
	d := Decide(Input{Spec: spec, Status: status, Clusters: clusters, Released: !scheduler.Claimed(labels), Now: now})
	switch d.Verdict {
	case Move:
		return Pending{State: StateDue, Cluster: d.Cluster, Reason: "goes back as soon as --failback-max-concurrent and --failback-rate admit it: " + d.Reason}
	case Wait:
		return Pending{State: StateWaiting, Cluster: d.Cluster, At: d.At, Reason: d.Reason}
	}
	return Pending{State: StateNone, Reason: d.Reason}
}
