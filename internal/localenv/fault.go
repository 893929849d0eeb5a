package localenv

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

// StopAPIServer simulates an outage of cluster (a member, or the control
// plane, ControlPlaneName): it stops the cluster's kube-apiserver by its
// recorded PID and marks it stopped, so that the supervisor does not start
// it again. The cluster's other components keep running and reconnect when
// it returns.
//
// A graceful stop (SIGTERM) is what a stopped API server does: it refuses
// new connections at once but holds the open ones (watches) until it exits,
// here up to 10 s, when it is killed. kill ends it with SIGKILL at once, as
// a crash does: every connection to it is reset.
func StopAPIServer(dir, cluster string, kill bool) error {
	name, err := apiServerName(dir, cluster)
	if err != nil {
		return err
	}
	return stopNamed(dir, name, kill)
}

// StartAPIServer starts a kube-apiserver stopped by StopAPIServer again,
// with the same flags and port, and waits until it is ready. The cluster's
// other Kubernetes components (a member's kube-controller-manager,
// kube-scheduler, kwok and Kyverno; the control plane's
// kube-controller-manager) are restarted too: after an outage their
// clients back off for up to a minute before they notice the API server is
// back, which no real cluster would show, and Kyverno exits during the
// outage when it cannot renew its leader lease. Lifeboat's controller
// manager is not: how it comes through an outage of the control plane is
// what the environment is there to show.
func StartAPIServer(ctx context.Context, dir, cluster string) error {
	name, err := apiServerName(dir, cluster)
	if err != nil {
		return err
	}
	if err := StartComponent(ctx, dir, name); err != nil {
		return err
	}
	s, err := Load(dir)
	if err != nil {
		return err
	}
	for _, c := range s.Components {
		// The proxy in front of the member is the network, not the
		// member: it is left as it is.
		if c.Cluster != cluster || c.Name == name || c.Name == ControllerManagerComponent || c.Name == proxyComponent(cluster) {
			continue
		}
		if err := RestartComponent(ctx, dir, c.Name); err != nil {
			return err
		}
	}
	return nil
}

// StopClusterOrComponent stops the API server of the cluster named target
// (StopAPIServer), or, when no cluster has that name, the component of
// that name (StopComponent, gracefully unless kill). It says which it
// stopped.
func StopClusterOrComponent(dir, target string, kill bool) (cluster bool, err error) {
	if cluster, err = isCluster(dir, target); err != nil {
		return false, err
	}
	if cluster {
		return true, StopAPIServer(dir, target, kill)
	}
	return false, stopNamed(dir, target, kill)
}

// StartClusterOrComponent starts target again: a cluster's API server (see
// StartAPIServer), or a component stopped with StopClusterOrComponent (see
// StartComponent). cluster says which it was.
func StartClusterOrComponent(ctx context.Context, dir, target string) (cluster bool, err error) {
	if cluster, err = isCluster(dir, target); err != nil {
		return false, err
	}
	if cluster {
		return true, StartAPIServer(ctx, dir, target)
	}
	return false, StartComponent(ctx, dir, target)
}

// isCluster says whether target names a cluster of the environment in dir
// rather than a component; it is an error when it names neither.
func isCluster(dir, target string) (bool, error) {
	s, err := Load(dir)
	if err != nil {
		return false, err
	}
	if _, ok := s.Cluster(target); ok {
		return true, nil
	}
	if _, err := componentIndex(s, target); err != nil {
		return false, fmt.Errorf("%q is neither a cluster (%v) nor a component of the environment (lifeboat status lists them)", target, clusterNames(s))
	}
	return false, nil
}

func clusterNames(s *State) []string {
	var names []string
	for _, c := range s.Clusters {
		names = append(names, c.Name)
	}
	return names
}

// StopComponent stops one recorded component by name (for example
// lifeboat-controller-manager), by its PID, and marks it stopped so that
// the supervisor leaves it alone; StartComponent starts it again.
func StopComponent(dir, name string) error {
	return stopNamed(dir, name, false)
}

