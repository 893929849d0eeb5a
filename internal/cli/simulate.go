package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/controllermanager"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
	"github.com/lifeboat-dev/lifeboat/internal/simulate"
)

// simulateOptions are the flags of `lifeboat simulate`.
type simulateOptions struct {
	failClusters []string
	taints       []string
	unhealthy    string
	cluster      string
	namespace    string
	policyFile   string
	output       string
	explain      string
	startupTime  time.Duration
	settingsNS   string
	controlPlane controlPlaneFlags

	// emptyFailCluster is whether a --fail-cluster value had an empty
	// name: the flag drops "" and keeps "a," as a and "".
	emptyFailCluster bool
}

// notingEmpty is a comma-separated list flag's value that also notes, in
// empty, a value with an empty item.
type notingEmpty struct {
	pflag.Value
	empty *bool
}

func (v notingEmpty) Set(s string) error {
	if slices.Contains(strings.Split(s, ","), "") {
		*v.empty = true
	}
	return v.Value.Set(s)
}

func newSimulateCommand() *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate (--fail-cluster NAME | --taint CLUSTER=KEY[=VALUE]:EFFECT | --unhealthy TYPE/NAME --cluster NAME | --policy FILE)",
		Short: "Predict what failover would do if clusters failed, without changing anything",
		Long: `Predict, from the control plane as it is now, what Lifeboat would do if member clusters
failed (--fail-cluster), were tainted (--taint), or one application turned unhealthy in one
cluster (--unhealthy with --cluster); or where a policy that does not exist yet would place
the templates it selects (--policy). It only reads: nothing is written, and the policy is
checked with a server-side dry run.

For every binding the scenario touches it reports whether it is evicted (the taints it
tolerates, for how long, or not at all), when (seconds after the failure, from the
earliest moment the controllers can notice it to the latest), the purge mode, where it
goes with how many replicas (the scheduler's own decision on the Clusters as the failure
leaves them), the state that would be carried, or that it stays where it is because no
other cluster fits, and why. The fleet totals add, per receiving cluster, the replicas and
the CPU and memory they request against what its resourceSummary says is free, the storm
guard's verdict per cluster group (its rate, how long the evictions take, or that it halts
because the control plane looks cut off), and when everything is evicted and Healthy.

The decisions are made by the same functions the controllers run, with the flags the
controller manager published when it started (the ConfigMap lifeboat-failover-settings
in --settings-namespace); without it, the defaults are used, and the report says so.
Two things the control plane cannot know are assumptions: a failure is detected between
"the member refuses connections" (earliest) and "the member goes silent" (latest), and a
new copy is Healthy --startup-time after it is created.

The control plane is --kubeconfig/--context (default: $KUBECONFIG, else ~/.kube/config,
and its current context).`,
		Example: `  lifeboat simulate --fail-cluster member2
  lifeboat simulate --fail-cluster member1 --fail-cluster member2 -o json
  lifeboat simulate --taint member3=maintenance:NoExecute
  lifeboat simulate --unhealthy deploy/nginx -n default --cluster member1
  lifeboat simulate --fail-cluster member2 --explain default/nginx-deployment
  lifeboat simulate --policy policy.yaml -n default`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// As for --fail-cluster: an empty value is a mistake (an unset
			// variable in a script), not the flag left out.
			if err := refuseEmptyFlags(cmd, "unhealthy", "cluster", "policy", "explain"); err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.failClusters, "fail-cluster", nil, "A member cluster that stops answering (repeat or separate by commas for several).")
	failCluster := f.Lookup("fail-cluster")
	failCluster.Value = notingEmpty{Value: failCluster.Value, empty: &o.emptyFailCluster}
	f.StringArrayVar(&o.taints, "taint", nil, "A taint added to a cluster, CLUSTER=KEY[=VALUE]:EFFECT (repeatable); the ClusterTaintPolicies apply to the result.")
	f.StringVar(&o.unhealthy, "unhealthy", "", "A resource template, TYPE/NAME as in kubectl, whose application turns Unhealthy in --cluster.")
	f.StringVar(&o.cluster, "cluster", "", "With --unhealthy: the cluster where the application is Unhealthy.")
	f.StringVarP(&o.namespace, "namespace", "n", "", "Namespace of --unhealthy's template and of --policy's PropagationPolicy (default: the context's namespace, or \"default\").")
	f.StringVar(&o.policyFile, "policy", "", "A PropagationPolicy or ClusterPropagationPolicy file: predict where it would place the templates it selects.")
	f.StringVarP(&o.output, "output", "o", "table", "Output format: table, json or yaml.")
	f.StringVar(&o.explain, "explain", "", "Print the decision steps for one binding, NAMESPACE/NAME (or NAME for a ClusterResourceBinding), as text: not with -o json or yaml.")
	f.DurationVar(&o.startupTime, "startup-time", 10*time.Second, "Assumed time for a new copy to become Healthy once created, for the expected times to Healthy.")
	f.StringVar(&o.settingsNS, "settings-namespace", controllermanager.NewOptions().LeaderElectionNS, "Namespace of the controller manager's published failover settings (its --leader-elect-resource-namespace).")
	o.controlPlane.add(f)
	return cmd
}

