package cli

import (
	"context"
	"fmt"
	"io"
)

func runSimulatePolicy(ctx context.Context, out io.Writer, cp *controlPlane, file, namespace, output string) error {
	return fmt.Errorf("not yet")
}
