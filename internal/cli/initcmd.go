package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lifeboat-dev/lifeboat/internal/install"
)

func newInitCommand() *cobra.Command {
	var cp controlPlaneFlags
	var timeout time.Duration
	var waitForAPIServer bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Install or upgrade Lifeboat's CRDs, RBAC and defaults in a control plane",
		Long: `Put into the control plane's API server (--kubeconfig/--context; default:
$KUBECONFIG, else ~/.kube/config, and its current context) what Lifeboat needs there
before its controller manager starts:
  - Lifeboat's CustomResourceDefinitions (the Karmada-compatible kinds), server-side
    applied, and waited for until Established;
  - the ClusterRole lifeboat-controller-manager and its binding to the user
    system:lifeboat:controller-manager, the identity the controller manager should
    use (docs/install.md);
  - the default ClusterTaintPolicy, which taints a not-Ready cluster NoExecute so
    that cluster failover works out of the box (one that exists is left as it is).

Every step creates or brings up to date: run it again after an upgrade of Lifeboat
to apply the new CRDs and role. It needs an administrator's credentials. The
controller manager itself never changes CRDs or RBAC.`,
		Example: `  lifeboat init --kubeconfig admin.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// 0 is no limit; a negative value is a mistake, not a request
			// for it.
			if timeout < 0 {
				return fmt.Errorf("--timeout %s must not be negative", timeout)
			}
			ref, err := cp.ref()
			if err != nil {
				return err
			}
			cfg, _, err := ref.restConfig()
			if err != nil {
				return fmt.Errorf("control plane: %w", err)
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel func()
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			out := cmd.OutOrStdout()
			if waitForAPIServer {
				if err := install.WaitForAPIServer(ctx, cfg, func(last error) {
					fmt.Fprintf(out, "… waiting for the API server at %s: %v\n", cfg.Host, last)
				}); err != nil {
					return err
				}
			}
			return install.ControlPlane(ctx, cfg, func(step string) { fmt.Fprintf(out, "✓ %s\n", step) })
		},
	}
	cp.add(cmd.Flags())
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "Give up after this long (0: no limit).")
	cmd.Flags().BoolVar(&waitForAPIServer, "wait-for-api-server", false, "First wait (within --timeout) until the API server answers /readyz, saying what it answered every 10 s: for an installer that starts it at the same time.")
	return cmd
}