func (o *simulateOptions) run(ctx context.Context, out, errOut io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch o.output {
	case "table", "json", "yaml":
	default:
		return fmt.Errorf("--output must be table, json or yaml, got %q", o.output)
	}
	if o.startupTime < 0 {
		return fmt.Errorf("--startup-time must not be negative, got %s", o.startupTime)
	}
	// An empty name is a mistake (an unset variable in a script), not a
	// request to fail nothing.
	if o.emptyFailCluster || slices.Contains(o.failClusters, "") {
		return errors.New("--fail-cluster: empty cluster name")
	}
	modes := 0
	for _, set := range []bool{len(o.failClusters) > 0 || len(o.taints) > 0, o.unhealthy != "", o.policyFile != ""} {
		if set {
			modes++
		}
	}
	switch {
	case modes == 0:
		return fmt.Errorf("nothing to simulate: give --fail-cluster, --taint, --unhealthy with --cluster, or --policy")
	case modes > 1:
		return fmt.Errorf("give one scenario at a time: cluster failures and taints, --unhealthy, or --policy")
	case o.unhealthy != "" && o.cluster == "":
		return fmt.Errorf("--unhealthy needs --cluster, the cluster where the application is Unhealthy")
	case o.unhealthy == "" && o.cluster != "":
		return fmt.Errorf("--cluster only goes with --unhealthy")
	case o.policyFile != "" && o.explain != "":
		return fmt.Errorf("--explain does not go with --policy")
	case o.explain != "" && o.output != "table":
		return fmt.Errorf("--explain prints text and does not go with -o %s; the %s report holds each binding's decision", o.output, o.output)
	}
	taints, err := parseSimulatedTaints(o.taints)
	if err != nil {
		return err
	}
	cp, err := o.controlPlane.connect()
	if err != nil {
		return err
	}
	if o.policyFile != "" {
		return runSimulatePolicy(ctx, out, cp, o.policyFile, o.namespace, o.output)
	}

	snap, source, err := loadSnapshot(ctx, cp.client, o.settingsNS)
	if err != nil {
		return err
	}
	sc := simulate.Scenario{FailClusters: o.failClusters, Taints: taints, StartupTime: o.startupTime}
	if o.unhealthy != "" {
		typeArg, name, err := resourceArgs([]string{o.unhealthy})
		if err != nil {
			return err
		}
		ns := o.namespace
		if ns == "" {
			ns = cp.namespace
		}
		tmpl, err := resolveTemplate(newResourceResolver(cp.discovery, warnTo(errOut)), typeArg, name, ns)
		if err != nil {
			return err
		}
		b, err := findBinding(ctx, cp.client, tmpl)
		if err != nil {
			return withExisting(ctx, cp.client, tmpl.namespace, err)
		}
		key := b.name
		if b.namespace != "" {
			key = b.namespace + "/" + b.name
		}
		sc.Unhealthy = &simulate.Unhealthy{Kind: b.kind, Binding: key, Cluster: o.cluster}
	}
	report, err := simulate.Run(*snap, sc)
	if err != nil {
		return err
	}
	report.SettingsSource = source
	if o.explain != "" {
		return printExplain(out, report, o.explain)
	}
	switch o.output {
	case "json":
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		_, err = fmt.Fprintln(out, string(data))
		return err
	case "yaml":
		data, err := yaml.Marshal(report)
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		_, err = out.Write(data)
		return err
	}
	return printSimulation(out, report)
}

