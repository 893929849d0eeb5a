package cli

import (
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// historyOptions are the flags of `lifeboat history`.
type historyOptions struct {
	namespace    string
	controlPlane controlPlaneFlags
}

// newHistoryCommand returns `lifeboat history (TYPE NAME | TYPE/NAME)`: the
// failover timeline of a resource template, read from its binding.
func newHistoryCommand() *cobra.Command {
	o := &historyOptions{}
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME)",
		Short: "Show the failover history of a resource template",
		Long: `Show the failover timeline of a resource template: every eviction recorded in its
binding's status.failoverHistory (when, why, from which cluster to which, the purge
mode, the state carried over, and how long the replacement took to be healthy),
then the evictions still in progress and the clusters where the application is
unhealthy right now.

The template is named as in kubectl: TYPE/NAME or TYPE NAME, where TYPE is any
name the control plane's API serves for the kind: plural, singular or short name,
Kind, optionally with its group (deployments.apps) or version and group
(deployment.v1.apps); custom resources work as soon as their CRD is installed. A
type served by several groups means the one the server lists first, with a warning.

Its binding is the ResourceBinding <name>-<kind> in the namespace (-n, default: the
context's namespace, or "default") for a namespaced kind, the ClusterResourceBinding
<name>-<kind> for a cluster-scoped one, and must record this very template
(group, kind, namespace and name) in spec.resource.

The control plane is --kubeconfig/--context (default: $KUBECONFIG, else
~/.kube/config, and its current context).`,
		Example: `  lifeboat history deploy/nginx -n default
  lifeboat history deployments.apps nginx
  lifeboat history flinkdeployment/foo --context lifeboat
  lifeboat history clusterrole/view`,
		Args: func(_ *cobra.Command, args []string) error {
			_, _, err := resourceArgs(args)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "Namespace of the template (default: the context's namespace, or \"default\"); ignored for a cluster-scoped kind.")
	o.controlPlane.add(f)
	return cmd
}

func (o *historyOptions) run(ctx context.Context, out, errOut io.Writer, args []string) error {
	typeArg, name, err := resourceArgs(args)
	if err != nil {
		return err
	}
	cp, err := o.controlPlane.connect()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	b, err := o.find(ctx, cp, typeArg, name, warnTo(errOut))
	if err != nil {
		return err
	}
	return printHistory(out, b, time.Now())
}

// find resolves the template typeArg/name against cp's API and reads its
// binding; warn receives the resolver's warnings.
func (o *historyOptions) find(ctx context.Context, cp *controlPlane, typeArg, name string, warn func(string)) (*boundTemplate, error) {
	ns := o.namespace
	if ns == "" {
		ns = cp.namespace
	}
	tmpl, err := resolveTemplate(newResourceResolver(cp.discovery, warn), typeArg, name, ns)
	if err != nil {
		return nil, err
	}
	return findBinding(ctx, cp.client, tmpl)
}

// templateRef is a resource template resolved against the API: its group
// and kind, its namespace ("" for a cluster-scoped kind) and its name.
type templateRef struct {
	groupKind       schema.GroupKind
	namespace, name string
}

func (t templateRef) String() string {
	if t.namespace == "" {
		return fmt.Sprintf("%s %s", t.groupKind, t.name)
	}
	return fmt.Sprintf("%s %s/%s", t.groupKind, t.namespace, t.name)
}

// resolveTemplate resolves typeArg with r; ns is dropped for a
// cluster-scoped kind.
func resolveTemplate(r *resourceResolver, typeArg, name, ns string) (templateRef, error) {
	m, err := r.mapping(typeArg)
	if err != nil {
		return templateRef{}, err
	}
	t := templateRef{groupKind: m.GroupVersionKind.GroupKind(), name: name}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		t.namespace = ns
	}
	return t, nil
}

// boundTemplate is what the history printout needs of a binding.
type boundTemplate struct {
	kind, namespace, name string
	generation            int64
	spec                  *workv1alpha2.ResourceBindingSpec
	status                *workv1alpha2.ResourceBindingStatus
}

// findBinding returns the binding of t: the ResourceBinding (namespaced t)
// or ClusterResourceBinding (cluster-scoped t) the detector names after it,
// provided its spec.resource is t itself. Two templates whose kinds share a
// name in different groups would share that binding name; the one that does
// not own it has no binding, and the error says whose it is.
func findBinding(ctx context.Context, c client.Reader, t templateRef) (*boundTemplate, error) {
	key := types.NamespacedName{Namespace: t.namespace, Name: detector.BindingName(t.groupKind.Kind, t.name)}
	var b *boundTemplate
	if t.namespace != "" {
		rb := &workv1alpha2.ResourceBinding{}
		if err := c.Get(ctx, key, rb); err != nil {
			return nil, bindingGetError(err, t, fmt.Sprintf("ResourceBinding %q in namespace %q", key.Name, key.Namespace))
		}
		b = &boundTemplate{kind: "ResourceBinding", namespace: rb.Namespace, name: rb.Name, generation: rb.Generation, spec: &rb.Spec, status: &rb.Status}
	} else {
		crb := &workv1alpha2.ClusterResourceBinding{}
		if err := c.Get(ctx, key, crb); err != nil {
			return nil, bindingGetError(err, t, fmt.Sprintf("ClusterResourceBinding %q", key.Name))
		}
		b = &boundTemplate{kind: "ClusterResourceBinding", name: crb.Name, generation: crb.Generation, spec: &crb.Spec, status: &crb.Status}
	}
	if ref := b.spec.Resource; !detector.BindsTemplate(ref, t.groupKind, t.namespace, t.name) {
		return nil, fmt.Errorf("no binding for %s: %s %q is the binding of %s %s %s (bindings are named <name>-<kind>, so this template cannot have its own)",
			t, b.kind, key.Name, ref.APIVersion, ref.Kind, path.Join(ref.Namespace, ref.Name))
	}
	return b, nil
}

