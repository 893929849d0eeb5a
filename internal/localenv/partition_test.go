package localenv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPartitionAndHeal(t *testing.T) {
	dir := t.TempDir()
	s := &State{Dir: dir, Clusters: []ClusterInfo{
		{Name: ControlPlaneName, Server: "https://127.0.0.1:1"},
		{Name: "member1", Server: "https://127.0.0.1:2", Endpoint: "https://127.0.0.1:3", Member: true},
		{Name: "member2", Server: "https://127.0.0.1:4", Member: true},
	}}
	if err := os.MkdirAll(filepath.Join(dir, "member1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	if s.Partitioned("member1") {
		t.Fatal("partitioned before env partition")
	}
	if err := Partition(dir, "member1"); err != nil {
		t.Fatal(err)
	}
	if !s.Partitioned("member1") {
		t.Fatal("not partitioned after env partition")
	}
	// Twice is the same as once, both ways.
	if err := Partition(dir, "member1"); err != nil {
		t.Fatal(err)
	}
	if err := Heal(dir, "member1"); err != nil || s.Partitioned("member1") {
		t.Fatalf("heal: %v, partitioned %v", err, s.Partitioned("member1"))
	}
	if err := Heal(dir, "member1"); err != nil {
		t.Fatalf("healing a healed member: %v", err)
	}

	for _, tc := range []struct{ member, want string }{
		{"member9", "no member"},
		{ControlPlaneName, "no member"},
	} {
		if err := Partition(dir, tc.member); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("partition %s: %v, want %q", tc.member, err, tc.want)
		}
	}
	if err := Partition(dir, "member2"); !errors.Is(err, ErrNoProxy) {
		t.Errorf("partition of a member without a proxy: %v, want ErrNoProxy", err)
	}
}