// parseSimulatedTaints parses --taint CLUSTER=KEY[=VALUE]:EFFECT values by
// cluster; removals are refused (a simulation adds taints).
func parseSimulatedTaints(values []string) (map[string][]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := map[string][]string{}
	for _, v := range values {
		name, spec, ok := strings.Cut(v, "=")
		if !ok || name == "" || spec == "" {
			return nil, fmt.Errorf("--taint %q: want CLUSTER=KEY[=VALUE]:EFFECT, for example member2=maintenance:NoExecute", v)
		}
		if strings.HasSuffix(spec, "-") {
			return nil, fmt.Errorf("--taint %q: a simulation adds taints; remove one with `lifeboat taint` instead", v)
		}
		if _, err := cluster.ParseTaintSpecs([]string{spec}); err != nil {
			return nil, fmt.Errorf("--taint %q: %w", v, err)
		}
		out[name] = append(out[name], spec)
	}
	return out, nil
}

// loadSnapshot reads what a simulation needs from the control plane, and
// says where the settings came from.
func loadSnapshot(ctx context.Context, c client.Reader, settingsNS string) (*simulate.Snapshot, string, error) {
	snap := &simulate.Snapshot{Now: time.Now()}
	var clusters clusterv1alpha1.ClusterList
	if err := c.List(ctx, &clusters); err != nil {
		return nil, "", fmt.Errorf("listing clusters: %w", err)
	}
	snap.Clusters = clusters.Items
	var policies policyv1alpha1.ClusterTaintPolicyList
	if err := c.List(ctx, &policies); err != nil {
		return nil, "", fmt.Errorf("listing cluster taint policies: %w", err)
	}
	snap.TaintPolicies = policies.Items
	var rbs workv1alpha2.ResourceBindingList
	if err := c.List(ctx, &rbs); err != nil {
		return nil, "", fmt.Errorf("listing resource bindings: %w", err)
	}
	var crbs workv1alpha2.ClusterResourceBindingList
	if err := c.List(ctx, &crbs); err != nil {
		return nil, "", fmt.Errorf("listing cluster resource bindings: %w", err)
	}
	snap.Bindings = make([]simulate.Binding, 0, len(rbs.Items)+len(crbs.Items))
	for i := range rbs.Items {
		b := &rbs.Items[i]
		if b.DeletionTimestamp != nil {
			continue
		}
		snap.Bindings = append(snap.Bindings, simulate.Binding{Kind: simulate.KindResourceBinding, Namespace: b.Namespace, Name: b.Name, Spec: b.Spec, Status: b.Status,
			Released: !scheduler.Claimed(b.Labels)})
	}
	for i := range crbs.Items {
		b := &crbs.Items[i]
		if b.DeletionTimestamp != nil {
			continue
		}
		snap.Bindings = append(snap.Bindings, simulate.Binding{Kind: simulate.KindClusterResourceBinding, Name: b.Name, Spec: b.Spec, Status: b.Status,
			Released: !scheduler.Claimed(b.Labels)})
	}
	settings, found, err := failover.ReadSettings(ctx, c, settingsNS)
	if err != nil {
		return nil, "", err
	}
	source := fmt.Sprintf("published by the controller manager (ConfigMap %s/%s)", settingsNS, failover.SettingsConfigMap)
	if !found {
		d := controllermanager.NewOptions()
		settings = failover.NewSettings(d.Cluster.StatusUpdateFrequency, d.Cluster.FailureThreshold, d.Cluster.ProbeTimeout,
			d.ClusterFailover, features.New(), true, true).WithLeaseMonitor(d.Cluster.MonitorGracePeriod, d.Cluster.MonitorPeriod)
		source = fmt.Sprintf("the defaults: no controller manager has published its settings in ConfigMap %s/%s", settingsNS, failover.SettingsConfigMap)
	}
	snap.Settings = settings
	return snap, source, nil
}

