// Package cli wires Lifeboat's subcommands: their flags, the one rule for which
// cluster a kubeconfig flag names (kubeconfig.go), resource types resolved as
// kubectl resolves them (resource.go), and what they print. The work itself is
// done by the packages they call.
package cli

import (
	"fmt"

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
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command that only groups others
// (lifeboat token, lifeboat env) fail on a subcommand it does not have, as
// the root does: cobra would print the group's help and exit 0, so a
// misspelt subcommand in a script would look like success.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				if len(args) == 0 {
					return c.Help()
				}
				msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
				if s := c.SuggestionsFor(args[0]); len(s) > 0 {
					msg += fmt.Sprintf("; did you mean %q?", s[0])
				}
				return fmt.Errorf("%s (see %q)", msg, c.CommandPath()+" --help")
			}
		}
		refuseUnknownSubcommands(c)
	}
}

// refuseEmptyFlags fails on the first of names given an empty value, as
// --unhealthy="$UNSET" gives it: for these flags an empty value would read
// as the flag left out, and the command would run something else than it
// was asked to.
func refuseEmptyFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed && f.Value.String() == "" {
			return fmt.Errorf("--%s is empty", name)
		}
	}
	return nil
}
