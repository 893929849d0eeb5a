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
	// The other names of --kubeconfig and --context, as in every command.
	var cpKubeconfig, cpContext string
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run Lifeboat's controllers against a control plane",
		Long: `Run Lifeboat's controllers against the control plane's API server. Serves /healthz
and /readyz on --health-probe-bind-address and Prometheus metrics on
--metrics-bind-address. With --leader-elect (default), several replicas can run and
only the leader reconciles.

The control plane is --kubeconfig/--context (default: $KUBECONFIG, else
~/.kube/config, else, in a pod, its service account; the current context). Member
clusters are reached with the credentials of their Cluster objects, never with a
kubeconfig flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Kubeconfig, err = sameFlag(flagKubeconfig, opts.Kubeconfig, flagControlPlaneKubeconfig, cpKubeconfig); err != nil {
				return err
			}
			if opts.Context, err = sameFlag(flagContext, opts.Context, flagControlPlaneContext, cpContext); err != nil {
				return err
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			return controllermanager.Run(ctrl.SetupSignalHandler(), opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&cpKubeconfig, flagControlPlaneKubeconfig, "", "Same as --kubeconfig: the Lifeboat control plane.")
	cmd.Flags().StringVar(&cpContext, flagControlPlaneContext, "", "Same as --context: the Lifeboat control plane.")
	gfs := goflag.NewFlagSet("zap", goflag.ContinueOnError)
	zapOpts.BindFlags(gfs)
	cmd.Flags().AddGoFlagSet(gfs)
	return cmd
}
