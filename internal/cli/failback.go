package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failback"
)

// failbackOptions are the flags of `lifeboat failback`.
type failbackOptions struct {
	output       string
	all          bool
	controlPlane controlPlaneFlags
}

func newFailbackCommand() *cobra.Command {
	o := &failbackOptions{}
	cmd := &cobra.Command{
		Use:   "failback",
		Short: "Show which workloads move back to the clusters they failed over away from, and when",
		Long: `Show automatic failback (spec.failover.failback in a policy) across the fleet: for
every binding whose policy asks for it, whether a failback is moving it back now, is due
(it goes as soon as the controller manager's --failback-max-concurrent and --failback-rate
admit it), waits for a cluster's stabilization window to end (and until when), or why
nothing moves back. It reads with the failback controller's own decision and writes
nothing. By default bindings with nothing to move back are left out; --all shows them.

The control plane is --kubeconfig/--context (default: $KUBECONFIG, else ~/.kube/config,
and its current context).`,
		Example: `  lifeboat failback
  lifeboat failback --all -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "table", "Output format: table or json.")
	f.BoolVar(&o.all, "all", false, "Also show the bindings with nothing to move back.")
	o.controlPlane.add(f)
	return cmd
}

// failbackRow is one binding in `lifeboat failback`.
type failbackRow struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	failback.Pending
}

func (o *failbackOptions) run(ctx context.Context, out io.Writer) error {
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("--output must be table or json, got %q", o.output)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cp, err := o.controlPlane.connect()
	if err != nil {
		return err
	}
	rows, err := failbackRows(ctx, cp.client, time.Now())
	if err != nil {
		return err
	}
	if !o.all {
		kept := rows[:0]
		for _, r := range rows {
			if r.State != failback.StateNone {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	if o.output == "json" {
		data, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding: %w", err)
		}
		_, err = fmt.Fprintln(out, string(data))
		return err
	}
	return printFailbacks(out, rows, time.Now())
}

// failbackRows describes every binding with failback configured, sorted by
// kind, namespace and name.
func failbackRows(ctx context.Context, c client.Reader, now time.Time) ([]failbackRow, error) {
	var clusters clusterv1alpha1.ClusterList
	if err := c.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	cs := make([]*clusterv1alpha1.Cluster, 0, len(clusters.Items))
	for i := range clusters.Items {
		cs = append(cs, &clusters.Items[i])
	}
	rows := []failbackRow{}
	add := func(kind, ns, name string, labels, annotations map[string]string, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) {
		if spec.Failover == nil || spec.Failover.Failback == nil {
			return
		}
		rows = append(rows, failbackRow{Kind: kind, Namespace: ns, Name: name,
			Pending: failback.Describe(labels, annotations, spec, status, cs, now)})
	}
	var rbs workv1alpha2.ResourceBindingList
	if err := c.List(ctx, &rbs); err != nil {
		return nil, fmt.Errorf("listing resource bindings: %w", err)
	}
	for i := range rbs.Items {
		b := &rbs.Items[i]
		add("ResourceBinding", b.Namespace, b.Name, b.Labels, b.Annotations, &b.Spec, &b.Status)
	}
	var crbs workv1alpha2.ClusterResourceBindingList
	if err := c.List(ctx, &crbs); err != nil {
		return nil, fmt.Errorf("listing cluster resource bindings: %w", err)
	}
	for i := range crbs.Items {
		b := &crbs.Items[i]
		add("ClusterResourceBinding", "", b.Name, b.Labels, b.Annotations, &b.Spec, &b.Status)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Kind != b.Kind {
			return a.Kind > b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return rows, nil
}

func printFailbacks(out io.Writer, rows []failbackRow, now time.Time) error {
	moving := 0
	for _, r := range rows {
		if r.State == failback.StateMoving {
			moving++
		}
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(out, "No workload is waiting to move back.")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BINDING\tSTATE\tCLUSTER\tWHEN\tWHY")
	for _, r := range rows {
		name := r.Name
		if r.Namespace != "" {
			name = r.Namespace + "/" + r.Name
		} else {
			name = "crb/" + name
		}
		when := "-"
		switch {
		case r.State == failback.StateDue:
			when = "now"
		case !r.At.IsZero():
			when = fmt.Sprintf("in %s (%s)", r.At.Sub(now).Round(time.Second), r.At.UTC().Format(time.RFC3339))
		}
		cluster := r.Cluster
		if cluster == "" {
			cluster = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, r.State, cluster, when, r.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d failback(s) moving now.\n", moving)
	return err
}
