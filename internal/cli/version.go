package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
	"github.com/lifeboat-dev/lifeboat/internal/version"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Lifeboat's version and the pinned component set",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			build := version.Get()
			key, err := components.Key()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lifeboat %s\n", build.Version)
			if build.Revision != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "revision %s\n", build.Revision)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "components %s\n", key)
			return nil
		},
	}
}
