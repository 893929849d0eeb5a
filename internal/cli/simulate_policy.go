package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/lifeboat-dev/lifeboat/internal/simulate/policysim"
)

// runSimulatePolicy predicts, without writing anything, where the policy in
// file would place the templates it selects, and prints the prediction as
// output ("table", "json" or "yaml"). A PropagationPolicy without a
// namespace in the file takes namespace, else the context's namespace.
func runSimulatePolicy(ctx context.Context, out io.Writer, cp *controlPlane, file, namespace, output string) error {
	if output == "" {
		output = "table"
	}
	switch output {
	case "table", "json", "yaml":
	default:
		return fmt.Errorf("unknown output format %q: want table, json or yaml", output)
	}
	if namespace == "" {
		namespace = cp.namespace
	}
	policy, err := policysim.ParsePolicyFile(file, namespace)
	if err != nil {
		return err
	}
	pred, err := policysim.Predict(ctx, policysim.Inputs{Client: cp.client, Discovery: cp.discovery, Policy: policy})
	if err != nil {
		return err
	}
	switch output {
	case "json":
		raw, err := json.MarshalIndent(pred, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the prediction: %w", err)
		}
		_, err = fmt.Fprintf(out, "%s\n", raw)
		return err
	case "yaml":
		raw, err := yaml.Marshal(pred)
		if err != nil {
			return fmt.Errorf("encoding the prediction: %w", err)
		}
		_, err = out.Write(raw)
		return err
	}
	return policysim.PrintTable(out, pred)
}
