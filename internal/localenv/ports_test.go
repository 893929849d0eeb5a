package localenv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// freePort picks ports below the kernel's ephemeral range, which outgoing
// connections take their source ports from.
func TestFreePortAvoidsTheEphemeralRange(t *testing.T) {
	for range 20 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < freePortLow || p >= freePortHigh {
			t.Errorf("freePort = %d, want one in [%d, %d)", p, freePortLow, freePortHigh)
		}
	}
}

// A port chosen through the registry is not chosen again while held, by
// this process or another; after the hold it may be.
func TestReservePortNeverTwiceWhileHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ports.json")
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	seen := map[int]bool{}
	for range 300 {
		p, err := reservePort(path, now)
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d chosen twice within the hold", p)
		}
		seen[p] = true
	}
	// After the hold, the registry forgets them.
	if _, err := reservePort(path, now.Add(portHold+time.Second)); err != nil {
		t.Fatal(err)
	}
	data, err := readRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1 {
		t.Errorf("the registry holds %d ports after the hold, want the 1 just chosen", len(data))
	}
}

func readRegistry(path string) (map[string]time.Time, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]time.Time{}
	return m, json.Unmarshal(data, &m)
}
