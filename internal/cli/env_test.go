package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// lifeboat status shows each component's restarts and how it last ended.
func TestPrintStatus(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	rows := []localenv.ComponentStatus{
		{Name: "lifeboat-apiserver", PID: 10, Supervised: true, Detail: "not running (stopped on request)"},
		{Name: localenv.ControllerManagerComponent, PID: 20, Running: true, Healthy: true, Supervised: true, Restarts: 2,
			LastExit: &localenv.Exit{Time: now.Add(-125 * time.Second), Reason: "exited: Error: running manager: leader election lost"}},
		{Name: "member1-kwok", PID: 30, Supervised: true, Restarts: 1, Detail: "not running (exited; the supervisor starts it again in 4s)",
			LastExit: &localenv.Exit{Time: now.Add(-2 * time.Second), Reason: "signal: killed"}},
		{Name: localenv.SupervisorComponent, PID: 40, Running: true, Healthy: true},
	}
	var b strings.Builder
	unhealthy, err := printStatus(&b, rows, now)
	if err != nil {
		t.Fatal(err)
	}
	if unhealthy != 2 {
		t.Errorf("%d unhealthy, want 2", unhealthy)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := [][]string{
		{"COMPONENT", "PID", "STATUS", "RESTARTS", "DETAIL"},
		{"lifeboat-apiserver", "10", "Unhealthy", "0", "not running (stopped on request)"},
		{"lifeboat-controller-manager", "20", "Healthy", "2", "last exit 2m5s ago: exited: Error: running manager: leader election lost"},
		{"member1-kwok", "30", "Unhealthy", "1", "not running (exited; the supervisor starts it again in 4s); last exit 2s ago: signal: killed"},
		{"lifeboat-supervisor", "40", "Healthy", "-"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, fields := range want {
		got := strings.Join(strings.Fields(lines[i]), " ")
		if w := strings.Join(fields, " "); got != w {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, w)
		}
	}
}

func TestDescribePullClusters(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	pull := func(name string) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
		return c
	}
	push := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-cluster", Name: "member3"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("member3/vm"), RenewTime: &metav1.MicroTime{Time: now.Add(-4 * time.Second)}}}
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pull("member3"), pull("edge1"), push, lease).Build()
	lines, err := describePullClusters(context.Background(), c, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"edge1: Ready True, Lease unreadable", "member3: Ready True, Lease renewed 4s ago by member3/vm"}
	if len(lines) != len(want) {
		t.Fatalf("lines = %q, want %d (Pull clusters only)", lines, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want it to start with %q", i, lines[i], want[i])
		}
	}
}

// lifeboat down without an environment names the directory it looked in,
// resolved as status resolves it: "" is the current directory.
func TestDownWithoutEnvironmentNamesTheDirectory(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	elsewhere := t.TempDir()
	cases := map[string]struct {
		stateDir, want string
	}{
		"empty: the current directory": {stateDir: "", want: cwd},
		"relative":                     {stateDir: "env", want: filepath.Join(cwd, "env")},
		"relative, with dots":          {stateDir: "./a/../env", want: filepath.Join(cwd, "env")},
		"absolute":                     {stateDir: elsewhere, want: elsewhere},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := execute(newDownCommand(), "--state-dir", tc.stateDir)
			if err != nil {
				t.Fatal(err)
			}
			if want := "No local environment in " + tc.want + "; nothing to stop.\n"; out != want {
				t.Errorf("down --state-dir %q printed %q, want %q", tc.stateDir, out, want)
			}
		})
	}
}
