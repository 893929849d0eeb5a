// Package cli wires Lifeboat's subcommands. Commands only parse flags and call
// into the packages that do the work.
package cli

import (
	"github.com/spf13/cobra"
)

// NewRootCommand returns the `lifeboat` command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "lifeboat",
		Short: "Lifeboat: multi-cluster failover with Karmada's API",
		Long: `Lifeboat is a multi-cluster Kubernetes control plane, compatible with Karmada's API,
built for failover: when a member cluster fails, or one application in it stays
unhealthy, Lifeboat moves the workload to another cluster and carries its state along.`,
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(
		newUpCommand(),
		newDownCommand(),
		newStatusCommand(),
		newEnvCommand(),
		newControllerManagerCommand(),
		newVersionCommand(),
		newHistoryCommand(),
		newInterpretCommand(),
		newBenchCommand(),
	)
	root.AddCommand(newClusterCommands()...)
	return root
}