// bindingGetError explains a failed read of the binding of t.
func bindingGetError(err error, t templateRef, what string) error {
	if apierrors.IsNotFound(err) {
		policy := "PropagationPolicy (or ClusterPropagationPolicy)"
		if t.namespace == "" {
			policy = "ClusterPropagationPolicy"
		}
		return fmt.Errorf("no binding for %s: found no %s. Is the template propagated by a %s?", t, what, policy)
	}
	return fmt.Errorf("reading the %s of %s: %w", what, t, err)
}

// printHistory writes the failover timeline of b.
func printHistory(out io.Writer, b *boundTemplate, now time.Time) error {
	ref := b.spec.Resource
	title := fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	if ref.Namespace != "" {
		title = fmt.Sprintf("%s %s/%s", ref.Kind, ref.Namespace, ref.Name)
	}
	bname := b.name
	if b.namespace != "" {
		bname = b.namespace + "/" + b.name
	}
	fmt.Fprintf(out, "%s (%s %s), placed on: %s\n", title, b.kind, bname, orDash(clusterList(b.spec.Clusters)))
	if c := meta.FindStatusCondition(b.status.Conditions, failover.ConditionFailoverTargetAvailable); c != nil && c.Status == metav1.ConditionFalse {
		fmt.Fprintf(out, "WARNING: %s\n", c.Message)
	}

	fmt.Fprintln(out)
	if len(b.status.FailoverHistory) == 0 {
		fmt.Fprintln(out, "No failover recorded.")
	} else {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tREASON\tFROM\tTO\tPURGE\tSTATE\tREPLACEMENT HEALTHY AFTER")
		var notes []string
		for _, h := range b.status.FailoverHistory {
			to := strings.Join(h.ClustersAfter, ",")
			switch {
			case to == "":
				to = "<pending>"
			case to == h.FromCluster:
				// Only an eviction undone (its cluster recovered before
				// anything was placed instead) places the workload back
				// on the cluster it was evicted from.
				to += " (undone)"
			}
			healthy := "-"
			if h.ReplacementHealthyTime != nil {
				healthy = h.ReplacementHealthyTime.Sub(h.Time.Time).Round(time.Second).String()
			} else if len(h.ClustersAfter) > 0 {
				healthy = "not yet"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Time.UTC().Format(time.RFC3339), h.Reason, h.FromCluster, to,
				policyv1alpha1.NormalizePurgeMode(h.PurgeMode), orDash(formatLabels(h.PreservedLabelState)), healthy)
			if h.Message != "" {
				notes = append(notes, fmt.Sprintf("  %s from %s: %s", h.Time.UTC().Format(time.RFC3339), h.FromCluster, h.Message))
			}
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the history: %w", err)
		}
		if len(notes) > 0 {
			fmt.Fprintln(out, "\nNotes:")
			for _, n := range notes {
				fmt.Fprintln(out, n)
			}
		}
	}

	if len(b.spec.GracefulEvictionTasks) > 0 {
		fmt.Fprintln(out, "\nEvictions in progress:")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FROM\tPURGE\tAGE\tOLD COPY\tPRODUCER")
		for _, t := range b.spec.GracefulEvictionTasks {
			age := "-"
			if t.CreationTimestamp != nil {
				age = now.Sub(t.CreationTimestamp.Time).Round(time.Second).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.FromCluster, policyv1alpha1.NormalizePurgeMode(t.PurgeMode), age, oldCopyFate(t), t.Producer)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the eviction tasks: %w", err)
		}
	}

	if len(b.status.UnhealthyClusters) > 0 {
		fmt.Fprintln(out, "\nUnhealthy now:")
		items := append([]workv1alpha2.UnhealthyCluster(nil), b.status.UnhealthyClusters...)
		sort.Slice(items, func(i, j int) bool { return items[i].ClusterName < items[j].ClusterName })
		for _, u := range items {
			fmt.Fprintf(out, "  %s since %s (%s)\n", u.ClusterName, u.UnhealthySince.UTC().Format(time.RFC3339), now.Sub(u.UnhealthySince.Time).Round(time.Second))
		}
	}
	return nil
}

// oldCopyFate says what happens to the copy left in the evicted cluster.
func oldCopyFate(t workv1alpha2.GracefulEvictionTask) string {
	switch {
	case t.SuppressDeletion != nil && *t.SuppressDeletion:
		return "kept until suppressDeletion=false"
	case t.SuppressDeletion != nil:
		return "deleting (confirmed)"
	}
	switch policyv1alpha1.NormalizePurgeMode(t.PurgeMode) {
	case policyv1alpha1.PurgeModeDirectly:
		return "deleted before the new copy"
	case policyv1alpha1.PurgeModeNever:
		return "kept until suppressDeletion=false"
	}
	if t.GracePeriodSeconds != nil {
		return fmt.Sprintf("kept until healthy elsewhere (max %s)", time.Duration(*t.GracePeriodSeconds)*time.Second)
	}
	return "kept until healthy elsewhere"
}

func clusterList(cs []workv1alpha2.TargetCluster) string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

func formatLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
