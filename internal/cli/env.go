package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"

	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

const defaultStateDir = ".lifeboat"

func newDownCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local environment and remove its state",
		Long: `Stop every process the local environment started, by the PID recorded in its state
directory (never by name), then remove the state directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := localenv.Down(dir, cmd.OutOrStdout())
			if errors.Is(err, localenv.ErrNotFound) {
				// The directory as it was resolved ("" is the current
				// one), as status names it.
				where := dir
				if abs, err := filepath.Abs(dir); err == nil {
					where = abs
				}
				fmt.Fprintf(cmd.OutOrStdout(), "No local environment in %s; nothing to stop.\n", where)
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "state-dir", defaultStateDir, "Directory of the environment to stop.")
	return cmd
}

func newStatusCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component of the local environment, whether it is healthy, and its restarts",
		Long: `List the local environment's components with their PID, health and restarts.
Exits non-zero when any is unhealthy.

RESTARTS counts how often the environment's supervisor (lifeboat-supervisor) started
a component again after it exited on its own ("-" for the supervisor, which nothing
restarts). DETAIL says why a component is unhealthy and, when it has exited before,
how its last run ended: its exit status when the supervisor started that run, and
the last line of its log. For example, a controller manager that lost its leader
lease while the control plane's API server was down:

  COMPONENT                    PID    STATUS   RESTARTS  DETAIL
  lifeboat-controller-manager  41710  Healthy  1         last exit 2m5s ago: exited: Error: running manager: leader election lost

A component stopped with "lifeboat env stop" stays down ("not running (stopped on
request)") until "lifeboat env start".

For each cluster joined in pull mode it also says whether it is Ready and when its
agent last renewed its Lease, for example:

  Pull clusters:
    member3: Ready True, Lease renewed 4s ago by member3/vm`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := localenv.Load(dir)
			if err != nil {
				return err
			}
			rows := localenv.Status(cmd.Context(), s)
			unhealthy, err := printStatus(cmd.OutOrStdout(), rows, time.Now())
			if err != nil {
				return err
			}
			if c, err := envControlPlane(s); err == nil {
				if lines, err := describePullClusters(cmd.Context(), c, time.Now()); err == nil && len(lines) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "\nPull clusters:\n  %s\n", strings.Join(lines, "\n  "))
				}
			}
			if guard, err := describeStormGuard(cmd.Context(), s); err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "\nStorm guard: %s\n", guard)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "\nStorm guard: unknown (%v)\n", err)
			}
			if unhealthy > 0 {
				return fmt.Errorf("%d of %d components unhealthy", unhealthy, len(rows))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "state-dir", defaultStateDir, "Directory of the environment.")
	return cmd
}

// printStatus writes the components' table and returns how many are
// unhealthy.
func printStatus(out io.Writer, rows []localenv.ComponentStatus, now time.Time) (int, error) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "COMPONENT\tPID\tSTATUS\tRESTARTS\tDETAIL")
	unhealthy := 0
	for _, r := range rows {
		st := "Healthy"
		if !r.Healthy {
			st = "Unhealthy"
			unhealthy++
		}
		restarts := "-"
		if r.Supervised {
			restarts = strconv.Itoa(r.Restarts)
		}
		detail := r.Detail
		if r.LastExit != nil {
			last := fmt.Sprintf("last exit %s ago: %s", now.Sub(r.LastExit.Time).Round(time.Second), r.LastExit.Reason)
			detail = strings.TrimPrefix(detail+"; "+last, "; ")
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", r.Name, r.PID, st, restarts, detail)
	}
	return unhealthy, w.Flush()
}

// describeStormGuard asks the control plane for the storm guard's state,
// computed from the Clusters as the taint manager sees them.
func describeStormGuard(ctx context.Context, s *localenv.State) (string, error) {
	c, err := envControlPlane(s)
	if err != nil {
		return "", err
	}
	return failover.DescribeStormGuard(ctx, c)
}

// envControlPlane is a client of the environment's control plane whose
// requests give up after 5 s.
func envControlPlane(s *localenv.State) (client.Client, error) {
	cfg, err := s.RESTConfig(localenv.ControlPlaneName)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	scheme, err := lbscheme.New()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// describePullClusters says, for each Pull cluster, its Ready condition
// and when its agent last renewed its Lease.
func describePullClusters(ctx context.Context, c client.Client, now time.Time) ([]string, error) {
	var clusters clusterv1alpha1.ClusterList
	if err := c.List(ctx, &clusters); err != nil {
		return nil, err
	}
	var out []string
	for _, cl := range clusters.Items {
		if cl.Spec.SyncMode != clusterv1alpha1.Pull {
			continue
		}
		ready := "no Ready condition"
		if r := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady); r != nil {
			ready = "Ready " + string(r.Status)
		}
		renewed := "Lease never renewed"
		var lease coordinationv1.Lease
		if err := c.Get(ctx, client.ObjectKey{Namespace: cluster.LeaseNamespace, Name: cl.Name}, &lease); err != nil {
			renewed = "Lease unreadable: " + err.Error()
		} else if lease.Spec.RenewTime != nil {
			renewed = fmt.Sprintf("Lease renewed %s ago by %s", now.Sub(lease.Spec.RenewTime.Time).Round(time.Second), ptr.Deref(lease.Spec.HolderIdentity, "?"))
		}
		out = append(out, fmt.Sprintf("%s: %s, %s", cl.Name, ready, renewed))
	}
	return out, nil
}
