package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

func newEnvCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Inject faults into the local environment (stop or start an API server, restart a component)",
		Long: `Simulate outages in the local environment started by "lifeboat up", to watch
failover happen: "env stop" stops a cluster's kube-apiserver (a member becomes
unreachable and its Cluster turns Ready=False after the failure threshold; the
control plane's, "lifeboat", takes Lifeboat's controllers off their API server), "env
start" brings it back with the same address and data.

The environment's supervisor (lifeboat-supervisor) starts a component again when it
exits on its own; what "env stop", "env restart" and "lifeboat down" stop, it leaves
alone.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "state-dir", defaultStateDir, "Directory of the environment.")
	var kill bool
	stop := &cobra.Command{
		Use:   "stop CLUSTER|COMPONENT",
		Short: "Stop a cluster's API server (simulated outage): a member, or lifeboat for the control plane; or stop one component",
		Long: fmt.Sprintf(`Stop a cluster's kube-apiserver by its recorded PID: a member's, or the control
plane's with CLUSTER %[1]s. By default it is stopped gracefully (SIGTERM): it refuses
new connections at once and holds its open ones (watches) until it exits; here it is
killed after 10 s. With --kill it is killed at once (SIGKILL), as a crash would end it,
and every connection to it is reset. The supervisor does not start it again; "env
start" does.

While the control plane's API server is down, Lifeboat's controller manager cannot
renew its leader lease: after 10 s it exits ("leader election lost"), and the
supervisor starts it again ("lifeboat status" counts its restarts).

Given a component's name from "lifeboat status" instead of a cluster's, it stops that
component the same way, and the supervisor leaves it stopped until "env restart"
starts it: for example lifeboat-controller-manager, before joining the members to a
control plane installed by the Helm chart in the host cluster (one member, one control
plane).`, localenv.ControlPlaneName),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cluster, err := localenv.StopClusterOrComponent(dir, args[0], kill)
			if err != nil {
				return err
			}
			if !cluster {
				fmt.Fprintf(cmd.OutOrStdout(), "%s stopped; start it again with: lifeboat env restart %s\n", args[0], args[0])
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s's API server stopped; start it again with: lifeboat env start %s\n", args[0], args[0])
			return nil
		},
	}
	stop.Flags().BoolVar(&kill, "kill", false, "Kill the API server at once (SIGKILL, a crash) instead of stopping it gracefully.")
	cmd.AddCommand(stop, &cobra.Command{
		Use:   "start CLUSTER|COMPONENT",
		Short: "Start a cluster's API server, or a component, stopped with \"env stop\" again",
		Long: `Start a cluster's kube-apiserver stopped with "env stop" again, with the same flags,
address and data, and wait until it is ready. The cluster's other Kubernetes
components are restarted too (a member's kube-controller-manager, kube-scheduler, kwok
and Kyverno; the control plane's kube-controller-manager), so that none waits out its
client's back-off; Lifeboat's controller manager is not.

Given a component's name from "lifeboat status" instead of a cluster's, it starts that
component again (as "env restart" does for one that is not running) and waits until it
is healthy.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cluster, err := localenv.StartClusterOrComponent(cmd.Context(), dir, args[0])
			if err != nil {
				return err
			}
			if !cluster {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is running again\n", args[0])
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s's API server is running again\n", args[0])
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "restart COMPONENT",
		Short: "Stop a component by its recorded PID and start it again (e.g. lifeboat-controller-manager)",
		Long: `Stop one component of the local environment (a name from "lifeboat status") with
SIGTERM by its recorded PID, then start it again with the same flags and wait until it
is healthy. A component that is not running (stopped with "env stop", or exited and
not yet started again by the supervisor) is just started. Useful to watch Lifeboat's
controllers resume after a restart.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localenv.RestartComponent(cmd.Context(), dir, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s restarted\n", args[0])
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "partition MEMBER",
		Short: "Cut the network path from the control plane to a member, which keeps running",
		Long: `Cut the path between the control plane and a member: the control plane reaches
each member through a proxy of the environment (component MEMBER-proxy), which from
now on forwards nothing, in either direction, on open and new connections alike. As
in a network partition, the control plane's requests time out rather than fail at
once, and the member's API server, its workloads and the environment's own
kubeconfig are untouched: what Lifeboat does on its side of a partition, while the
old copies keep running on the other, can be watched. For a member joined in pull
mode (up --pull-member), the path from its agent to the control plane (component
MEMBER-agent-proxy) is cut too: the agent cannot renew its Lease, and fences what
must not run twice. "env heal" restores the path; held connections then carry on.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localenv.Partition(dir, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "the path from the control plane to %s is cut; restore it with: lifeboat env heal %s\n", args[0], args[0])
			return nil
		},
	}, &cobra.Command{
		Use:   "heal MEMBER",
		Short: "Restore the path \"env partition\" cut",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localenv.Heal(dir, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "the path from the control plane to %s is restored\n", args[0])
			return nil
		},
	}, newProxyCommand())
	cmd.AddCommand(&cobra.Command{
		Use:   "load-image ARCHIVE...",
		Short: "Import image archives into the host cluster's node (an environment started with up --host)",
		Long: `Import image archives (docker save, OCI, "make image") into the containerd of the
host cluster's node, where the kubelet finds them; the node pulls nothing from a
registry. Use it to give the node a new build of Lifeboat's image before a helm
upgrade to its tag.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localenv.LoadHostImages(cmd.Context(), dir, args...); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d archives into the host node\n", len(args))
			return nil
		},
	})
	cmd.AddCommand(newSuperviseCommand(&dir))
	return cmd
}

// newProxyCommand runs the proxy in front of a member's API server;
// "lifeboat up" starts one per member (component memberN-proxy).
func newProxyCommand() *cobra.Command {
	var listen, target, cut string
	cmd := &cobra.Command{
		Use:    "proxy",
		Hidden: true,
		Short:  "Forward a member's API server, cut while --cut-file exists (run by lifeboat up)",
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return localenv.RunProxy(ctx, listen, target, cut)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "Address to listen on (HOST:PORT).")
	cmd.Flags().StringVar(&target, "target", "", "Address to forward to (HOST:PORT).")
	cmd.Flags().StringVar(&cut, "cut-file", "", "While this file exists, nothing is forwarded.")
	for _, f := range []string{"listen", "target", "cut-file"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// newSuperviseCommand runs the environment's supervisor; "lifeboat up"
// starts it and records it as the component lifeboat-supervisor.
func newSuperviseCommand(dir *string) *cobra.Command {
	zapOpts := zap.Options{}
	return &cobra.Command{
		Use:    "supervise",
		Hidden: true,
		Short:  "Start the local environment's components again when they exit (run by lifeboat up)",
		Long: `Watch the components recorded in the environment's state and start each one
that exits on its own again, with a back-off (1 s, doubling up to 30 s while runs
keep ending within a minute); record every start and exit in the state. Components
stopped with "lifeboat env stop", "env restart" or "lifeboat down" are left alone.
Runs until it is signalled, the environment is removed, or its own record is
stopped. "lifeboat up" starts it; it refuses to run when the state does not record
it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return localenv.NewSupervisor(*dir, ctrl.Log.WithName("supervisor")).Run(ctx)
		},
	}
}
