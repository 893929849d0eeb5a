package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/orphans"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// Flag scheme of the cluster commands, the same on every one of them:
//
//	--control-plane-kubeconfig / --control-plane-context  the Lifeboat control plane
//	                                                      (default: $KUBECONFIG, current context)
//	--kubeconfig / --context                              a MEMBER cluster (join; unjoin --cleanup-member)
//
// so that `lifeboat join member4 --kubeconfig member4.kubeconfig` reads as
// it should. Commands that never talk to a member reject --kubeconfig with a
// pointer to --control-plane-kubeconfig instead of silently using it.
const controlPlaneFlagsHelp = `
Kubeconfig flags: --control-plane-kubeconfig and --control-plane-context always
name the Lifeboat control plane (default: $KUBECONFIG, or ~/.kube/config, and its
current context). --kubeconfig and --context always name a MEMBER cluster and are
only accepted where a member is contacted (join, unjoin --cleanup-member).`

// newClusterCommands returns join, unjoin, cordon, uncordon and taint.
func newClusterCommands() []*cobra.Command {
	return []*cobra.Command{
		newJoinCommand(),
		newUnjoinCommand(),
		newCordonCommand(),
		newUncordonCommand(),
		newTaintCommand(),
	}
}

// controlPlaneFlags select the control plane's kubeconfig.
type controlPlaneFlags struct {
	kubeconfig, context string
}

func (f *controlPlaneFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "control-plane-kubeconfig", "", "Kubeconfig of the Lifeboat control plane (default: $KUBECONFIG, or ~/.kube/config).")
	fs.StringVar(&f.context, "control-plane-context", "", "Context of the control plane in that kubeconfig (default: its current context).")
}

func (f *controlPlaneFlags) client() (client.Client, error) {
	kc, err := cluster.LoadKubeconfig(f.kubeconfig, f.context)
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.New(kc.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building control-plane client: %w", err)
	}
	return c, nil
}

// memberFlags select a member's kubeconfig; --cluster-kubeconfig and
// --cluster-context (karmadactl's names) are accepted as aliases.
type memberFlags struct {
	kubeconfig, context               string
	clusterKubeconfig, clusterContext string
}

func (f *memberFlags) add(fs *pflag.FlagSet, purpose string) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Kubeconfig of the MEMBER cluster"+purpose+" (default: $KUBECONFIG, or ~/.kube/config).")
	fs.StringVar(&f.context, "context", "", "Context of the MEMBER cluster in that kubeconfig (default: its current context).")
	fs.StringVar(&f.clusterKubeconfig, "cluster-kubeconfig", "", "Same as --kubeconfig (karmadactl's name).")
	fs.StringVar(&f.clusterContext, "cluster-context", "", "Same as --context (karmadactl's name).")
}

// resolve merges the aliases; given reports whether any member flag was set.
func (f *memberFlags) resolve() (kubeconfig, kubeContext string, given bool, err error) {
	pick := func(a, b, name string) (string, error) {
		if a != "" && b != "" && a != b {
			return "", fmt.Errorf("--%s and --cluster-%s disagree (%q, %q); give one", name, name, a, b)
		}
		if a != "" {
			return a, nil
		}
		return b, nil
	}
	if kubeconfig, err = pick(f.kubeconfig, f.clusterKubeconfig, "kubeconfig"); err != nil {
		return "", "", false, err
	}
	if kubeContext, err = pick(f.context, f.clusterContext, "context"); err != nil {
		return "", "", false, err
	}
	return kubeconfig, kubeContext, kubeconfig != "" || kubeContext != "", nil
}

// rejectMemberFlags adds hidden --kubeconfig/--context flags to a command that
// never contacts a member, so that using them explains the flag scheme.
func rejectMemberFlags(cmd *cobra.Command) {
	var kubeconfig, kubeContext string
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "")
	cmd.Flags().StringVar(&kubeContext, "context", "", "")
	_ = cmd.Flags().MarkHidden("kubeconfig")
	_ = cmd.Flags().MarkHidden("context")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		for _, n := range []string{"kubeconfig", "context"} {
			if cmd.Flags().Changed(n) {
				return fmt.Errorf("--%s names a member cluster in lifeboat; %s only talks to the control plane: use --control-plane-%s", n, cmd.Name(), n)
			}
		}
		return nil
	}
}

