package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/orphans"
)

// newClusterCommands returns join, unjoin, cordon, uncordon, taint, and
// token and register (pull mode).
func newClusterCommands() []*cobra.Command {
	return []*cobra.Command{
		newJoinCommand(),
		newUnjoinCommand(),
		newCordonCommand(),
		newUncordonCommand(),
		newTaintCommand(),
		newTokenCommand(),
		newRegisterCommand(),
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
	var resources []string
	var printRole bool
	cmd := &cobra.Command{
		Use:   "join NAME --cluster-kubeconfig MEMBER_KUBECONFIG [--cluster-context MEMBER_CONTEXT]",
		Short: "Register a member cluster (push mode) in the control plane",
		Long: `Register a member cluster in the Lifeboat control plane, in push mode.

--cluster-kubeconfig/--cluster-context name the MEMBER to join (no default: give
one or both); --kubeconfig/--context name the control plane, as in every lifeboat
command (default: $KUBECONFIG, else ~/.kube/config, and its current context).

The member's API server URL becomes the Cluster's apiEndpoint and its kube-system
namespace UID the Cluster's id. The member's kubeconfig is used only by join
itself, never stored: join creates in the member the ServiceAccount
karmada-cluster/lifeboat-NAME, a long-lived token Secret for it, and the ClusterRole
and ClusterRoleBinding lifeboat-NAME, which allow Lifeboat only this:
  - create, update, patch and delete the kinds it may propagate there: namespaces,
    configmaps, secrets, services, serviceaccounts, persistentvolumeclaims,
    limitranges, resourcequotas, deployments, statefulsets, daemonsets and
    replicasets (apps), jobs and cronjobs (batch), horizontalpodautoscalers
    (autoscaling), poddisruptionbudgets (policy), ingresses and networkpolicies
    (networking.k8s.io), and each --propagate-resource;
  - read nodes and pods (the Cluster's resource summary);
  - list every kind (to find what it left behind, and to prove a namespace it
    created empty before removing it).
A kind outside these fails to apply in that member with an error naming it. Joining
the same NAME again (after unjoin) brings the role up to date.

In the control plane it creates the Secret karmada-cluster/NAME (keys token and
caBundle: the kubeconfig's CA, else the one the member put in the token Secret)
and the Cluster NAME (syncMode Push). The control plane verifies the member's
certificate with that CA; a kubeconfig that skips verification
(insecure-skip-tls-verify) is refused unless --insecure-skip-tls-verification is
given, which the Cluster then records (kubectl get clusters -o wide shows it). A
NAME already joined, or a member already joined under another name, is refused.

A member joined again may still run copies from before (it was unjoined while
down): once it is Ready, the controller manager adopts those that a binding places
there again, and removes the others after --member-orphan-grace (a controller
manager flag, 2m by default), under the rules of docs/member-cleanup.md.

Older spelling, still accepted: without --cluster-kubeconfig and --cluster-context,
join reads --kubeconfig/--context as the MEMBER's and takes the control plane from
--control-plane-kubeconfig/--control-plane-context (default: $KUBECONFIG, else
~/.kube/config, and its current context), and prints a warning saying so.`,
		Example: `  # the control plane from $KUBECONFIG, the member from its own file
  lifeboat join member4 --cluster-kubeconfig member4.kubeconfig

  # both in one kubeconfig
  lifeboat join member4 --cluster-context member4 --context lifeboat --region eu-west-1

  # Lifeboat may also propagate Flink's kinds and CRDs there
  lifeboat join member4 --cluster-kubeconfig member4.kubeconfig \
    --propagate-resource '*.flink.apache.org' --propagate-resource customresourcedefinitions.apiextensions.k8s.io`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := opts.Validate(); err != nil {
				return err
			}
			for _, r := range resources {
				mr, err := cluster.ParseMemberResource(r)
				if err != nil {
					return fmt.Errorf("--propagate-resource: %w", err)
				}
				opts.Resources = append(opts.Resources, mr)
			}
			if printRole {
				return printMemberRole(cmd.OutOrStdout(), opts)
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
	cmd.Flags().DurationVar(&opts.TokenTimeout, "token-timeout", cluster.DefaultTokenTimeout, "How long to wait for the member to issue the ServiceAccount's token (0: the default).")
	cmd.Flags().StringArrayVar(&resources, "propagate-resource", nil, "A kind Lifeboat may also create, update and delete in the member, as RESOURCE[.GROUP] (deployments.apps, *.flink.apache.org; *.* for every kind). Repeatable.")
	cmd.Flags().BoolVar(&printRole, "print-member-role", false, "Print the ClusterRole join would create in the member (with --propagate-resource) as YAML and exit, contacting nothing: to review the grant, or for the member's administrator to apply.")
	cmd.Flags().BoolVar(&opts.InsecureSkipTLSVerification, "insecure-skip-tls-verification", false, "Let the control plane reach the member without verifying its serving certificate (recorded in the Cluster). Without it, a kubeconfig that skips verification is refused.")
	return cmd
}

// printMemberRole writes the ClusterRole join would create for opts.
func printMemberRole(out io.Writer, opts cluster.JoinOptions) error {
	role := rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: cluster.ServiceAccountName(opts.Name)},
		Rules:      cluster.MemberRules(append(cluster.DefaultMemberResources(), opts.Resources...)),
	}
	data, err := yaml.Marshal(role)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}

func printJoined(out io.Writer, res cluster.JoinResult) {
	c := res.Cluster
	fmt.Fprintf(out, "Cluster %s joined (API endpoint %s, id %s).\n", c.Name, c.Spec.APIEndpoint, c.Spec.ID)
	fmt.Fprintf(out, "Credentials: token of ServiceAccount %s, created in the member with ClusterRole %s, stored in Secret %s/%s.\n",
		res.ServiceAccount, cluster.ServiceAccountName(c.Name), c.Spec.SecretRef.Namespace, c.Spec.SecretRef.Name)
	if c.Spec.InsecureSkipTLSVerification {
		fmt.Fprintln(out, "TLS: the member's serving certificate is NOT verified (--insecure-skip-tls-verification).")
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

The member is never contacted by this command (unjoin works when it is down): the
controller manager deletes the execution namespace karmada-es-NAME and its Works.
While the member is Ready, the Works delete what they created in it first (at most
--cluster-deletion-grace-period, a controller manager flag, 1m by default); a member
that is not Ready is left as it is, and what Lifeboat created there keeps running.
By default unjoin waits (--timeout) until the Cluster is gone.

A Pull cluster's agent deletes what its Works created while it runs. Once the Cluster
is gone, unjoin also revokes the agent: its bootstrap tokens, its roles and bindings
and its Lease in the control plane.

With --cleanup-member, unjoin then cleans the MEMBER named by
--cluster-kubeconfig/--cluster-context (required then; it must answer):
  - the ServiceAccount, token Secret, ClusterRole and ClusterRoleBinding
    lifeboat-NAME that join created there;
  - once the Cluster is gone, the objects Lifeboat left there for NAME whose Work no
    longer exists, under the orphan rule of docs/member-cleanup.md (written by
    Lifeboat, naming a binding that does not place them on NAME; never a Namespace
    or CustomResourceDefinition, never an object of anyone else);
  - the namespaces Lifeboat created there that are left with nothing in them.
Run it again later for a member that was down: with --cleanup-member, a NAME no
longer joined only cleans the member. A member joined again is not cleaned here:
under the same name the controller manager cleans it (the same rules, after a
grace period); under another name the objects left for NAME are only reported (the
Cluster's OrphansKept Event), for you to delete.`,
		Example: `  lifeboat unjoin member4
  lifeboat unjoin member4 --cleanup-member --cluster-kubeconfig member4.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typeArg, name, err := clusterArg(args[0])
			if err != nil {
				return err
			}
			if timeout < 0 {
				return fmt.Errorf("--timeout %s must not be negative", timeout)
			}
			out := cmd.OutOrStdout()
			memberRef := member.ref()
			switch {
			case memberRef.given() && !cleanupMember:
				return fmt.Errorf("--cluster-kubeconfig/--cluster-context name the member and are only used with --cleanup-member")
			case cleanupMember && !memberRef.given():
				return fmt.Errorf("--cleanup-member needs the member's kubeconfig: --cluster-kubeconfig FILE and/or --cluster-context CONTEXT (--kubeconfig/--context name the control plane)")
			}
			var mc *memberClients
			if cleanupMember {
				// Load the member's kubeconfig first: fail before deleting anything.
				mk, err := loadMember(memberRef)
				if err != nil {
					return err
				}
				if mc, err = newMemberClients(mk, name); err != nil {
					return err
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
			pull := isPullCluster(cmd.Context(), c.client, name)
			res, err := cluster.Unregister(cmd.Context(), c.client, name, timeout)
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
			if pull && res.Gone {
				// The agent removed what the Works had created; its
				// access goes with the Cluster.
				revoked, err := bootstrap.RevokeAgent(cmd.Context(), c.client, name)
				for _, r := range revoked {
					fmt.Fprintf(out, "Deleted %s of the agent of %s.\n", r, name)
				}
				if err != nil {
					return err
				}
			} else if pull {
				fmt.Fprintf(out, "The agent of %s keeps its access until the Cluster is gone: run this command again then, or `lifeboat token delete --cluster %s` and delete its roles (label %s=%s).\n", name, name, bootstrap.LabelAgentCluster, name)
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
			swept, err := cluster.SweepUnjoinedMember(cmd.Context(), c.client, mc.kube, mc.member, name, timeout)
			printSwept(out, swept, len(deleted))
			return err
		},
	}
	cp.add(cmd.Flags())
	member.add(cmd.Flags(), " to clean up (with --cleanup-member)")
	cmd.Flags().BoolVar(&wait, "wait", true, "Wait until the Cluster is gone from the control plane (and, with --cleanup-member, for emptied namespaces to be removable).")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "How long --wait waits.")
	cmd.Flags().BoolVar(&cleanupMember, "cleanup-member", false, "Also clean the member (needs --cluster-kubeconfig/--cluster-context): what join created there and, once the Cluster is gone, what Lifeboat left there (see above).")
	return cmd
}

// isPullCluster says whether the Cluster name exists in Pull mode; a read
// that fails says no (unjoin reports it).
func isPullCluster(ctx context.Context, c client.Client, name string) bool {
	var cl clusterv1alpha1.Cluster
	return c.Get(ctx, client.ObjectKey{Name: name}, &cl) == nil && cl.Spec.SyncMode == clusterv1alpha1.Pull
}

// memberClients reach a member directly, for unjoin --cleanup-member.
type memberClients struct {
	kube   kubernetes.Interface
	member orphans.Member
}

func newMemberClients(mk cluster.MemberKubeconfig, name string) (*memberClients, error) {
	kube, err := kubernetes.NewForConfig(mk.Config)
	if err != nil {
		return nil, fmt.Errorf("building a client for the member: %w", err)
	}
	dyn, err := dynamic.NewForConfig(mk.Config)
	if err != nil {
		return nil, fmt.Errorf("building a client for the member: %w", err)
	}
	md, err := metadata.NewForConfig(mk.Config)
	if err != nil {
		return nil, fmt.Errorf("building a client for the member: %w", err)
	}
	return &memberClients{kube: kube, member: orphans.ClientMember(dyn, md, kube.Discovery(), name)}, nil
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
