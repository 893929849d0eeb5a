package localenv

import (
	"context"
	"sync"
	"time"
)

// ComponentStatus is one row of `lifeboat status`.
type ComponentStatus struct {
	Name    string
	PID     int
	Running bool
	Healthy bool
	// Detail says why a component is not healthy.
	Detail string
	// Supervised components are started again when they exit; Restarts
	// counts how often that happened, and LastExit is the last exit.
	Supervised bool
	Restarts   int
	LastExit   *Exit
}

// Status checks every recorded component: is its process running, and does its
// health URL answer 200.
func Status(ctx context.Context, s *State) []ComponentStatus {
	now := time.Now()
	rows := make([]ComponentStatus, len(s.Components))
	var wg sync.WaitGroup
	for i, c := range s.Components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := ComponentStatus{Name: c.Name, PID: c.Process.PID, Running: c.Process.Alive(),
				Supervised: c.Supervised, Restarts: c.Restarts, LastExit: c.LastExit}
			switch {
			case r.Running && c.Cluster != "" && c.Name == proxyComponent(c.Cluster) && s.Partitioned(c.Cluster):
				r.Detail = "the control plane's path to " + c.Cluster + " is cut (lifeboat env heal " + c.Cluster + " restores it)"
			case r.Running:
				if err := checkFor(s, c).probe(ctx, c.Health); err != nil {
					r.Detail = err.Error()
				} else {
					r.Healthy = true
				}
			default:
				r.Detail = notRunning(c, now)
			}
			rows[i] = r
		}()
	}
	wg.Wait()
	return rows
}

// notRunning says why a component that does not run is down and whether it
// comes back by itself.
func notRunning(c Component, now time.Time) string {
	switch {
	case c.Stopped:
		return "not running (stopped on request)"
	case !c.Supervised:
		return "not running"
	case c.LastExit == nil || c.LastExit.Process != c.Process:
		return "not running (exited)"
	case c.LastExit.RetryAt.After(now):
		return "not running (exited; the supervisor starts it again in " + c.LastExit.RetryAt.Sub(now).Round(time.Second).String() + ")"
	default:
		return "not running (exited; the supervisor starts it again now)"
	}
}