func newJoinCommand() *cobra.Command {
	var cp controlPlaneFlags
	var member memberFlags
	var opts cluster.JoinOptions
	cmd := &cobra.Command{
		Use:   "join NAME --kubeconfig MEMBER_KUBECONFIG [--context MEMBER_CONTEXT]",
		Short: "Register a member cluster (push mode) in the control plane",
		Long: `Register a member cluster in the Lifeboat control plane, in push mode.

--kubeconfig/--context name the MEMBER to join. Its API server URL becomes the
Cluster's apiEndpoint and its kube-system namespace UID the Cluster's id. If that
kubeconfig authenticates with a bearer token, the token is used as it is; if it
uses a client certificate, an exec or auth-provider plugin (which the control
plane cannot replay), join creates in the member the ServiceAccount
karmada-cluster/lifeboat-NAME bound to cluster-admin and a long-lived token Secret
for it, and uses that token.

In the control plane it creates the Secret karmada-cluster/NAME (keys token and
caBundle) and the Cluster NAME (syncMode Push). A NAME already joined, or a member
already joined under another name, is refused.

A member joined again may still run copies from before (it was unjoined while
down): once it is Ready, the controller manager adopts those that a binding places
there again, and removes the others after --member-orphan-grace (a controller
manager flag, 2m by default), under the rules of docs/member-cleanup.md.
` + controlPlaneFlagsHelp,
		Example: `  # the control plane from $KUBECONFIG, the member from its own file
  lifeboat join member4 --kubeconfig member4.kubeconfig

  # both in one kubeconfig
  lifeboat join member4 --context member4 --control-plane-context lifeboat --region eu-west-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := cluster.ValidateClusterName(opts.Name); err != nil {
				return err
			}
			kubeconfig, kubeContext, given, err := member.resolve()
			if err != nil {
				return err
			}
			if !given {
				return fmt.Errorf("join needs the member's kubeconfig: --kubeconfig FILE and/or --context CONTEXT (the control plane is --control-plane-kubeconfig)")
			}
			mk, err := cluster.LoadKubeconfig(kubeconfig, kubeContext)
			if err != nil {
				return fmt.Errorf("member: %w", err)
			}
			c, err := cp.client()
			if err != nil {
				return err
			}
			res, err := cluster.Join(cmd.Context(), c, mk, nil, opts)
			if err != nil {
				return err
			}
			printJoined(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cp.add(cmd.Flags())
	member.add(cmd.Flags(), " to join")
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "Cloud provider of the member, copied to spec.provider.")
	cmd.Flags().StringVar(&opts.Region, "region", "", "Region of the member, copied to spec.region.")
	cmd.Flags().StringSliceVar(&opts.Zones, "zone", nil, "Zone(s) of the member, copied to spec.zones (repeatable or comma-separated).")
	cmd.Flags().DurationVar(&opts.TokenTimeout, "token-timeout", 30*time.Second, "How long to wait for the member to issue the ServiceAccount token, when one is created.")
	return cmd
}

func printJoined(out io.Writer, res cluster.JoinResult) {
	c := res.Cluster
	fmt.Fprintf(out, "Cluster %s joined (API endpoint %s, id %s).\n", c.Name, c.Spec.APIEndpoint, c.Spec.ID)
	if res.ServiceAccount != "" {
		fmt.Fprintf(out, "Credentials: token of ServiceAccount %s (cluster-admin), created in the member, stored in Secret %s/%s.\n", res.ServiceAccount, c.Spec.SecretRef.Namespace, c.Spec.SecretRef.Name)
	} else {
		fmt.Fprintf(out, "Credentials: the kubeconfig's token, stored in Secret %s/%s.\n", c.Spec.SecretRef.Namespace, c.Spec.SecretRef.Name)
	}
	fmt.Fprintf(out, "The controller manager now creates namespace %s and probes the member; follow it with:\n  kubectl get cluster %s\n", cluster.ExecutionNamespace(c.Name), c.Name)
}

func newUnjoinCommand() *cobra.Command {
	var cp controlPlaneFlags
	var member memberFlags
	var wait bool
	var timeout time.Duration
	var cleanupMember bool
	cmd := &cobra.Command{
		Use:   "unjoin NAME",
		Short: "Remove a member cluster from the control plane",
		Long: `Delete the Cluster NAME from the control plane. Its credentials Secret goes with it.

The member is never contacted by this command (unjoin works when it is down): the
controller manager deletes the execution namespace karmada-es-NAME and its Works.
While the member is Ready, the Works delete what they created in it first (at most
--cluster-deletion-grace-period, a controller manager flag, 1m by default); a member
that is not Ready is left as it is, and what Lifeboat created there keeps running.
By default unjoin waits (--timeout) until the Cluster is gone.

With --cleanup-member, unjoin then cleans the member named by --kubeconfig/--context
(it must answer):
  - the ServiceAccount, token Secret and ClusterRoleBinding lifeboat-NAME that join
    created there;
  - once the Cluster is gone, the objects Lifeboat left there for NAME whose Work no
    longer exists, under the orphan rule of docs/member-cleanup.md (written by
    Lifeboat, naming a binding that does not place them on NAME; never a Namespace
    or CustomResourceDefinition, never an object of anyone else);
  - the namespaces Lifeboat created there that are left with nothing in them.
Run it again later for a member that was down: with --cleanup-member, a NAME no
longer joined only cleans the member. A member joined again is not cleaned here:
under the same name the controller manager cleans it (the same rules, after a
grace period); under another name the objects left for NAME are only reported (the
Cluster's OrphansKept Event), for you to delete.
` + controlPlaneFlagsHelp,
		Example: `  lifeboat unjoin member4
  lifeboat unjoin member4 --cleanup-member --kubeconfig member4.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			out := cmd.OutOrStdout()
			kubeconfig, kubeContext, given, err := member.resolve()
			if err != nil {
				return err
			}
			if given && !cleanupMember {
				return fmt.Errorf("--kubeconfig/--context name the member and are only used with --cleanup-member; the control plane is --control-plane-kubeconfig/--control-plane-context")
			}
			var mc *memberClients
			if cleanupMember {
				// Load the member's kubeconfig first: fail before deleting anything.
				if mc, err = newMemberClients(kubeconfig, kubeContext, name); err != nil {
					return err
				}
			}
			c, err := cp.client()
			if err != nil {
				return err
			}
			if !wait {
				timeout = 0
			}
			res, err := cluster.Unregister(cmd.Context(), c, name, timeout)
			switch {
			case errors.Is(err, cluster.ErrNotJoined) && cleanupMember:
				fmt.Fprintf(out, "Cluster %s is not joined; cleaning the member only.\n", name)
				res.Gone = true
			case err != nil:
				return err
			case res.Gone:
				fmt.Fprintf(out, "Cluster %s unjoined: it is gone from the control plane, with its Works (namespace %s) and its credentials.\n", name, cluster.ExecutionNamespace(name))
			case wait:
				fmt.Fprintf(out, "Cluster %s is deleting, still not gone after %s: the controller manager removes it once %s is cleaned up (is it running?).\n", name, timeout, cluster.ExecutionNamespace(name))
			default:
				fmt.Fprintf(out, "Cluster %s is deleting; the controller manager removes it once %s is cleaned up.\n", name, cluster.ExecutionNamespace(name))
			}
			if mc == nil {
				return nil
			}
			deleted, err := cluster.CleanupMember(cmd.Context(), mc.kube, name)
			for _, d := range deleted {
				fmt.Fprintf(out, "Deleted %s in the member.\n", d)
			}
			if err != nil {
				return err
			}
			if !res.Gone {
				fmt.Fprintf(out, "What Lifeboat left in the member is cleaned only once Cluster %s is gone: run this command again then.\n", name)
				return nil
			}
			swept, err := cluster.SweepUnjoinedMember(cmd.Context(), c, mc.kube, mc.member, name, timeout)
			printSwept(out, swept, len(deleted))
			return err
		},
	}
	cp.add(cmd.Flags())
	member.add(cmd.Flags(), " to clean up (with --cleanup-member)")
	cmd.Flags().BoolVar(&wait, "wait", true, "Wait until the Cluster is gone from the control plane (and, with --cleanup-member, for emptied namespaces to be removable).")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "How long --wait waits.")
	cmd.Flags().BoolVar(&cleanupMember, "cleanup-member", false, "Also clean the member (needs --kubeconfig/--context): what join created there and, once the Cluster is gone, what Lifeboat left there (see above).")
	return cmd
}

