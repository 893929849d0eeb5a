// Command lifeboat is the single Lifeboat binary: the controller manager, the
// local environment and the operator's CLI.
package main

import (
	"os"

	"github.com/lifeboat-dev/lifeboat/internal/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
