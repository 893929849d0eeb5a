package packed

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestDeflateRoundTrip(t *testing.T) {
	noise := make([]byte, 70_000) // larger than DEFLATE's 32 KiB window
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(r.UintN(256))
	}
	cases := map[string][]byte{
		"empty":                 {},
		"the dictionary itself": []byte(dictionary),
		"a member Deployment":   []byte(memberDeployment),
		"unlike the dictionary": noise,
		"a large ConfigMap":     []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"big":"` + strings.Repeat("0123456789abcdef", 20_000) + `"}}`),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			packed, err := deflate(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := inflate(packed, len(in))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("read back %d bytes that differ from the %d written", len(out), len(in))
			}
		})
	}
}

// TestPackedDeploymentSize keeps the dictionary's effect: a member's
// Deployment, the object held most at scale, is held in a quarter of what
// it took deflated without one (about 650 bytes).
func TestPackedDeploymentSize(t *testing.T) {
	o := mustPack(t, mustDecode(t, memberDeployment))
	if len(o.body) > 250 {
		t.Errorf("a packed member Deployment holds %d bytes of JSON, want at most 250", len(o.body))
	}
	m := workWith(strings.ReplaceAll(memberDeployment, "\n", ""))
	if err := CompactManifests(m); err != nil {
		t.Fatal(err)
	}
	if d := m.Spec.Workload.Manifests[0].Object.(*Document); len(d.body) > 350 {
		t.Errorf("a compacted manifest holds %d bytes, want at most 350", len(d.body))
	}
}