// memberClients reach a member directly, for unjoin --cleanup-member.
type memberClients struct {
	kube   kubernetes.Interface
	member orphans.Member
}

func newMemberClients(kubeconfig, kubeContext, name string) (*memberClients, error) {
	mk, err := cluster.LoadKubeconfig(kubeconfig, kubeContext)
	if err != nil {
		return nil, fmt.Errorf("member: %w", err)
	}
	kube, err := kubernetes.NewForConfig(mk.Config)
	if err != nil {
		return nil, fmt.Errorf("building a client for the member: %w", err)
	}
	dyn, err := dynamic.NewForConfig(mk.Config)
	if err != nil {
		return nil, fmt.Errorf("building a client for the member: %w", err)
	}
	return &memberClients{kube: kube, member: orphans.ClientMember(dyn, kube.Discovery(), name)}, nil
}

// printSwept reports what a sweep of the member did; joinLeftovers is how
// many of join's objects were deleted before it.
func printSwept(out io.Writer, res cluster.SweepResult, joinLeftovers int) {
	if res.Skipped != "" {
		fmt.Fprintf(out, "Not sweeping the member: %s.\n", res.Skipped)
		return
	}
	for _, r := range res.Removed {
		fmt.Fprintf(out, "Removed %s from the member: its Work no longer exists.\n", r)
	}
	for _, k := range res.Kept {
		fmt.Fprintf(out, "Kept %s: its Work no longer exists; delete it by hand if it is not wanted.\n", k)
	}
	for _, ns := range res.NamespacesRemoved {
		fmt.Fprintf(out, "Removed namespace %s from the member: Lifeboat created it and nothing is left in it.\n", ns)
	}
	for _, ns := range res.NamespacesKept {
		fmt.Fprintf(out, "Kept namespace %s, which Lifeboat created.\n", ns)
	}
	if res.Incomplete != nil {
		fmt.Fprintf(out, "Some objects of the member could not be listed: %v\n", res.Incomplete)
	}
	if joinLeftovers == 0 && len(res.Removed)+len(res.Kept)+len(res.NamespacesRemoved)+len(res.NamespacesKept) == 0 {
		fmt.Fprintln(out, "Nothing of lifeboat's was left in the member.")
	}
}

