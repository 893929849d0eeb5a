package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
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
	for n, wantErr := range map[int]bool{0: false, 50: false, 100: false, math.MaxInt32: false, -1: true, math.MaxInt32 + 1: true} {
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

// TestLeaderElectionFlags: the defaults are client-go's and Karmada's
// (15s, 10s, 2s), the flags set them, and combinations client-go would
// refuse at start are refused with the flags' names.
func TestLeaderElectionFlags(t *testing.T) {
	o := NewOptions()
	if o.LeaseDuration != 15*time.Second || o.RenewDeadline != 10*time.Second || o.RetryPeriod != 2*time.Second {
		t.Errorf("defaults = %s, %s, %s; want 15s, 10s, 2s", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	if err := checkLeaderElection(o.LeaseDuration, o.RenewDeadline, o.RetryPeriod); err != nil {
		t.Errorf("the defaults are refused: %v", err)
	}
	fs := pflag.NewFlagSet("cm", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=40s", "--leader-elect-retry-period=5s"}); err != nil {
		t.Fatal(err)
	}
	if o.LeaseDuration != time.Minute || o.RenewDeadline != 40*time.Second || o.RetryPeriod != 5*time.Second {
		t.Errorf("after the flags: %s, %s, %s; want 1m, 40s, 5s", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}

	cases := map[string]struct {
		lease, renew, retry time.Duration
		in                  string // a part of the error; empty: accepted
	}{
		"a long lease for a busy control plane": {lease: 60 * time.Second, renew: 40 * time.Second, retry: 5 * time.Second},
		"renew just over 1.2 retries":           {lease: 15 * time.Second, renew: 2401 * time.Millisecond, retry: 2 * time.Second},
		"renew exactly 1.2 retries":             {lease: 15 * time.Second, renew: 2400 * time.Millisecond, retry: 2 * time.Second, in: "1.2 times --leader-elect-retry-period"},
		"lease equal to renew":                  {lease: 10 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, in: "longer than --leader-elect-renew-deadline"},
		"lease shorter than renew":              {lease: 5 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, in: "longer than --leader-elect-renew-deadline"},
		"zero retry":                            {lease: 15 * time.Second, renew: 10 * time.Second, in: "each must be positive"},
		"negative lease":                        {lease: -time.Second, renew: 10 * time.Second, retry: 2 * time.Second, in: "each must be positive"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkLeaderElection(tc.lease, tc.renew, tc.retry)
			switch {
			case tc.in == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.in != "" && (err == nil || !strings.Contains(err.Error(), tc.in)):
				t.Errorf("error = %v, want one saying %q", err, tc.in)
			}
		})
	}
}

// TestRunValidatesClusterOptions: a cluster option that cannot work (a
// probe period of 0 would never schedule another probe) is refused by Run,
// with the flag's name, before it connects to anything.
func TestRunValidatesClusterOptions(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("cm", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--cluster-status-update-frequency=0", "--kubeconfig=/nonexistent/kubeconfig"}); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "--cluster-status-update-frequency") {
		t.Errorf("Run = %v, want an error naming --cluster-status-update-frequency", err)
	}
}

// A misspelt --controllers is refused before Run connects to anything (it
// used to be found only after the wait for the CRDs).
func TestRunRefusesUnknownControllersAtOnce(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("cm", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--controllers=*,-schedular", "--kubeconfig=/nonexistent/kubeconfig"}); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "schedular") || strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("Run = %v, want an error naming the unknown controller, before the kubeconfig is read", err)
	}
}

// Client flags that cannot work are refused, naming the flag: NaN and
// infinite rates as well as negative ones, which comparisons alone let by.
func TestCheckClientFlags(t *testing.T) {
	cases := map[string]struct {
		qps         float32
		burst, cons int
		want        string
	}{
		"defaults":          {1000, 2000, 10, ""},
		"qps zero":          {0, 2000, 10, "--kube-api-qps"},
		"qps negative":      {-1, 2000, 10, "--kube-api-qps"},
		"qps NaN":           {float32(math.NaN()), 2000, 10, "--kube-api-qps must be a positive, finite number, got NaN"},
		"qps +Inf":          {float32(math.Inf(1)), 2000, 10, "--kube-api-qps must be a positive, finite number, got +Inf"},
		"burst zero":        {1000, 0, 10, "--kube-api-burst must be at least 1, got 0"},
		"burst negative":    {1000, -1, 10, "--kube-api-burst"},
		"no workers":        {1000, 2000, 0, "--concurrent-syncs must be at least 1, got 0"},
		"negative workers":  {1000, 2000, -1, "--concurrent-syncs"},
		"one of everything": {1, 1, 1, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkClientFlags(tc.qps, tc.burst, tc.cons)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("= %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("= %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
