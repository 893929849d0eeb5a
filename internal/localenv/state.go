package localenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

const stateFile = "state.json"

// ControlPlaneName is the name of the control plane's kubeconfig context.
const ControlPlaneName = "lifeboat"

// State is what the environment records about itself in DIR/state.json.
type State struct {
	// Dir is the absolute state directory.
	Dir string `json:"dir"`
	// Created is when `up` started.
	Created time.Time `json:"created"`
	// Ready is set once `up` has finished; an environment without it is
	// being started, or a start failed.
	Ready bool `json:"ready"`
	// Clusters are the control plane and the members, in order.
	Clusters []ClusterInfo `json:"clusters"`
	// Components are the processes, in start order.
	Components []Component `json:"components"`
	// Host records the host cluster, when the environment has one.
	Host *HostInfo `json:"host,omitempty"`
}

// ClusterInfo says how to reach one API server of the environment.
type ClusterInfo struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Token  string `json:"token"`
	// Member is false for the control plane.
	Member bool `json:"member"`
	// Endpoint is where the control plane reaches a member: the proxy of
	// partition.go in front of Server.
	Endpoint string `json:"endpoint,omitempty"`
	// Pull says the member is joined in Pull mode: its agent (component
	// memberN-agent) reaches the control plane at AgentEndpoint, the
	// proxy of partition.go in front of the control plane's API server
	// when the environment is partitionable, else the server itself.
	Pull          bool   `json:"pull,omitempty"`
	AgentEndpoint string `json:"agentEndpoint,omitempty"`
	// ControllerManagerToken authenticates the Lifeboat controller manager
	// as the user ControllerManagerUser, bound to the least-privilege
	// ClusterRole of config/rbac. Only the control plane has one.
	ControllerManagerToken string `json:"controllerManagerToken,omitempty"`
}

// Component is one process of the environment.
type Component struct {
	Name string `json:"name"`
	// Cluster is the cluster it belongs to ("" for the shared etcd).
	Cluster string   `json:"cluster,omitempty"`
	Binary  string   `json:"binary"`
	Args    []string `json:"args"`
	// Env are extra environment variables (NAME=value), kept for restarts.
	Env []string `json:"env,omitempty"`
	Log string   `json:"log"`
	// Health is the URL whose 200 answer means the component is healthy;
	// empty means that running is healthy.
	Health  string         `json:"health"`
	Process process.Record `json:"process"`
	// Started is when the recorded process was started.
	Started time.Time `json:"started,omitzero"`
	// Supervised components are started again by the environment's
	// supervisor (supervisor.go) when they exit, unless Stopped.
	Supervised bool `json:"supervised,omitempty"`
	// Stopped says the component was stopped on purpose (lifeboat env
	// stop or restart, lifeboat down): the supervisor leaves it alone until
	// it is started again. It is set before the process is signalled.
	Stopped bool `json:"stopped,omitempty"`
	// Restarts counts the supervisor's starts of the component.
	Restarts int `json:"restarts,omitempty"`
	// LastExit is how the component last ended on its own, as the
	// supervisor saw it.
	LastExit *Exit `json:"lastExit,omitempty"`
}

// Exit records how a supervised component's process ended on its own.
type Exit struct {
	// Process is the run that ended.
	Process process.Record `json:"process"`
	// Time is when the supervisor saw it gone.
	Time time.Time `json:"time"`
	// Reason is the exit status, when the supervisor started the process
	// and so could wait for it, and the last line of its log.
	Reason string `json:"reason"`
	// Failures counts the consecutive short runs that ended so (backoff.go).
	Failures int `json:"failures"`
	// RetryAt is when the supervisor starts the component again.
	RetryAt time.Time `json:"retryAt"`
}

// Members returns the member cluster names in order.
func (s *State) Members() []string {
	var names []string
	for _, c := range s.Clusters {
		if c.Member {
			names = append(names, c.Name)
		}
	}
	return names
}

// ServerGCPercent is the GOGC the environment's etcd was started with (see
// Options.ServerGCPercent); 0 when none was set.
func (s *State) ServerGCPercent() int {
	for _, c := range s.Components {
		if c.Name != etcdComponent {
			continue
		}
		for _, e := range c.Env {
			if v, ok := strings.CutPrefix(e, gogcPrefix); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
	}
	return 0
}

// memberInfos returns the member clusters in order.
func (s *State) memberInfos() []ClusterInfo {
	var cs []ClusterInfo
	for _, c := range s.Clusters {
		if c.Member {
			cs = append(cs, c)
		}
	}
	return cs
}

// Cluster returns the named cluster's connection info.
func (s *State) Cluster(name string) (ClusterInfo, bool) {
	for _, c := range s.Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return ClusterInfo{}, false
}

// KubeconfigPath is the kubeconfig with a context per cluster.
func (s *State) KubeconfigPath() string { return filepath.Join(s.Dir, "kubeconfig") }

// ControllerManagerKubeconfigPath is the control plane's kubeconfig for the
// Lifeboat controller manager: its own least-privilege identity, not admin.
func (s *State) ControllerManagerKubeconfigPath() string {
	return filepath.Join(s.Dir, ControlPlaneName, "controller-manager.kubeconfig")
}

// CAPath is the CA bundle that verifies every API server of the environment.
func (s *State) CAPath() string { return filepath.Join(s.Dir, "pki", "ca.crt") }

// save writes the state atomically: to a temporary file of its own, then a
// rename, so that a reader never sees half a file and two writers never share
// a temporary file.
func (s *State) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, stateFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	return os.Rename(tmp.Name(), filepath.Join(s.Dir, stateFile))
}

// updateComponent changes one component's record under the state lock
// (withStateLock).
func updateComponent(dir, name string, change func(*Component)) error {
	return withStateLock(dir, func(s *State) error {
		i, err := componentIndex(s, name)
		if err != nil {
			return err
		}
		change(&s.Components[i])
		return nil
	})
}

// withStateLock runs change on a fresh read of the state under an exclusive
// lock on the state directory and saves what it leaves, unless it fails.
// Every lifeboat process that changes a running environment (env start and
// stop of two members at once, the supervisor, down) goes through it, so
// that none loses another's update and each decides on what the others
// last wrote.
func withStateLock(dir string, change func(*State) error) error {
	// No lock file is left where there is no environment.
	if _, err := Load(dir); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".state.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("locking state: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking state: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	s, err := Load(dir)
	if err != nil {
		return err
	}
	if err := change(s); err != nil {
		return err
	}
	return s.save()
}

// ErrNotFound says there is no environment in the state directory.
var ErrNotFound = errors.New("no local environment found")

// Load reads the state of the environment in dir.
func Load(dir string) (*State, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(abs, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNotFound, abs)
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filepath.Join(abs, stateFile), err)
	}
	if !sameDir(s.Dir, abs) {
		// Everything the state names (the processes' files, what down
		// removes) is under the directory it records: a copy acted on would
		// stop, or remove, the original.
		return nil, fmt.Errorf("%s records the environment of %s, not of %s (a copy, or a moved directory): use --state-dir %s",
			filepath.Join(abs, stateFile), s.Dir, abs, s.Dir)
	}
	return &s, nil
}

// sameDir says whether recorded, a state's own directory, is dir, through
// symbolic links too.
func sameDir(recorded, dir string) bool {
	if recorded == "" || !filepath.IsAbs(recorded) {
		return false
	}
	if filepath.Clean(recorded) == filepath.Clean(dir) {
		return true
	}
	a, errA := filepath.EvalSymlinks(recorded)
	b, errB := filepath.EvalSymlinks(dir)
	return errA == nil && errB == nil && a == b
}