func newCordonCommand() *cobra.Command {
	var cp controlPlaneFlags
	cmd := &cobra.Command{
		Use:   "cordon NAME",
		Short: "Mark a cluster unschedulable (taint cluster.karmada.io/unschedulable:NoSchedule)",
		Long: `Add the taint cluster.karmada.io/unschedulable:NoSchedule to the Cluster NAME: no new
workload is placed there; what runs there stays.
` + controlPlaneFlagsHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cp.client()
			if err != nil {
				return err
			}
			changed, err := cluster.Cordon(cmd.Context(), c, args[0], time.Now)
			if err != nil {
				return err
			}
			if changed {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s cordoned (added taint cluster.karmada.io/unschedulable:NoSchedule)\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s already cordoned; nothing changed\n", args[0])
			}
			return nil
		},
	}
	cp.add(cmd.Flags())
	rejectMemberFlags(cmd)
	return cmd
}

func newUncordonCommand() *cobra.Command {
	var cp controlPlaneFlags
	cmd := &cobra.Command{
		Use:   "uncordon NAME",
		Short: "Mark a cluster schedulable again",
		Long: `Remove the taint cluster.karmada.io/unschedulable:NoSchedule from the Cluster NAME.
` + controlPlaneFlagsHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cp.client()
			if err != nil {
				return err
			}
			changed, err := cluster.Uncordon(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if changed {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s uncordoned (removed taint cluster.karmada.io/unschedulable:NoSchedule)\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s was not cordoned; nothing changed\n", args[0])
			}
			return nil
		},
	}
	cp.add(cmd.Flags())
	rejectMemberFlags(cmd)
	return cmd
}