// printSimulation prints the report as tables.
func printSimulation(out io.Writer, r *simulate.Report) error {
	var scenario []string
	for _, c := range r.Failed {
		scenario = append(scenario, c+" fails")
	}
	tainted := make([]string, 0, len(r.Tainted))
	for c := range r.Tainted {
		tainted = append(tainted, c)
	}
	sort.Strings(tainted)
	for _, c := range tainted {
		scenario = append(scenario, c+" gets "+strings.Join(r.Tainted[c], ", "))
	}
	if u := r.Unhealthy; u != nil {
		scenario = append(scenario, fmt.Sprintf("the application of %s %s turns Unhealthy in %s", u.Kind, u.Binding, u.Cluster))
	}
	fmt.Fprintf(out, "Scenario: %s.\n", strings.Join(scenario, "; "))
	fmt.Fprintf(out, "Settings: %s.\n\n", r.SettingsSource)
	if len(r.Outcomes) == 0 {
		fmt.Fprintln(out, "No binding is scheduled on these clusters: nothing moves.")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BINDING\tRESULT\tFROM\tTOLERATION\tEVICTED AT\tPURGE\tPLACEMENT NOW\tAFTER\tSTATE")
	for _, o := range r.Outcomes {
		for i, e := range o.Evictions {
			name, result, before, after := "", "", "", ""
			if i == 0 {
				name, result, before, after = bindingLabel(o), o.Result, targets(o.Before), afterLabel(o)
			}
			at := "-"
			if e.At != nil {
				at = e.At.String()
			}
			purge := string(e.PurgeMode)
			if purge == "" {
				purge = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, result, e.Cluster, e.Toleration, at, purge, before, after, formatState(e.State))
		}
		if len(o.Evictions) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t%s\t%s\t-\n", bindingLabel(o), o.Result, targets(o.Before), targets(o.After))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range r.Outcomes {
		if o.Reason != "" {
			fmt.Fprintf(out, "  %s: %s\n", bindingLabel(o), o.Reason)
		}
	}
	t := r.Totals
	fmt.Fprintf(out, "\nTotals: %d binding(s): %d evicted, %d stay, %d tolerated, %d held by the storm guard, %d not evicted.\n",
		t.Bindings, t.Evicted, t.Stays, t.Tolerated, t.Held, t.NotEvicted)
	if len(t.Clusters) > 0 {
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RECEIVING CLUSTER\tREPLICAS\tFREE PODS\tCPU\tFREE CPU\tMEMORY\tFREE MEMORY\tFITS")
		for _, c := range t.Clusters {
			fmt.Fprintf(tw, "%s\t+%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Cluster, c.Replicas, quantity(c.FreePods), c.CPU.String(), quantity(c.FreeCPU), c.Memory.String(), quantity(c.FreeMemory), yesNo(c.Fits))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, g := range t.Guard {
		group := "clusters without a region"
		if g.Group != "" {
			group = "region " + g.Group
		}
		if g.Halts != "" {
			fmt.Fprintf(out, "Storm guard, %s: %s, halts: %s\n", group, g.State, g.Halts)
			continue
		}
		fmt.Fprintf(out, "Storm guard, %s: %s, %g evictions/s; %d eviction(s) over %s.\n", group, g.State, g.Rate, g.Evictions, g.Span)
	}
	if t.AllEvicted != nil {
		fmt.Fprintf(out, "All evicted %s after the failure", t.AllEvicted)
		if t.AllHealthy != nil {
			fmt.Fprintf(out, "; all Healthy elsewhere %s after it (new copies assumed Healthy %s after creation)", t.AllHealthy, r.StartupTime.Duration)
		}
		fmt.Fprintln(out, ".")
	}
	for _, w := range t.Warnings {
		fmt.Fprintf(out, "Warning: %s\n", w)
	}
	return nil
}

// printExplain prints one binding's decision steps.
func printExplain(out io.Writer, r *simulate.Report, key string) error {
	for _, o := range r.Outcomes {
		if o.Key() != key {
			continue
		}
		fmt.Fprintf(out, "%s (%s): %s\n", bindingLabel(o), o.Resource, o.Result)
		for i, s := range o.Steps {
			fmt.Fprintf(out, "  %d. %s\n", i+1, s)
		}
		if o.Reason != "" {
			fmt.Fprintf(out, "  Reason: %s\n", o.Reason)
		}
		fmt.Fprintf(out, "  Placement: %s -> %s\n", targets(o.Before), targets(o.After))
		return nil
	}
	var keys []string
	for _, o := range r.Outcomes {
		keys = append(keys, o.Key())
	}
	if len(keys) == 0 {
		return fmt.Errorf("--explain %s: the scenario touches no binding", key)
	}
	return fmt.Errorf("--explain %s: not among the bindings the scenario touches: %s", key, strings.Join(keys, ", "))
}

func bindingLabel(o simulate.Outcome) string {
	if o.Kind == simulate.KindClusterResourceBinding {
		return "crb/" + o.Name
	}
	return o.Key()
}

// afterLabel is the placement after the failover; for a binding that stays,
// also where its old copy is kept.
func afterLabel(o simulate.Outcome) string {
	after := targets(o.After)
	if o.Result != simulate.ResultStays {
		return after
	}
	var kept []string
	for _, e := range o.Evictions {
		if e.At != nil {
			kept = append(kept, e.Cluster)
		}
	}
	return after + " (kept in " + strings.Join(kept, ",") + ")"
}

func targets(ts []workv1alpha2.TargetCluster) string {
	if len(ts) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s:%d", t.Name, t.Replicas))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func formatState(s map[string]string) string {
	if len(s) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(s))
	for k, v := range s {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// withExisting adds to err the bindings that exist in namespace (cluster
// bindings when it is empty), so that a mistyped name can be corrected.
func withExisting(ctx context.Context, c client.Reader, namespace string, err error) error {
	const shown = 20
	var names []string
	if namespace != "" {
		var list workv1alpha2.ResourceBindingList
		if lerr := c.List(ctx, &list, client.InNamespace(namespace)); lerr != nil {
			return err
		}
		for _, b := range list.Items {
			names = append(names, b.Spec.Resource.Kind+"/"+b.Spec.Resource.Name)
		}
	} else {
		var list workv1alpha2.ClusterResourceBindingList
		if lerr := c.List(ctx, &list); lerr != nil {
			return err
		}
		for _, b := range list.Items {
			names = append(names, b.Spec.Resource.Kind+"/"+b.Spec.Resource.Name)
		}
	}
	sort.Strings(names)
	where := "in namespace " + namespace
	if namespace == "" {
		where = "cluster-wide"
	}
	switch {
	case len(names) == 0:
		return fmt.Errorf("%w No template is propagated %s", err, where)
	case len(names) > shown:
		return fmt.Errorf("%w Propagated %s: %s and %d more", err, where, strings.Join(names[:shown], ", "), len(names)-shown)
	}
	return fmt.Errorf("%w Propagated %s: %s", err, where, strings.Join(names, ", "))
}
