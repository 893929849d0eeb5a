package cli

import (
	goflag "flag"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lifeboat-dev/lifeboat/internal/controllermanager"
)

func newControllerManagerCommand() *cobra.Command {
	opts := controllermanager.NewOptions()
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run Lifeboat's controllers against a control plane",
		Long: `Run Lifeboat's controllers against the control plane's API server. Serves /healthz
and /readyz on --health-probe-bind-address and Prometheus metrics on
--metrics-bind-address. With --leader-elect (default), several replicas can run and
only the leader reconciles.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			return controllermanager.Run(ctrl.SetupSignalHandler(), opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	gfs := goflag.NewFlagSet("zap", goflag.ContinueOnError)
	zapOpts.BindFlags(gfs)
	cmd.Flags().AddGoFlagSet(gfs)
	return cmd
}
