package localenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

// StopAPIServer simulates a member outage: it stops the member's
// kube-apiserver (by its recorded PID) and records it as stopped. The
// member's other components keep running and reconnect when it returns.
func StopAPIServer(dir, member string) error {
	s, err := Load(dir)
	if err != nil {
		return err
	}
	i, err := apiServerIndex(s, member)
	if err != nil {
		return err
	}
	c := &s.Components[i]
	if !c.Process.Alive() {
		return fmt.Errorf("%s is already stopped", c.Name)
	}
	if err := c.Process.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("stopping %s: %w", c.Name, err)
	}
	return s.save()
}

// StartAPIServer restarts a member's kube-apiserver stopped by StopAPIServer,
// with the same flags and port, and waits until it is ready.
func StartAPIServer(ctx context.Context, dir, member string) error {
	s, err := Load(dir)
	if err != nil {
		return err
	}
	i, err := apiServerIndex(s, member)
	if err != nil {
		return err
	}
	c := &s.Components[i]
	if c.Process.Alive() {
		return fmt.Errorf("%s is already running (pid %d)", c.Name, c.Process.PID)
	}
	rec, err := process.Start(c.Binary, c.Args, nil, c.Log)
	if rec.PID > 0 {
		c.Process = rec
		if serr := s.save(); serr != nil {
			return serr
		}
	}
	if err != nil {
		return fmt.Errorf("starting %s: %w", c.Name, err)
	}
	info, _ := s.Cluster(member)
	h := healthCheck{caFile: s.CAPath(), token: info.Token}
	if err := waitHealthy(ctx, *c, h, 90*time.Second); err != nil {
		return fmt.Errorf("%s did not become healthy: %w\n--- last lines of %s ---\n%s", c.Name, err, filepath.Base(c.Log), logTail(c.Log, 25))
	}
	return nil
}

func apiServerIndex(s *State, member string) (int, error) {
	info, ok := s.Cluster(member)
	if !ok || !info.Member {
		return -1, fmt.Errorf("no member %q in the local environment (members: %v)", member, s.Members())
	}
	for i, c := range s.Components {
		if c.Name == member+"-apiserver" {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no API server recorded for %s", member)
}
