// Package cli wires Lifeboat's subcommands: their flags, the one rule for which
// cluster a kubeconfig flag names (kubeconfig.go), resource types resolved as
// kubectl resolves them (resource.go), and what they print. The work itself is
// done by the packages they call.
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
unhealthy, Lifeboat moves the workload to another cluster and carries its state along.

` + kubeconfigRule,
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.SetFlagErrorFunc(explainFlagError)
	root.AddCommand(
		newUpCommand(),
		newDownCommand(),
		newStatusCommand(),
		newEnvCommand(),
		newControllerManagerCommand(),
		newAgentCommand(),
		newInitCommand(),
		newVersionCommand(),
		newHistoryCommand(),
		newInterpretCommand(),
		newBenchCommand(),
		newSimulateCommand(),
		newFailbackCommand(),
	)
	root.AddCommand(newClusterCommands()...)
	return root
}
