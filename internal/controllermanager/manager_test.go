package controllermanager

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMemoryLimit(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    int64
		wantErr bool
	}{
		"empty: no limit":    {in: "", want: 0},
		"binary suffix":      {in: "180Mi", want: 180 << 20},
		"decimal suffix":     {in: "1G", want: 1_000_000_000},
		"plain bytes":        {in: "1048576", want: 1 << 20},
		"zero":               {in: "0", wantErr: true},
		"negative":           {in: "-1Mi", wantErr: true},
		"fraction of a byte": {in: "100m", wantErr: true},
		"not a quantity":     {in: "lots", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := memoryLimit(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("memoryLimit(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("memoryLimit(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

func TestCheckGCPercent(t *testing.T) {
	for n, wantErr := range map[int]bool{0: false, 50: false, 100: false, -1: true} {
		if err := checkGCPercent(n); (err != nil) != wantErr {
			t.Errorf("checkGCPercent(%d) = %v, want error %t", n, err, wantErr)
		}
	}
}

func TestDefaultGCPercent(t *testing.T) {
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	if got := defaultGCPercent(env("")); got != gcPercentDefault {
		t.Errorf("without GOGC the default is %d, want %d", got, gcPercentDefault)
	}
	for _, gogc := range []string{"100", "off", "200"} {
		if got := defaultGCPercent(env(gogc)); got != 0 {
			t.Errorf("with GOGC=%s the default is %d, want 0 (GOGC in force)", gogc, got)
		}
	}
}

func TestSetupErrorSaysHowToInstallTheCRDs(t *testing.T) {
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "apps.karmada.io", Kind: "WorkloadRebalancer"}, SearchedVersions: []string{"v1alpha1"}}
	err := setupError("workload-rebalancer", fmt.Errorf("indexing WorkloadRebalancers: %w", noMatch))
	if !strings.Contains(err.Error(), "lifeboat init") || !meta.IsNoMatchError(err) {
		t.Errorf("error = %v", err)
	}
	if err := setupError("x", errors.New("boom")); strings.Contains(err.Error(), "lifeboat init") {
		t.Errorf("an unrelated failure names lifeboat init: %v", err)
	}
}
