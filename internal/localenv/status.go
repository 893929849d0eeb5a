package localenv

import (
	"context"
	"sync"
)

// ComponentStatus is one row of `lifeboat status`.
type ComponentStatus struct {
	Name    string
	PID     int
	Running bool
	Healthy bool
	// Detail says why a component is not healthy.
	Detail string
}

// Status checks every recorded component: is its process running, and does its
// health URL answer 200.
func Status(ctx context.Context, s *State) []ComponentStatus {
	rows := make([]ComponentStatus, len(s.Components))
	var wg sync.WaitGroup
	for i, c := range s.Components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := ComponentStatus{Name: c.Name, PID: c.Process.PID, Running: c.Process.Alive()}
			switch {
			case !r.Running:
				r.Detail = "not running"
			default:
				if err := checkFor(s, c).probe(ctx, c.Health); err != nil {
					r.Detail = err.Error()
				} else {
					r.Healthy = true
				}
			}
			rows[i] = r
		}()
	}
	wg.Wait()
	return rows
}
