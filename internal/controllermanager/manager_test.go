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

// TestOptionsValidate: flag values that cannot work are refused by
// Validate, naming the flag, rather than when the manager starts them (the
// endpoints, leader election) after the wait for the CRDs.
func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string // a part of the error; empty: accepted
	}{
		"defaults":                                 {},
		"no wait for the CRDs":                     {args: []string{"--wait-for-crds=0"}},
		"a negative wait for the CRDs":             {args: []string{"--wait-for-crds=-1s"}, want: "--wait-for-crds -1s must not be negative (0 does not wait)"},
		"no lease name":                            {args: []string{"--leader-elect-resource-name="}, want: "--leader-elect-resource-name is empty"},
		"a lease name that is no object name":      {args: []string{"--leader-elect-resource-name=Lifeboat_CM"}, want: `--leader-elect-resource-name "Lifeboat_CM": `},
		"no lease name, without leader election":   {args: []string{"--leader-elect=false", "--leader-elect-resource-name="}},
		"no namespace":                             {args: []string{"--leader-elect-resource-namespace="}, want: "--leader-elect-resource-namespace is empty"},
		"no namespace, without leader election":    {args: []string{"--leader-elect=false", "--leader-elect-resource-namespace="}, want: "--leader-elect-resource-namespace is empty"},
		"a namespace that is no namespace name":    {args: []string{"--leader-elect-resource-namespace=kube.system"}, want: `--leader-elect-resource-namespace "kube.system": `},
		"metrics on a port past 65535":             {args: []string{"--metrics-bind-address=:99999"}, want: `--metrics-bind-address ":99999": port "99999": want HOST:PORT with a port from 0 to 65535, or "0" to turn it off`},
		"metrics without a port":                   {args: []string{"--metrics-bind-address=127.0.0.1"}, want: `--metrics-bind-address "127.0.0.1": want HOST:PORT`},
		"metrics address empty":                    {args: []string{"--metrics-bind-address="}, want: `--metrics-bind-address "": want HOST:PORT`},
		"metrics off":                              {args: []string{"--metrics-bind-address=0"}},
		"metrics on every interface":               {args: []string{"--metrics-bind-address=:8080"}},
		"metrics on IPv6 loopback":                 {args: []string{"--metrics-bind-address=[::1]:8080"}},
		"health probes not an address":             {args: []string{"--health-probe-bind-address=bogus"}, want: `--health-probe-bind-address "bogus": want HOST:PORT with a port from 0 to 65535, or "" or "0" to turn it off`},
		"health probes on a port past 65535":       {args: []string{"--health-probe-bind-address=:65536"}, want: `port "65536"`},
		"health probes address empty: off":         {args: []string{"--health-probe-bind-address="}},
		"health probes off":                        {args: []string{"--health-probe-bind-address=0"}},
		"health probes on a named host":            {args: []string{"--health-probe-bind-address=localhost:10357"}},
		"pprof off, empty":                         {args: []string{"--pprof-bind-address="}},
		"pprof off, 0":                             {args: []string{"--pprof-bind-address=0"}},
		"pprof on":                                 {args: []string{"--pprof-bind-address=127.0.0.1:6060"}},
		"pprof on a port past 65535":               {args: []string{"--pprof-bind-address=:70000"}, want: `--pprof-bind-address ":70000": port "70000": want HOST:PORT with a port from 0 to 65535, or "" or "0" to turn it off`},
		"pprof on a named port":                    {args: []string{"--pprof-bind-address=:http"}, want: `port "http"`},
		"an unknown controller, as Run refused it": {args: []string{"--controllers=*,-schedular"}, want: "schedular"},
		"no cap on rebalances":                     {args: []string{"--rebalance-max-concurrent=0"}},
		"a negative cap on rebalances":             {args: []string{"--rebalance-max-concurrent=-1"}, want: "--rebalance-max-concurrent must not be negative, got -1"},
		"a cluster option, as Run refused it":      {args: []string{"--cluster-status-update-frequency=0"}, want: "--cluster-status-update-frequency"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := parsedOptions(t, tc.args...).Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Run refuses these flags before it reads the kubeconfig, let alone waits
// for the CRDs: they used to be found only once the manager started.
func TestRunRefusesBadFlagsBeforeTheControlPlane(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"a negative wait for the CRDs": {args: []string{"--wait-for-crds=-1s"}, want: "--wait-for-crds"},
		"no lease name":                {args: []string{"--leader-elect-resource-name="}, want: "--leader-elect-resource-name"},
		"a metrics port past 65535":    {args: []string{"--metrics-bind-address=:99999"}, want: "--metrics-bind-address"},
		"a health probe address":       {args: []string{"--health-probe-bind-address=bogus"}, want: "--health-probe-bind-address"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parsedOptions(t, append(tc.args, "--kubeconfig=/nonexistent/kubeconfig", "--gc-percent=0")...)
			err := Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "kubeconfig") {
				t.Errorf("Run = %v, want an error naming %s, before the kubeconfig is read", err, tc.want)
			}
		})
	}
}
