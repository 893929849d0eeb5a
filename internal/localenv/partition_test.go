package localenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
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

// TestStatusShowsACutPath: while a member is partitioned its proxy is
// reported unhealthy, with the way back; after heal it is healthy again.
func TestStatusShowsACutPath(t *testing.T) {
	dir := t.TempDir()
	self, err := process.Self()
	if err != nil {
		t.Fatal(err)
	}
	s := &State{Dir: dir,
		Clusters:   []ClusterInfo{{Name: "member1", Server: "https://127.0.0.1:2", Endpoint: "https://127.0.0.1:3", Member: true}},
		Components: []Component{{Name: proxyComponent("member1"), Cluster: "member1", Process: self}},
	}
	if err := os.MkdirAll(filepath.Join(dir, "member1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	if err := Partition(dir, "member1"); err != nil {
		t.Fatal(err)
	}
	rows := Status(context.Background(), s)
	if rows[0].Healthy || !strings.Contains(rows[0].Detail, "lifeboat env heal member1") {
		t.Errorf("partitioned: %+v, want unhealthy with the way back", rows[0])
	}
	if err := Heal(dir, "member1"); err != nil {
		t.Fatal(err)
	}
	if rows := Status(context.Background(), s); !rows[0].Healthy {
		t.Errorf("healed: %+v, want healthy", rows[0])
	}
}
