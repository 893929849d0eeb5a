package localenv

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

// RestartComponent starts a component that has exited, and restarts one
// that runs, each time under a new PID.
func TestRestartComponent(t *testing.T) {
	dir := sleeperEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid := func() int {
		t.Helper()
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Components[0].Process.Alive() {
			t.Fatal("sleeper is not running")
		}
		return s.Components[0].Process.PID
	}

	if err := RestartComponent(ctx, dir, "sleeper"); err != nil {
		t.Fatalf("restarting a component that never ran: %v", err)
	}
	first := pid()
	if err := RestartComponent(ctx, dir, "sleeper"); err != nil {
		t.Fatalf("restarting a running component: %v", err)
	}
	second := pid()
	if second == first {
		t.Errorf("still pid %d after a restart", first)
	}
	if err := StopComponent(dir, "sleeper"); err != nil {
		t.Fatal(err)
	}
	if err := RestartComponent(ctx, dir, "sleeper"); err != nil {
		t.Fatalf("restarting a component that exited: %v", err)
	}
	if third := pid(); third == second {
		t.Errorf("still pid %d after starting it again", second)
	}
	if err := RestartComponent(ctx, dir, "nosuch"); err == nil {
		t.Error("restarting an unknown component did not fail")
	}
}

// An outage of the control plane: env stop lifeboat stops the control
// plane's API server and keeps it down; env start brings it back and
// restarts the control plane's kube-controller-manager, but leaves
// Lifeboat's controller manager (and every member) alone.
func TestControlPlaneAPIServerStopAndStart(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"logs", "pki"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// API servers are probed over TLS with the environment's CA and a token.
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer cp-token" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer api.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "pki", "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plain.Close()
	sleeper := func(name, cluster, health string) Component {
		return Component{Name: name, Cluster: cluster, Binary: "/bin/sleep", Args: []string{"300"},
			Log: filepath.Join(dir, "logs", name+".log"), Health: health, Supervised: true}
	}
	s := &State{Dir: dir,
		Clusters: []ClusterInfo{{Name: ControlPlaneName, Token: "cp-token"}, {Name: "member1", Member: true, Token: "m1"}},
		Components: []Component{
			sleeper(ControlPlaneName+"-apiserver", ControlPlaneName, api.URL),
			sleeper(ControlPlaneName+"-kube-controller-manager", ControlPlaneName, plain.URL),
			sleeper("member1-scheduler", "member1", plain.URL),
			sleeper(ControllerManagerComponent, ControlPlaneName, plain.URL),
		}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range s.Components {
		if err := StartComponent(ctx, dir, c.Name); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, c := range s.Components {
			_ = StopComponent(dir, c.Name)
		}
	})
	running := func() map[string]process.Record {
		t.Helper()
		got, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]process.Record{}
		for _, c := range got.Components {
			if c.Process.Alive() {
				m[c.Name] = c.Process
			}
		}
		return m
	}
	pids := running()

	if err := StopAPIServer(dir, ControlPlaneName, false); err != nil {
		t.Fatalf("stopping the control plane's API server: %v", err)
	}
	if _, ok := running()[ControlPlaneName+"-apiserver"]; ok {
		t.Fatal("the control plane's API server still runs")
	}
	if c := mustComponent(t, dir, ControlPlaneName+"-apiserver"); !c.Stopped {
		t.Error("the stopped API server is not marked stopped: the supervisor would start it again")
	}
	if err := StartAPIServer(ctx, dir, ControlPlaneName); err != nil {
		t.Fatalf("starting the control plane's API server: %v", err)
	}
	after := running()
	if r, ok := after[ControlPlaneName+"-apiserver"]; !ok || r == pids[ControlPlaneName+"-apiserver"] {
		t.Error("the control plane's API server was not started again")
	}
	if r, ok := after[ControlPlaneName+"-kube-controller-manager"]; !ok || r == pids[ControlPlaneName+"-kube-controller-manager"] {
		t.Error("the control plane's kube-controller-manager was not restarted")
	}
	for _, same := range []string{ControllerManagerComponent, "member1-scheduler"} {
		if after[same] != pids[same] {
			t.Errorf("%s was restarted (pid %d → %d)", same, pids[same].PID, after[same].PID)
		}
	}
	if err := StopAPIServer(dir, "member9", false); err == nil {
		t.Error("stopping an unknown cluster's API server did not fail")
	}
}

