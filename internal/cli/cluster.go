package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

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

// clusterGroupKind is what the cluster commands work on.
var clusterGroupKind = clusterv1alpha1.SchemeGroupVersion.WithKind("Cluster").GroupKind()

// clusterArg splits NAME or TYPE/NAME; a cluster name never has a '/'.
func clusterArg(arg string) (typeArg, name string, err error) {
	if t, n, ok := strings.Cut(arg, "/"); ok {
		if t == "" {
			return "", "", fmt.Errorf("%q: want NAME or TYPE/NAME, e.g. member1 or cluster/member1", arg)
		}
		typeArg, arg = t, n
	}
	if err := cluster.ValidateClusterName(arg); err != nil {
		return "", "", err
	}
	return typeArg, arg, nil
}

// checkClusterType resolves typeArg, when one was given, as kubectl would and
// requires it to name member clusters (cluster, clusters,
// clusters.cluster.karmada.io, Cluster, ...).
func checkClusterType(cp *controlPlane, typeArg string, warn func(string)) error {
	if typeArg == "" {
		return nil
	}
	m, err := newResourceResolver(cp.discovery, warn).mapping(typeArg)
	if err != nil {
		return err
	}
	if gk := m.GroupVersionKind.GroupKind(); gk != clusterGroupKind {
		return fmt.Errorf("resource type %q is %s; this command works on member clusters (%s)", typeArg, gk, clusterGroupKind)
	}
	return nil
}

