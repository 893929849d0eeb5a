package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Lifeboat's version and the pinned component set",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			key, err := components.Key()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lifeboat %s\ncomponents %s\n", v, key)
			return nil
		},
	}
}
