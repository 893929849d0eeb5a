//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lifeboat-dev/lifeboat/config/rbac"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

// suite is the shared environment every scenario runs on. It is set once by
// TestMain before any test runs and only read afterwards.
var suite *suiteEnv

type suiteEnv struct {
	// lifeboat is the binary under test.
	lifeboat string
	// state is the shared environment.
	state *localenv.State
	// bins are the Kubernetes components (kubectl for the seeds' commands).
	bins components.Binaries
	// cacheDir is where components are built.
	cacheDir string
}

// Flags that shorten the controllers' periods for the suite. The
// scenarios run in parallel in one environment, so one scenario's failover
// in flight would hold another's clean-up for up to
// --graceful-eviction-hold (1m by default); 5s keeps the hold and its
// bound exercised without stretching the scenarios' deadlines.
var controllerManagerArgs = []string{"--graceful-eviction-hold=5s"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	bin, cleanupBin, err := lifeboatBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer cleanupBin()
	cacheDir := components.DefaultCacheDir()

	dir := os.Getenv("LIFEBOAT_E2E_STATE_DIR")
	owned := dir == ""
	if owned {
		tmp, err := os.MkdirTemp("", "lifeboat-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		envDir := filepath.Join(tmp, "env")
		dir = envDir
		// A kept environment keeps its state directory: its processes
		// can only be stopped through it. So does one that down could not
		// stop cleanly (a host node's mounts may still be under it).
		defer func() {
			if os.Getenv("LIFEBOAT_E2E_KEEP") != "" {
				fmt.Printf("e2e: keeping the environment in %s\n", envDir)
				return
			}
			if _, err := os.Stat(envDir); err == nil {
				down := exec.Command(bin, "down", "--state-dir", envDir)
				down.Stdout, down.Stderr = os.Stdout, os.Stderr
				if err := down.Run(); err != nil {
					fmt.Fprintf(os.Stderr, "e2e: lifeboat down failed, keeping %s: %v\n", tmp, err)
					return
				}
			}
			os.RemoveAll(tmp)
		}()
		if hostMode() {
			inCluster, err := setUpHost(ctx, bin, cacheDir, dir)
			if err != nil {
				fmt.Fprintln(os.Stderr, "e2e-host:", err)
				return 1
			}
			dir = inCluster.Dir
		} else {
			// Kyverno in every member: the member side of the Flink stateful
			// failover (flink_test.go) runs on the real thing.
			args := []string{"up", "--members", "3", "--with-kyverno", "--state-dir", dir, "--cache-dir", cacheDir,
				// The kinds of the interpreter tests (Widgets).
				"--member-propagate-resource", "*.example.lifeboat.dev"}
			for _, a := range controllerManagerArgs {
				args = append(args, "--controller-manager-arg="+a)
			}
			start := time.Now()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: lifeboat up failed: %v\n", err)
				return 1
			}
			fmt.Printf("e2e: shared environment up in %s\n", time.Since(start).Round(time.Second))
		}
	} else if hostMode() {
		fmt.Fprintln(os.Stderr, "e2e-host: the host suite starts its own environment; unset LIFEBOAT_E2E_STATE_DIR")
		return 1
	}
	state, err := localenv.Load(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	bins, err := components.Ensure(ctx, cacheDir, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	suite = &suiteEnv{lifeboat: bin, state: state, bins: bins, cacheDir: cacheDir}
	// Only what the controller manager logs during this run counts (a reused
	// environment has older lines).
	logOffset := controllerLogSize(state)
	code := m.Run()
	if hostMode() {
		if problems := tearDownHost(ctx); len(problems) > 0 {
			for _, p := range problems {
				fmt.Fprintln(os.Stderr, "e2e-host:", p)
			}
			return 1
		}
		return code
	}
	if problems := controllerLogTripwires(state, logOffset); len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: the controller manager logged %d problem(s) no test may cause:\n", len(problems))
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		return 1
	}
	return code
}

// controllerLogTripwires returns the log lines that mean a controller
// misbehaved whatever the scenario: a panic, or a write conflict reported as
// an error instead of being retried.
func controllerLogTripwires(s *localenv.State, offset int64) []string {
	data, err := os.ReadFile(controllerLog(s))
	if err != nil {
		return []string{"cannot read the controller manager's log: " + err.Error()}
	}
	if offset <= int64(len(data)) {
		data = data[offset:]
	}
	var problems []string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(line, "panic"):
			problems = append(problems, line)
		case strings.Contains(line, `"level":"error"`) && strings.Contains(line, "the object has been modified"):
			problems = append(problems, line)
		case strings.Contains(line, rbac.ControllerManagerUser) && strings.Contains(line, "cannot"):
			// The control plane refused the controller manager: its
			// ClusterRole (config/rbac/role.yaml, from the code's
			// +kubebuilder:rbac markers) lacks what the code does.
			problems = append(problems, line)
		}
		if len(problems) >= 20 {
			break
		}
	}
	return problems
}

// lifeboatBinary returns $LIFEBOAT_BIN or builds the binary into a temporary folder.
func lifeboatBinary() (string, func(), error) {
	if b := os.Getenv("LIFEBOAT_BIN"); b != "" {
		return b, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "lifeboat-bin-")
	if err != nil {
		return "", nil, err
	}
	out := filepath.Join(tmp, "lifeboat")
	cmd := exec.Command("go", "build", "-o", out, "github.com/lifeboat-dev/lifeboat/cmd/lifeboat")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("building lifeboat: %w", err)
	}
	return out, func() { os.RemoveAll(tmp) }, nil
}

func controllerLog(s *localenv.State) string {
	for _, c := range s.Components {
		if c.Name == "lifeboat-controller-manager" {
			return c.Log
		}
	}
	return ""
}

func controllerLogSize(s *localenv.State) int64 {
	fi, err := os.Stat(controllerLog(s))
	if err != nil {
		return 0
	}
	return fi.Size()
}
