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
//
// A graceful stop (SIGTERM) is what a stopped API server does: it refuses
// new connections at once but holds the open ones (watches) until it exits,
// here up to 10 s, when it is killed. kill ends it with SIGKILL at once, as
// a crash does: every connection to it is reset.
func StopAPIServer(dir, member string, kill bool) error {
	name, err := apiServerName(dir, member)
	if err != nil {
		return err
	}
	return stopNamed(dir, name, kill)
}

// StartAPIServer restarts a member's kube-apiserver stopped by StopAPIServer,
// with the same flags and port, and waits until it is ready. The member's
// kube-controller-manager, kube-scheduler and kwok are restarted too: after
// an outage their clients back off for up to a minute before they notice the
// API server is back, which no real member would show. So is its Kyverno,
// when the environment runs one (it exits during the outage).
func StartAPIServer(ctx context.Context, dir, member string) error {
	name, err := apiServerName(dir, member)
	if err != nil {
		return err
	}
	if err := StartComponent(ctx, dir, name); err != nil {
		return err
	}
	for _, c := range []string{member + "-controller-manager", member + "-scheduler", member + "-kwok"} {
		if err := StopComponent(dir, c); err != nil {
			return err
		}
		if err := StartComponent(ctx, dir, c); err != nil {
			return err
		}
	}
	// Kyverno, when the environment runs it, exits about ten seconds into
	// the outage, when it cannot renew its leader lease (in a cluster its
	// Pod would be restarted): start it again, whether or not it is still
	// running.
	s, err := Load(dir)
	if err != nil {
		return err
	}
	if i, err := componentIndex(s, KyvernoComponent(member)); err == nil {
		if s.Components[i].Process.Alive() {
			if err := stopComponent(s, i, false); err != nil {
				return err
			}
		}
		if err := startComponent(ctx, s, i); err != nil {
			return err
		}
	}
	return nil
}

// StopComponent stops one recorded component by name (for example
// lifeboat-controller-manager), by its PID; StartComponent starts it again.
func StopComponent(dir, name string) error {
	return stopNamed(dir, name, false)
}

func stopNamed(dir, name string, kill bool) error {
	s, i, err := loadComponent(dir, name)
	if err != nil {
		return err
	}
	return stopComponent(s, i, kill)
}

// StartComponent restarts a component stopped with StopComponent, with the
// same flags, and waits until it is healthy.
func StartComponent(ctx context.Context, dir, name string) error {
	s, i, err := loadComponent(dir, name)
	if err != nil {
		return err
	}
	return startComponent(ctx, s, i)
}

// RestartComponent stops a running component by its PID and starts it
// again with the same flags, or just starts one that is no longer running
// (a controller manager exits when it loses its leader lease, for example
// while the control plane's API server restarts).
func RestartComponent(ctx context.Context, dir, name string) error {
	s, i, err := loadComponent(dir, name)
	if err != nil {
		return err
	}
	if s.Components[i].Process.Alive() {
		if err := stopComponent(s, i, false); err != nil {
			return err
		}
	}
	return startComponent(ctx, s, i)
}

// loadComponent loads the environment in dir and finds component name.
func loadComponent(dir, name string) (*State, int, error) {
	s, err := Load(dir)
	if err != nil {
		return nil, -1, err
	}
	i, err := componentIndex(s, name)
	if err != nil {
		return nil, -1, err
	}
	return s, i, nil
}

func componentIndex(s *State, name string) (int, error) {
	var names []string
	for i, c := range s.Components {
		if c.Name == name {
			return i, nil
		}
		names = append(names, c.Name)
	}
	return -1, fmt.Errorf("no component %q in the local environment (components: %v)", name, names)
}

// stopComponent stops component i gracefully (SIGTERM, then SIGKILL after
// 10 s) or, with kill, with SIGKILL at once.
func stopComponent(s *State, i int, kill bool) error {
	c := &s.Components[i]
	if !c.Process.Alive() {
		return fmt.Errorf("%s is already stopped", c.Name)
	}
	if kill {
		if err := c.Process.Kill(); err != nil {
			return fmt.Errorf("killing %s: %w", c.Name, err)
		}
		return nil
	}
	if err := c.Process.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("stopping %s: %w", c.Name, err)
	}
	// The record stays as it is: a stopped process is one that is not
	// Alive any more.
	return nil
}

func startComponent(ctx context.Context, s *State, i int) error {
	c := &s.Components[i]
	if c.Process.Alive() {
		return fmt.Errorf("%s is already running (pid %d)", c.Name, c.Process.PID)
	}
	rec, err := process.Start(c.Binary, c.Args, c.Env, c.Log)
	if rec.PID > 0 {
		c.Process = rec
		// Other lifeboat processes may update other components of the same
		// environment at the same time: record only this one, under the
		// state lock, on a fresh read.
		if serr := updateComponent(s.Dir, c.Name, func(stored *Component) { stored.Process = rec }); serr != nil {
			return serr
		}
	}
	if err != nil {
		return fmt.Errorf("starting %s: %w", c.Name, err)
	}
	if err := waitHealthy(ctx, *c, checkFor(s, *c), 90*time.Second); err != nil {
		return fmt.Errorf("%s did not become healthy: %w\n--- last lines of %s ---\n%s", c.Name, err, filepath.Base(c.Log), logTail(c.Log, 25))
	}
	return nil
}

// apiServerName validates member and returns its API server's component name.
func apiServerName(dir, member string) (string, error) {
	s, err := Load(dir)
	if err != nil {
		return "", err
	}
	if info, ok := s.Cluster(member); !ok || !info.Member {
		return "", fmt.Errorf("no member %q in the local environment (members: %v)", member, s.Members())
	}
	return member + "-apiserver", nil
}
