package localenv

import "testing"

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
