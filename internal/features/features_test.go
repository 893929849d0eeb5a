package features

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestDefaults(t *testing.T) {
	for name, f := range map[string]Feature{
		"Failover":                  Failover,
		"GracefulEviction":          GracefulEviction,
		"PropagateDeps":             PropagateDeps,
		"StatefulFailoverInjection": StatefulFailoverInjection,
	} {
		t.Run(name, func(t *testing.T) {
			if !New().Enabled(f) {
				t.Errorf("%s is off by default, want on", f)
			}
			var nilGates *Gates
			if !nilGates.Enabled(f) {
				t.Errorf("nil gates: %s is off, want the default (on)", f)
			}
		})
	}
	if New().Enabled("NoSuchGate") {
		t.Error("unknown gate reported on")
	}
}

func TestSet(t *testing.T) {
	for name, tc := range map[string]struct {
		flag    string
		want    map[Feature]bool
		wantErr string
	}{
		"empty keeps defaults": {
			flag: "",
			want: map[Feature]bool{Failover: true, StatefulFailoverInjection: true},
		},
		"one off": {
			flag: "StatefulFailoverInjection=false",
			want: map[Feature]bool{StatefulFailoverInjection: false, Failover: true},
		},
		"several with spaces": {
			flag: " Failover=false , GracefulEviction=false ",
			want: map[Feature]bool{Failover: false, GracefulEviction: false, PropagateDeps: true},
		},
		"AllAlpha then named wins": {
			flag: "StatefulFailoverInjection=true,AllAlpha=false",
			want: map[Feature]bool{StatefulFailoverInjection: true},
		},
		"AllBeta=false": {
			flag: "AllBeta=false",
			want: map[Feature]bool{Failover: false, GracefulEviction: false, PropagateDeps: false, StatefulFailoverInjection: true},
		},
		"unknown name": {
			flag:    "Failover=true,Teleport=true",
			wantErr: `unknown feature gate "Teleport"`,
		},
		"missing value": {
			flag:    "Failover",
			wantErr: "want Name=true or Name=false",
		},
		"bad bool": {
			flag:    "Failover=yes please",
			wantErr: "invalid value",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := New()
			err := g.Set(tc.flag)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Set(%q) error = %v, want it to contain %q", tc.flag, err, tc.wantErr)
				}
				if g.String() != "" {
					t.Errorf("failed Set changed the gates: %s", g.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("Set(%q): %v", tc.flag, err)
			}
			for f, want := range tc.want {
				if got := g.Enabled(f); got != want {
					t.Errorf("%s = %t, want %t", f, got, want)
				}
			}
		})
	}
}

func TestFlag(t *testing.T) {
	g := New()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	g.AddFlag(fs)
	if err := fs.Parse([]string{"--feature-gates=Failover=false", "--feature-gates=PropagateDeps=false"}); err != nil {
		t.Fatal(err)
	}
	if g.Enabled(Failover) || g.Enabled(PropagateDeps) {
		t.Errorf("flags not applied: %s", g.String())
	}
	if got, want := g.String(), "Failover=false,PropagateDeps=false"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := fs.Parse([]string{"--feature-gates=Bogus=true"}); err == nil {
		t.Error("unknown gate accepted by the flag")
	}
}
