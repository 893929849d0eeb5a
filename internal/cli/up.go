package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/hostnode"
)

func newUpCommand() *cobra.Command {
	opts := localenv.Options{}
	var memberResources []string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local environment: a control plane and N member clusters",
		Long: `Start Lifeboat's local environment on this machine, without Docker:
one etcd, the control-plane kube-apiserver with Lifeboat's CRDs, N member clusters
member1..N (each a real kube-apiserver, kube-controller-manager and kube-scheduler,
with kwok simulating one Ready node named memberN-control-plane and its pods), the
members registered as Clusters, and the Lifeboat controller manager.

With --partitionable, the control plane reaches each member through a proxy of the
environment (memberN-proxy), whose path "lifeboat env partition" cuts while the member
keeps running. Through the proxy, a member whose API server is stopped drops the
control plane's connections instead of refusing them, and clients retry those for
longer: it is off by default so that "env stop" looks as it does without it.

With --pull-member memberN, that member is joined in Pull mode instead, as a user
joins one that the control plane cannot reach: "lifeboat token create" makes a
bootstrap token, "lifeboat register" trades it for the agent's own certificate, and
"lifeboat agent" (component memberN-agent) runs next to the member, applying its
Works and renewing its Lease. With --partitionable, the agent reaches the control
plane through a proxy of its own (memberN-agent-proxy), and "lifeboat env partition
memberN" cuts that path too.

Every other member is joined as "lifeboat join" joins one: Lifeboat reaches it with the
token of ServiceAccount karmada-cluster/lifeboat-memberN, whose ClusterRole allows
only the default kinds of "lifeboat join --help", Flink's (*.flink.apache.org) and
each --member-propagate-resource. The controller manager reaches the control plane
as the user system:lifeboat:controller-manager, bound to the ClusterRole
lifeboat-controller-manager (config/rbac/role.yaml), not as an administrator.

With --with-kyverno, every member also runs Kyverno's admission controller
(component memberN-kyverno, namespace kyverno, Kyverno's CRDs and the
FlinkDeployment CRD installed) with the ClusterPolicy of
examples/flink/kyverno-clusterpolicy.yaml, which restores a failed-over Flink
job from its last checkpoint. Kyverno is built on its first use only.

On first use the pinned Kubernetes components are built from the Go module proxy
into the cache directory (several minutes; Kyverno about six more); later starts
reuse them.

With --host, the environment also runs a host cluster (context "host"): a
Kubernetes cluster whose one node, lifeboat-host at 10.99.0.1, runs real
containers with containerd, runc and the CNI bridge plugin, with kube-proxy,
CoreDNS and a default StorageClass, for installing Lifeboat's Helm chart
(charts/lifeboat) as a platform team would. Its images (kube-apiserver,
kube-controller-manager, etcd, pause, CoreDNS) are built from the same pinned
binaries and tagged with their upstream names; --host-image imports more archives
(make up-host imports Lifeboat's own image, from make image). Nothing is pulled
from a registry. Every API server then listens on 10.99.0.1 instead of loopback,
so that pods reach the members. The host cluster needs root and Debian's
containerd, runc and containernetworking-plugins (make host-deps); it changes the
machine's network (routes, the bridges lbnode0 and cni0, iptables rules that keep
every packet on the machine) and a few kernel settings, and "lifeboat down" undoes
all of it. One host cluster runs per machine.

Writes DIR/kubeconfig with the contexts "lifeboat" (the control plane, current),
member1..N and, with --host, "host". Running "up" again while the environment is
up changes nothing, and says so when --members, --pull-member, --with-kyverno or
--server-gc-percent ask for what it does not have.

etcd and the API servers run with --server-gc-percent 200 (Go's default is 100):
in a mass failover they serve every request and spend a fifth of their CPU
collecting garbage; on two cores the larger target cut a 1,000-workload cluster
failover's CPU by about a fifth, for more memory (docs/performance.md, round 19).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			if len(opts.HostImages) > 0 && !opts.Host {
				return errors.New("--host-image needs --host")
			}
			for _, r := range memberResources {
				mr, err := cluster.ParseMemberResource(r)
				if err != nil {
					return fmt.Errorf("--member-propagate-resource: %w", err)
				}
				opts.MemberResources = append(opts.MemberResources, mr)
			}
			s, err := localenv.Up(cmd.Context(), opts)
			if errors.Is(err, localenv.ErrAlreadyUp) {
				fmt.Fprintf(opts.Out, "The local environment in %s is already up; nothing changed.\n", s.Dir)
				for _, w := range alreadyUpWarnings(s, opts, cmd.Flags().Changed) {
					fmt.Fprintln(opts.Out, w)
				}
				fmt.Fprintln(opts.Out)
				printNextSteps(opts.Out, s, opts.CacheDir)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(opts.Out)
			printNextSteps(opts.Out, s, opts.CacheDir)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Members, "members", 3, "Number of member clusters (1-20).")
	f.StringVar(&opts.Dir, "state-dir", defaultStateDir, "Directory for the environment's state, logs and kubeconfig.")
	f.StringVar(&opts.CacheDir, "cache-dir", components.DefaultCacheDir(), "Where the Kubernetes components are built and kept ($LIFEBOAT_CACHE_DIR).")
	f.StringArrayVar(&opts.ControllerManagerArgs, "controller-manager-arg", nil, "Extra flag for \"lifeboat controller-manager\" (repeatable), e.g. --controller-manager-arg=--v=2.")
	f.StringArrayVar(&memberResources, "member-propagate-resource", nil, "A kind Lifeboat may also write in every member, as RESOURCE[.GROUP] (repeatable; see \"lifeboat join --propagate-resource\"). Flink's kinds (*.flink.apache.org) are always added.")
	f.BoolVar(&opts.WithKyverno, "with-kyverno", false, "Also run Kyverno in every member with the Flink restore ClusterPolicy (examples/flink/kyverno-clusterpolicy.yaml).")
	f.BoolVar(&opts.Partitionable, "partitionable", false, "Reach every member through a proxy whose path \"lifeboat env partition\" can cut (see above).")
	f.StringArrayVar(&opts.PullMembers, "pull-member", nil, "A member (memberN) to join in Pull mode, served by \"lifeboat agent\" (repeatable; see above).")
	f.StringArrayVar(&opts.AgentArgs, "agent-arg", nil, "Extra flag for every \"lifeboat agent\" (repeatable; needs --pull-member), e.g. --agent-arg=--cluster-lease-duration=10s.")
	f.IntVar(&opts.ServerGCPercent, "server-gc-percent", defaultServerGCPercent, "Go's garbage-collector target (GOGC) for etcd and every kube-apiserver of the environment: higher uses more memory and less CPU (see docs/performance.md); 0 leaves Go's 100.")
	f.BoolVar(&opts.Host, "host", false, "Also run a host cluster with a real node (context host) to install the Helm chart into; needs root and \"make host-deps\".")
	f.StringArrayVar(&opts.HostImages, "host-image", nil, "An image archive (docker save, OCI, make image) to import into the host node (repeatable; needs --host).")
	return cmd
}

// defaultServerGCPercent is --server-gc-percent's default: etcd and the API
// servers serve every request of a mass failover, and at Go's 100 spend
// about a fifth of their CPU collecting garbage (docs/performance.md,
// round 19).
const defaultServerGCPercent = 200

// alreadyUpWarnings say which of opts the running environment s does not
// have and up, finding it running, leaves as it is: --with-kyverno, and
// --members, --pull-member or --server-gc-percent when given (given says
// whether a flag was).
func alreadyUpWarnings(s *localenv.State, opts localenv.Options, given func(flag string) bool) []string {
	membersGiven, pullGiven := given("members"), given("pull-member")
	var out []string
	if opts.WithKyverno && !s.HasKyverno() {
		out = append(out, fmt.Sprintf("It was started without Kyverno; to add it, stop it (lifeboat down --state-dir %s) and run up --with-kyverno.", s.Dir))
	}
	members := s.Members()
	if membersGiven && opts.Members != len(members) {
		out = append(out, fmt.Sprintf("It runs %d members, not --members %d; to change that, stop it (lifeboat down --state-dir %s) and run up again.", len(members), opts.Members, s.Dir))
	}
	var pull []string
	for _, m := range members {
		if c, _ := s.Cluster(m); c.Pull {
			pull = append(pull, m)
		}
	}
	want := slices.Clone(opts.PullMembers)
	slices.Sort(want)
	slices.Sort(pull)
	if pullGiven && !slices.Equal(want, pull) {
		has := "no Pull member"
		if len(pull) > 0 {
			has = "the Pull members " + strings.Join(pull, ", ")
		}
		out = append(out, fmt.Sprintf("It runs %s, not --pull-member %s; to change that, stop it (lifeboat down --state-dir %s) and run up again.", has, strings.Join(opts.PullMembers, ", "), s.Dir))
	}
	if gc := s.ServerGCPercent(); given("server-gc-percent") && gc != opts.ServerGCPercent {
		out = append(out, fmt.Sprintf("Its etcd and API servers run with --server-gc-percent %d, not %d; to change that, stop it (lifeboat down --state-dir %s) and run up again.", gc, opts.ServerGCPercent, s.Dir))
	}
	return out
}

func printNextSteps(out io.Writer, s *localenv.State, cacheDir string) {
	rel := s.KubeconfigPath()
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, rel); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
	}
	fmt.Fprintf(out, "Control plane and members: %s, %s\n", localenv.ControlPlaneName, strings.Join(s.Members(), ", "))
	if s.Host != nil {
		fmt.Fprintf(out, "Host cluster: %s (node %s); install the chart with helm --kube-context %s (docs/install.md#the-local-host-cluster),\n", localenv.HostClusterName, hostnode.NodeName, localenv.HostClusterName)
		fmt.Fprintf(out, "and stop this environment's own controller manager before joining the members to it: lifeboat env stop %s --state-dir %s\n", localenv.ControllerManagerComponent, s.Dir)
	}
	if s.HasKyverno() {
		fmt.Fprintf(out, "Kyverno in every member (namespace %s), ClusterPolicies: kubectl --context %s get clusterpolicies\n", localenv.KyvernoNamespace, s.Members()[0])
	}
	fmt.Fprintf(out, "\nNext:\n  export KUBECONFIG=%s\n  kubectl get clusters\n  kubectl --context %s get nodes\n", rel, s.Members()[0])
	if _, err := exec.LookPath("kubectl"); err != nil {
		if key, kerr := components.Key(); kerr == nil {
			fmt.Fprintf(out, "\nNo kubectl on PATH; one was built for you:\n  alias kubectl=%s\n", filepath.Join(cacheDir, "components", key, "bin", components.Kubectl))
		}
	}
	fmt.Fprintf(out, "\nState and logs: %s\nStop everything: lifeboat down --state-dir %s\n", s.Dir, s.Dir)
}