func newJoinCommand() *cobra.Command {
	var cp controlPlaneFlags
	var member memberFlags
	var opts cluster.JoinOptions
	cmd := &cobra.Command{
		Use:   "join NAME --cluster-kubeconfig MEMBER_KUBECONFIG [--cluster-context MEMBER_CONTEXT]",
		Short: "Register a member cluster (push mode) in the control plane",
		Long: `Register a member cluster in the Lifeboat control plane, in push mode.

--cluster-kubeconfig/--cluster-context name the MEMBER to join (no default: give
one or both); --kubeconfig/--context name the control plane, as in every lifeboat
command (default: $KUBECONFIG, else ~/.kube/config, and its current context).

The member's API server URL becomes the Cluster's apiEndpoint and its kube-system
namespace UID the Cluster's id. If that kubeconfig authenticates with a bearer
token, the token is used as it is; if it uses a client certificate, an exec or
auth-provider plugin (which the control plane cannot replay), join creates in the
member the ServiceAccount karmada-cluster/lifeboat-NAME bound to cluster-admin and
a long-lived token Secret for it, and uses that token.

In the control plane it creates the Secret karmada-cluster/NAME (keys token and
caBundle) and the Cluster NAME (syncMode Push). A NAME already joined, or a member
already joined under another name, is refused.

Older spelling, still accepted: without --cluster-kubeconfig and --cluster-context,
join reads --kubeconfig/--context as the MEMBER's and takes the control plane from
--control-plane-kubeconfig/--control-plane-context (default: $KUBECONFIG, else
~/.kube/config, and its current context), and prints a warning saying so.`,
		Example: `  # the control plane from $KUBECONFIG, the member from its own file
  lifeboat join member4 --cluster-kubeconfig member4.kubeconfig

  # both in one kubeconfig
  lifeboat join member4 --cluster-context member4 --context lifeboat --region eu-west-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := cluster.ValidateClusterName(opts.Name); err != nil {
				return err
			}
			memberRef, cpRef, older, err := joinKubeconfigs(cp, member)
			if err != nil {
				return err
			}
			if !memberRef.given() {
				return fmt.Errorf("join needs the member's kubeconfig: --cluster-kubeconfig FILE and/or --cluster-context CONTEXT (--kubeconfig/--context name the control plane)")
			}
			if older {
				warnTo(cmd.ErrOrStderr())(fmt.Sprintf("without --cluster-kubeconfig/--cluster-context, join reads --kubeconfig/--context as the member's (%s) and the control plane from --control-plane-kubeconfig/--control-plane-context (%s); in every other lifeboat command --kubeconfig/--context name the control plane, so prefer --cluster-kubeconfig/--cluster-context here", memberRef, cpRef))
			}
			mk, err := loadMember(memberRef)
			if err != nil {
				return err
			}
			c, err := connectControlPlane(cpRef)
			if err != nil {
				return err
			}
			res, err := cluster.Join(cmd.Context(), c.client, mk, nil, opts)
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
		Long: `Delete the Cluster NAME (or cluster/NAME) from the control plane named by
--kubeconfig/--context (default: $KUBECONFIG, else ~/.kube/config, and its current
context). Its credentials Secret goes with it.

The member is never contacted (unjoin works when it is down): the controller
manager deletes the execution namespace karmada-es-NAME and its Works, which
remove what they created in the member while it is reachable, then releases the
Cluster. By default unjoin waits (--timeout) for that to finish.

With --cleanup-member, unjoin also deletes, in the MEMBER named by
--cluster-kubeconfig/--cluster-context (required then), the ServiceAccount, token
Secret and ClusterRoleBinding lifeboat-NAME that join created there.`,
		Example: `  lifeboat unjoin member4
  lifeboat unjoin member4 --cleanup-member --cluster-kubeconfig member4.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typeArg, name, err := clusterArg(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			memberRef := member.ref()
			switch {
			case memberRef.given() && !cleanupMember:
				return fmt.Errorf("--cluster-kubeconfig/--cluster-context name the member and are only used with --cleanup-member")
			case cleanupMember && !memberRef.given():
				return fmt.Errorf("--cleanup-member needs the member's kubeconfig: --cluster-kubeconfig FILE and/or --cluster-context CONTEXT (--kubeconfig/--context name the control plane)")
			}
			var memberClient kubernetes.Interface
			if cleanupMember {
				// Load the member's kubeconfig first: fail before deleting anything.
				mk, err := loadMember(memberRef)
				if err != nil {
					return err
				}
				if memberClient, err = kubernetes.NewForConfig(mk.Config); err != nil {
					return fmt.Errorf("building a client for the member: %w", err)
				}
			}
			c, err := cp.connect()
			if err != nil {
				return err
			}
			if err := checkClusterType(c, typeArg, warnTo(cmd.ErrOrStderr())); err != nil {
				return err
			}
			if !wait {
				timeout = 0
			}
			res, err := cluster.Unregister(cmd.Context(), c.client, name, timeout)
			if err != nil {
				return err
			}
			switch {
			case res.Gone:
				fmt.Fprintf(out, "Cluster %s unjoined: it is gone from the control plane, with its Works (namespace %s) and its credentials.\n", name, cluster.ExecutionNamespace(name))
			case wait:
				fmt.Fprintf(out, "Cluster %s is deleting, still not gone after %s: the controller manager removes it once %s is cleaned up (is it running?).\n", name, timeout, cluster.ExecutionNamespace(name))
			default:
				fmt.Fprintf(out, "Cluster %s is deleting; the controller manager removes it once %s is cleaned up.\n", name, cluster.ExecutionNamespace(name))
			}
			if memberClient != nil {
				deleted, err := cluster.CleanupMember(cmd.Context(), memberClient, name)
				for _, d := range deleted {
					fmt.Fprintf(out, "Deleted %s in the member.\n", d)
				}
				if err != nil {
					return err
				}
				if len(deleted) == 0 {
					fmt.Fprintln(out, "Nothing of lifeboat's was left in the member.")
				}
			}
			return nil
		},
	}
	cp.add(cmd.Flags())
	member.add(cmd.Flags(), " to clean up (with --cleanup-member)")
	cmd.Flags().BoolVar(&wait, "wait", true, "Wait until the Cluster is gone from the control plane.")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "How long --wait waits.")
	cmd.Flags().BoolVar(&cleanupMember, "cleanup-member", false, "Also delete the ServiceAccount, token Secret and ClusterRoleBinding join created in the member (needs --cluster-kubeconfig/--cluster-context).")
	return cmd
}

// controlPlaneHelp ends the help of the commands that only talk to the
// control plane.
const controlPlaneHelp = `
The control plane is --kubeconfig/--context (default: $KUBECONFIG, else
~/.kube/config, and its current context); NAME may also be written TYPE/NAME with
any name of the Cluster type (cluster/member1, clusters.cluster.karmada.io/member1).`

func newCordonCommand() *cobra.Command {
	return newCordonLikeCommand("cordon", "Mark a cluster unschedulable (taint cluster.karmada.io/unschedulable:NoSchedule)",
		`Add the taint cluster.karmada.io/unschedulable:NoSchedule to the Cluster NAME: no new
workload is placed there; what runs there stays.
`+controlPlaneHelp,
		func(ctx context.Context, c client.Client, name string) (bool, error) {
			return cluster.Cordon(ctx, c, name, time.Now)
		},
		"cluster/%s cordoned (added taint cluster.karmada.io/unschedulable:NoSchedule)\n",
		"cluster/%s already cordoned; nothing changed\n")
}

