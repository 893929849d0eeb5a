package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

func newEnvCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Inject faults into the local environment (stop or start a member's API server)",
		Long: `Simulate member outages in the local environment started by "lifeboat up", to
watch cluster failover happen: "env stop" stops a member's kube-apiserver (the
member becomes unreachable; its Cluster turns Ready=False after the failure
threshold), "env start" brings it back with the same address and data.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "state-dir", defaultStateDir, "Directory of the environment.")
	var kill bool
	stop := &cobra.Command{
		Use:   "stop MEMBER",
		Short: "Stop a member's API server (simulated outage)",
		Long: `Stop a member's kube-apiserver by its recorded PID. By default it is stopped
gracefully (SIGTERM): it refuses new connections at once and holds its open ones
(watches) until it exits; here it is killed after 10 s. With --kill it is killed at
once (SIGKILL), as a crash would end it, and every connection to it is reset.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localenv.StopAPIServer(dir, args[0], kill); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s's API server stopped; start it again with: lifeboat env start %s\n", args[0], args[0])
			return nil
		},
	}
	stop.Flags().BoolVar(&kill, "kill", false, "Kill the API server at once (SIGKILL, a crash) instead of stopping it gracefully.")
	cmd.AddCommand(stop, &cobra.Command{
		Use:   "start MEMBER",
		Short: "Restart a member's API server stopped with \"env stop\"",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localenv.StartAPIServer(cmd.Context(), dir, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s's API server is running again\n", args[0])
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "restart COMPONENT",
		Short: "Stop a component by its recorded PID and start it again (e.g. lifeboat-controller-manager)",
		Long: `Stop one component of the local environment (a name from "lifeboat status") with
SIGTERM by its recorded PID, then start it again with the same flags and wait until it
is healthy. A component that is no longer running (a controller manager that lost its
leader lease exits, for example) is just started. Useful to watch Lifeboat's controllers
resume after a restart.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localenv.RestartComponent(cmd.Context(), dir, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s restarted\n", args[0])
			return nil
		},
	})
	return cmd
}