// mustComponent returns component name's record in the state at dir.
func mustComponent(t *testing.T, dir, name string) Component {
	t.Helper()
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	i, err := componentIndex(s, name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Components[i]
}

// A component that exits before it is healthy (a member's kwok crashing on
// an API server that just came back) is started again; one that keeps
// exiting fails after startAttempts, naming the exit.
func TestStartComponentRetriesAnEarlyExit(t *testing.T) {
	cases := map[string]struct {
		// script runs as the component with $1 a marker path; it is
		// healthy once $1.up exists.
		script  string
		wantErr bool
	}{
		"exits once, then runs": {script: `if [ -e "$1" ]; then touch "$1.up"; exec sleep 30; fi; touch "$1"; exit 1`},
		"always exits":          {script: `exit 1`, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(dir, "marker")
			health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if _, err := os.Stat(marker + ".up"); err != nil {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			defer health.Close()
			s := &State{Dir: dir, Components: []Component{{
				Name: "flaky", Binary: "/bin/sh", Args: []string{"-c", tc.script, "flaky", marker},
				Log: filepath.Join(dir, "logs", "flaky.log"), Health: health.URL,
			}}}
			if err := s.save(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = StopComponent(dir, "flaky") })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := StartComponent(ctx, dir, "flaky")
			if tc.wantErr {
				if err == nil || !errors.Is(err, errExited) {
					t.Fatalf("StartComponent = %v, want an exit after %d attempts", err, startAttempts)
				}
				return
			}
			if err != nil {
				t.Fatalf("StartComponent = %v, want the second start to run", err)
			}
			got, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Components[0].Process.Alive() {
				t.Error("the component is not running after StartComponent")
			}
		})
	}
}

// "env start" takes a component stopped with "env stop" as well as a
// cluster, and names both kinds for anything else.
func TestStartClusterOrComponent(t *testing.T) {
	dir := sleeperEnv(t, ClusterInfo{Name: "member1"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if cluster, err := StartClusterOrComponent(ctx, dir, "sleeper"); err != nil || cluster {
		t.Fatalf("starting a component: cluster %t, %v", cluster, err)
	}
	if cluster, err := StopClusterOrComponent(dir, "sleeper", false); err != nil || cluster {
		t.Fatalf("stopping it: cluster %t, %v", cluster, err)
	}
	if cluster, err := StartClusterOrComponent(ctx, dir, "sleeper"); err != nil || cluster {
		t.Fatalf("starting it again: cluster %t, %v", cluster, err)
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Components[0].Process.Alive() || s.Components[0].Stopped {
		t.Errorf("sleeper after env start: alive %t, stopped mark %t", s.Components[0].Process.Alive(), s.Components[0].Stopped)
	}
	_, err = StartClusterOrComponent(ctx, dir, "nothing")
	if err == nil || !strings.Contains(err.Error(), `"nothing" is neither a cluster ([member1]) nor a component`) {
		t.Errorf("an unknown name: %v", err)
	}
}

// sleeperEnv records an environment of clusters (none started) and one
// component, "sleeper", a 30 s sleep that a test server calls healthy;
// the sleeper is stopped when the test ends.
func sleeperEnv(t *testing.T, clusters ...ClusterInfo) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	healthy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(healthy.Close)
	s := &State{Dir: dir, Clusters: clusters, Components: []Component{{
		Name: "sleeper", Binary: "/bin/sleep", Args: []string{"30"},
		Log: filepath.Join(dir, "logs", "sleeper.log"), Health: healthy.URL,
	}}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = StopComponent(dir, "sleeper") })
	return dir
}
