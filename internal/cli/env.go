package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
				fmt.Fprintf(cmd.OutOrStdout(), "No local environment in %s; nothing to stop.\n", dir)
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
		Short: "Show each component of the local environment and whether it is healthy",
		Long:  "List the local environment's components with their PID and health. Exits non-zero when any is unhealthy.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := localenv.Load(dir)
			if err != nil {
				return err
			}
			rows := localenv.Status(cmd.Context(), s)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "COMPONENT\tPID\tSTATUS\tDETAIL")
			unhealthy := 0
			for _, r := range rows {
				st := "Healthy"
				if !r.Healthy {
					st = "Unhealthy"
					unhealthy++
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", r.Name, r.PID, st, r.Detail)
			}
			if err := w.Flush(); err != nil {
				return err
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

// describeStormGuard asks the control plane for the storm guard's state,
// computed from the Clusters as the taint manager sees them.
func describeStormGuard(ctx context.Context, s *localenv.State) (string, error) {
	cfg, err := s.RESTConfig(localenv.ControlPlaneName)
	if err != nil {
		return "", err
	}
	cfg.Timeout = 5 * time.Second
	scheme, err := lbscheme.New()
	if err != nil {
		return "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	return failover.DescribeStormGuard(ctx, c)
}
