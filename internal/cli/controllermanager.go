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
		Long: `Run Lifeboat's controllers against the control plane's API server.

Serves /healthz and /readyz on --health-probe-bind-address and Prometheus /metrics
on --metrics-bind-address, both on loopback (127.0.0.1) by default and without
authentication. To be scraped from elsewhere (in a cluster), give a reachable
address with --metrics-secure: /metrics is then served over HTTPS only to bearer
tokens the control plane's API server authenticates (TokenReview) for a user
allowed to "get" the non-resource URL /metrics (SubjectAccessReview); others are
refused with 401 (no token, or one the API server does not accept) or 403, and 500
when the API server cannot be asked. A decision is remembered for a minute when it
lets a token through and for 10 s when it refuses it. The controller manager's own
identity then needs "create" on tokenreviews.authentication.k8s.io and
subjectaccessreviews.authorization.k8s.io (the latter it always needs: it asks
whether a Pull agent may renew its certificate before approving the renewal).

With --leader-elect (default), several replicas can run and only the leader
reconciles. A replica that loses its leader lease (it could not renew it for 10 s,
for example while the control plane's API server is down) exits with status 1,
"leader election lost": another replica takes over, and whatever runs it (a
kubelet, or the local environment's supervisor) starts it again. It never goes on
reconciling without the lease.

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
