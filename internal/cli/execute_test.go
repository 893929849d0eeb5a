package cli

import (
	"bytes"

	"github.com/spf13/cobra"
)

// execute runs cmd with args and returns what it printed, its output and
// errors together.
func execute(cmd *cobra.Command, args ...string) (string, error) {
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}