func newUncordonCommand() *cobra.Command {
	return newCordonLikeCommand("uncordon", "Mark a cluster schedulable again",
		`Remove the taint cluster.karmada.io/unschedulable:NoSchedule from the Cluster NAME.
`+controlPlaneHelp,
		cluster.Uncordon,
		"cluster/%s uncordoned (removed taint cluster.karmada.io/unschedulable:NoSchedule)\n",
		"cluster/%s was not cordoned; nothing changed\n")
}

// newCordonLikeCommand returns cordon or uncordon: edit applies the change
// and reports whether anything changed.
func newCordonLikeCommand(use, short, long string, edit func(context.Context, client.Client, string) (bool, error), changedMsg, unchangedMsg string) *cobra.Command {
	var cp controlPlaneFlags
	cmd := &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typeArg, name, err := clusterArg(args[0])
			if err != nil {
				return err
			}
			c, err := cp.connect()
			if err != nil {
				return err
			}
			if err := checkClusterType(c, typeArg, warnTo(cmd.ErrOrStderr())); err != nil {
				return err
			}
			changed, err := edit(cmd.Context(), c.client, name)
			if err != nil {
				return err
			}
			if changed {
				fmt.Fprintf(cmd.OutOrStdout(), changedMsg, name)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), unchangedMsg, name)
			}
			return nil
		},
	}
	cp.add(cmd.Flags())
	return cmd
}

func newTaintCommand() *cobra.Command {
	var cp controlPlaneFlags
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "taint [TYPE] NAME KEY[=VALUE]:EFFECT ... | KEY[:EFFECT]- ...",
		Short: "Add, replace or remove taints of a cluster (kubectl taint syntax)",
		Long: `Edit spec.taints of the Cluster NAME, with kubectl's taint syntax:

  KEY[=VALUE]:EFFECT    add a taint (with --overwrite, replace the one with the same key and effect)
  KEY[:EFFECT]-         remove the taint(s) with that key (and effect)

EFFECT is NoSchedule (keep new workloads away) or NoExecute (also evict what
runs there unless tolerated). NoExecute taints get timeAdded, from which
tolerationSeconds count. A type before NAME is optional, as in karmadactl taint
clusters NAME (TYPE NAME, or TYPE/NAME as below).
` + controlPlaneHelp,
		Example: `  lifeboat taint member1 dedicated=gpu:NoSchedule
  lifeboat taint clusters member1 maintenance:NoExecute --overwrite
  lifeboat taint cluster/member1 dedicated- maintenance:NoExecute-`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			typeArg, name, specs, err := taintArgs(args)
			if err != nil {
				return err
			}
			edit, err := cluster.ParseTaintSpecs(specs)
			if err != nil {
				return err
			}
			c, err := cp.connect()
			if err != nil {
				return err
			}
			if err := checkClusterType(c, typeArg, warnTo(cmd.ErrOrStderr())); err != nil {
				return err
			}
			res, err := cluster.EditTaints(cmd.Context(), c.client, name, edit, overwrite, time.Now)
			if err != nil {
				return err
			}
			printTaintResult(cmd.OutOrStdout(), name, res)
			return nil
		},
	}
	cp.add(cmd.Flags())
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "Replace a taint that has the same key and effect.")
	return cmd
}

// taintArgs splits `[TYPE] NAME SPEC...` and `TYPE/NAME SPEC...`. A first
// argument without '/' is a type only when the next one is not a taint spec:
// a cluster name can never look like one (it has neither ':' nor a trailing
// '-'). The type is returned as typed, to be resolved against the server.
func taintArgs(args []string) (typeArg, name string, specs []string, err error) {
	if len(args) >= 3 && !strings.Contains(args[0], "/") && !looksLikeTaintSpec(args[1]) {
		typeArg, args = args[0], args[1:]
		if strings.Contains(args[0], "/") {
			return "", "", nil, fmt.Errorf("%s %s: with TYPE/NAME there is no separate type argument", typeArg, args[0])
		}
	}
	if len(args) < 2 {
		return "", "", nil, errors.New("want NAME and at least one taint: KEY[=VALUE]:EFFECT or KEY[:EFFECT]-")
	}
	if typeArg == "" {
		if typeArg, name, err = clusterArg(args[0]); err != nil {
			return "", "", nil, err
		}
	} else {
		if err := cluster.ValidateClusterName(args[0]); err != nil {
			return "", "", nil, err
		}
		name = args[0]
	}
	return typeArg, name, args[1:], nil
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
