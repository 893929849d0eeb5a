package cli

import (
	goflag "flag"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lifeboat-dev/lifeboat/internal/agent"
)

func newAgentCommand() *cobra.Command {
	opts := agent.NewOptions()
	zapOpts := zap.Options{}
	var cp controlPlaneFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run inside a member cluster in Pull mode: apply its Works, report its status",
		Long: `Run the agent of a Pull cluster, inside (or next to) the member cluster.

The agent connects out to the control plane with its own credentials
(--kubeconfig, written by ` + "`lifeboat register`" + `); the control
plane never connects to the member. It:

  - watches the Works of the execution namespace karmada-es-NAME and applies them
    to the member, repairs drift, and reports their status and health into
    Work.status, with the same code the control plane runs for Push clusters;
  - reports the Cluster's status (Ready, version, API enablements, node and
    resource summaries) every --cluster-status-update-frequency;
  - renews the Lease karmada-cluster/NAME in the control plane every
    --cluster-lease-duration x --cluster-lease-renew-interval-fraction. The
    control plane marks the cluster Ready=Unknown when the Lease goes without a
    renewal for its --cluster-monitor-grace-period; taints and failover follow
    as for a Push cluster;
  - renews its own client certificate when about 80% of its validity has
    passed (--rotate-certificates), uses the new one at once and keeps it in
    --kubeconfig-secret, else in the --kubeconfig file.

It deletes an object in the member only when the control plane deleted its Work.
A restart, or a cache that starts empty, never deletes anything.

The agent refuses to start for a cluster that does not exist in the control
plane, that is joined in Push mode, or that its credentials may not read. While the
control plane does not answer at start it keeps asking, and fences meanwhile.

Fencing: the copies of workloads whose policy fences them (purgeMode Directly, by
default) are scaled to zero, or deleted, once the Lease could not be renewed for
--cluster-lease-duration plus their toleration of the not-ready taint; an agent
whose first renewal fails fences them at once. They are applied again once the
Lease is renewed, if their Works are still there.

Serves /healthz and /readyz on --health-probe-bind-address and /metrics on
--metrics-bind-address, both on loopback by default; with --metrics-secure,
/metrics over HTTPS only to bearer tokens the member's API server accepts for
a user allowed to get /metrics there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := cp.ref()
			if err != nil {
				return err
			}
			opts.ControlPlaneKubeconfig, opts.ControlPlaneContext = ref.path, ref.context
			if err := opts.Validate(); err != nil {
				return err
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			return agent.Run(ctrl.SetupSignalHandler(), opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	cp.addWithUsage(cmd.Flags(),
		"Kubeconfig of the Lifeboat control plane, with the agent's own credentials as \"lifeboat register --agent-kubeconfig\" writes them (default: $KUBECONFIG, else ~/.kube/config).",
		controlPlaneContextUsage)
	cmd.Flags().StringVar(&opts.MemberKubeconfig, flagClusterKubeconfig, "", "Kubeconfig of the MEMBER cluster the agent runs in (default: in a pod, its service account).")
	cmd.Flags().StringVar(&opts.MemberContext, flagClusterContext, "", "Context of the MEMBER cluster in that kubeconfig (default: its current context).")
	gfs := goflag.NewFlagSet("zap", goflag.ContinueOnError)
	zapOpts.BindFlags(gfs)
	cmd.Flags().AddGoFlagSet(gfs)
	return cmd
}
