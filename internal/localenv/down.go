package localenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Down stops every process recorded in dir's state, newest first, by its PID,
// and removes the state directory. A missing environment is ErrNotFound.
// The directory is kept when a process could not be stopped, so that its
// record is not lost.
//
// Every component is marked stopped first, under the state lock: from then
// on the supervisor starts nothing, so the records read in that write are
// the processes that run.
func Down(dir string, out io.Writer) error {
	var s *State
	err := withStateLock(dir, func(st *State) error {
		for i := range st.Components {
			st.Components[i].Stopped = true
		}
		s = st
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	kubeProxy := ""
	for i := len(s.Components) - 1; i >= 0; i-- {
		c := s.Components[i]
		alive := c.Process.Alive()
		switch {
		case c.Name == HostKubeProxyComponent:
			kubeProxy = c.Binary
		case c.Name == HostContainerdComponent && alive:
			// The kubelet is stopped (it started later): remove its
			// pods through containerd, or their containers and network
			// namespaces would outlive the node.
			if err := tearDownHostPods(s, func(msg string) { fmt.Fprintln(out, msg) }); err != nil {
				errs = append(errs, fmt.Errorf("removing the host node's pods: %w", err))
			}
		}
		if err := c.Process.Stop(10 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", c.Name, err))
			continue
		}
		if alive {
			fmt.Fprintf(out, "stopped %s (pid %d)\n", c.Name, c.Process.PID)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := tearDownHost(s, kubeProxy); err != nil {
		return fmt.Errorf("undoing the host cluster's changes to the machine (the state directory is kept): %w", err)
	}
	if s.Host != nil {
		fmt.Fprintln(out, "removed the host cluster's network, mounts and kernel settings")
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("removing %s: %w", s.Dir, err)
	}
	fmt.Fprintf(out, "removed %s\n", filepath.Clean(s.Dir))
	return nil
}