// errAlreadyStopped says that a component was stopped on purpose before and
// is not running.
var errAlreadyStopped = errors.New("already stopped")

// stopNamed marks component name stopped and then stops its process
// gracefully (SIGTERM, then SIGKILL after 10 s) or, with kill, with SIGKILL
// at once. The mark is saved, under the state lock, before the process is
// signalled: the supervisor decides under the same lock, so it either
// started the process that is signalled here, or sees the mark and starts
// nothing. A component that had exited on its own is only marked.
func stopNamed(dir, name string, kill bool) error {
	var c Component
	err := withStateLock(dir, func(s *State) error {
		i, err := componentIndex(s, name)
		if err != nil {
			return err
		}
		c = s.Components[i]
		if c.Stopped && !c.Process.Alive() {
			return fmt.Errorf("%s is %w", name, errAlreadyStopped)
		}
		s.Components[i].Stopped = true
		return nil
	})
	if err != nil {
		return err
	}
	if kill {
		if err := c.Process.Kill(); err != nil {
			return fmt.Errorf("killing %s: %w", name, err)
		}
		return nil
	}
	if err := c.Process.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("stopping %s: %w", name, err)
	}
	return nil
}

// startAttempts bounds how often StartComponent starts a component that
// exits before it answers healthy: a member's kwok or controllers may crash
// once on the API server they start against a moment after it came back.
const startAttempts = 3

// StartComponent starts a component that is not running (stopped with
// StopComponent, or exited) with the same flags, and waits until it is
// healthy. A process that exits before it is healthy is started again, up
// to startAttempts in all; one the supervisor started meanwhile is waited
// for instead.
func StartComponent(ctx context.Context, dir, name string) error {
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = startOnce(ctx, dir, name, attempt > 1); err == nil || !errors.Is(err, errExited) {
			return err
		}
	}
	return err
}

// startOnce starts name and waits until it is healthy; again says that an
// earlier attempt's process exited, so a running process (the supervisor's)
// is waited for instead of refused.
func startOnce(ctx context.Context, dir, name string, again bool) error {
	var (
		s *State
		c Component
	)
	// Started and recorded in one locked write, with the stopped mark
	// cleared: the supervisor sees either the stopped component or the
	// running one, never a component to start.
	err := withStateLock(dir, func(st *State) error {
		i, err := componentIndex(st, name)
		if err != nil {
			return err
		}
		c = st.Components[i]
		s = st
		if c.Process.Alive() {
			if again {
				return nil
			}
			return fmt.Errorf("%s is already running (pid %d)", name, c.Process.PID)
		}
		rec, err := process.Start(c.Binary, c.Args, c.Env, c.Log)
		if err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		c.Process, c.Started, c.Stopped = rec, time.Now(), false
		st.Components[i] = c
		return nil
	})
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, c, checkFor(s, c), 90*time.Second); err != nil {
		return fmt.Errorf("%s did not become healthy: %w\n--- last lines of %s ---\n%s", c.Name, err, filepath.Base(c.Log), logTail(c.Log, 25))
	}
	return nil
}

// RestartComponent stops a component by its PID and starts it again with
// the same flags, or just starts one that is no longer running (one stopped
// on purpose, or one that exited and that the supervisor has not started
// again yet).
func RestartComponent(ctx context.Context, dir, name string) error {
	if err := stopNamed(dir, name, false); err != nil && !errors.Is(err, errAlreadyStopped) {
		return err
	}
	return StartComponent(ctx, dir, name)
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

// apiServerName validates cluster (a member or the control plane) and
// returns its API server's component name.
func apiServerName(dir, cluster string) (string, error) {
	s, err := Load(dir)
	if err != nil {
		return "", err
	}
	if _, ok := s.Cluster(cluster); !ok {
		return "", fmt.Errorf("no cluster %q in the local environment (the control plane %s, members: %v)", cluster, ControlPlaneName, s.Members())
	}
	return cluster + "-apiserver", nil
}