func newTaintCommand() *cobra.Command {
	var cp controlPlaneFlags
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "taint [clusters] NAME KEY[=VALUE]:EFFECT ... | KEY[:EFFECT]- ...",
		Short: "Add, replace or remove taints of a cluster (kubectl taint syntax)",
		Long: `Edit spec.taints of the Cluster NAME, with kubectl's taint syntax:

  KEY[=VALUE]:EFFECT    add a taint (with --overwrite, replace the one with the same key and effect)
  KEY[:EFFECT]-         remove the taint(s) with that key (and effect)

EFFECT is NoSchedule (keep new workloads away) or NoExecute (also evict what
runs there unless tolerated). NoExecute taints get timeAdded, from which
tolerationSeconds count. The word "clusters" before NAME is optional, as in
karmadactl taint clusters NAME.
` + controlPlaneFlagsHelp,
		Example: `  lifeboat taint member1 dedicated=gpu:NoSchedule
  lifeboat taint member1 maintenance:NoExecute --overwrite
  lifeboat taint member1 dedicated- maintenance:NoExecute-`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, specs, err := taintArgs(args)
			if err != nil {
				return err
			}
			edit, err := cluster.ParseTaintSpecs(specs)
			if err != nil {
				return err
			}
			c, err := cp.client()
			if err != nil {
				return err
			}
			res, err := cluster.EditTaints(cmd.Context(), c, name, edit, overwrite, time.Now)
			if err != nil {
				return err
			}
			printTaintResult(cmd.OutOrStdout(), name, res)
			return nil
		},
	}
	cp.add(cmd.Flags())
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "Replace a taint that has the same key and effect.")
	rejectMemberFlags(cmd)
	return cmd
}

// taintArgs splits `[clusters] NAME SPEC...`. A leading "cluster(s)" is a
// resource type only when the next argument is not a taint spec: a cluster
// name can never look like one (it has neither ':' nor a trailing '-').
func taintArgs(args []string) (string, []string, error) {
	if len(args) >= 3 && (args[0] == "clusters" || args[0] == "cluster") && !looksLikeTaintSpec(args[1]) {
		args = args[1:]
	}
	if len(args) < 2 {
		return "", nil, errors.New("want NAME and at least one taint: KEY[=VALUE]:EFFECT or KEY[:EFFECT]-")
	}
	if err := cluster.ValidateClusterName(args[0]); err != nil {
		return "", nil, err
	}
	return args[0], args[1:], nil
}

func looksLikeTaintSpec(s string) bool {
	return strings.Contains(s, ":") || strings.HasSuffix(s, "-")
}

func printTaintResult(out io.Writer, name string, res cluster.TaintEditResult) {
	for _, t := range res.Added {
		fmt.Fprintf(out, "cluster/%s tainted: added %s\n", name, t)
	}
	for _, t := range res.Replaced {
		fmt.Fprintf(out, "cluster/%s modified: replaced with %s\n", name, t)
	}
	for _, t := range res.Removed {
		fmt.Fprintf(out, "cluster/%s untainted: removed %s\n", name, t)
	}
	for _, t := range res.Unchanged {
		fmt.Fprintf(out, "cluster/%s already has %s; unchanged\n", name, t)
	}
}
