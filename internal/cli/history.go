package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// historyOptions are the flags of `lifeboat history`.
type historyOptions struct {
	namespace          string
	kubeconfig         string
	context            string
	controlPlaneConfig string
	controlPlaneCtx    string
}

// newHistoryCommand returns `lifeboat history <kind>/<name>`: the failover
// timeline of a resource template, read from its binding.
func newHistoryCommand() *cobra.Command {
	o := &historyOptions{}
	cmd := &cobra.Command{
		Use:   "history <kind>/<name>",
		Short: "Show the failover history of a resource template",
		Long: `Show the failover timeline of a resource template: every eviction recorded in its
binding's status.failoverHistory (when, why, from which cluster to which, the purge
mode, the state carried over, and how long the replacement took to be healthy),
then the evictions still in progress and the clusters where the application is
unhealthy right now.

The binding is <name>-<kind>: a ResourceBinding in the namespace, or a
ClusterResourceBinding for a cluster-scoped template.`,
		Example: `  lifeboat history deployment/nginx -n default
  lifeboat history flinkdeployment/foo --context lifeboat`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "Namespace of the template (default: the context's namespace, or \"default\").")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the Lifeboat control plane (default: $KUBECONFIG, or ~/.kube/config).")
	f.StringVar(&o.context, "context", "", "Context of the control plane in that kubeconfig (default: its current context).")
	f.StringVar(&o.controlPlaneConfig, "control-plane-kubeconfig", "", "Same as --kubeconfig (the name the cluster commands use).")
	f.StringVar(&o.controlPlaneCtx, "control-plane-context", "", "Same as --context (the name the cluster commands use).")
	return cmd
}

func (o *historyOptions) run(ctx context.Context, out io.Writer, ref string) error {
	kind, name, ok := strings.Cut(ref, "/")
	if !ok || kind == "" || name == "" {
		return fmt.Errorf("want <kind>/<name>, e.g. deployment/nginx; got %q", ref)
	}
	c, ns, err := o.client()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	b, err := findBinding(ctx, c, kind, name, ns)
	if err != nil {
		return err
	}
	return printHistory(out, b, time.Now())
}

// client builds the control-plane client and returns the namespace to use.
func (o *historyOptions) client() (client.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	kubeconfig, kctx := o.kubeconfig, o.context
	if o.controlPlaneConfig != "" {
		kubeconfig = o.controlPlaneConfig
	}
	if o.controlPlaneCtx != "" {
		kctx = o.controlPlaneCtx
	}
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kctx})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the control-plane kubeconfig: %w", err)
	}
	ns := o.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = metav1.NamespaceDefault
		}
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("building the control-plane client: %w", err)
	}
	return c, ns, nil
}

// boundTemplate is what the history printout needs of a binding.
type boundTemplate struct {
	kind, namespace, name string
	generation            int64
	spec                  *workv1alpha2.ResourceBindingSpec
	status                *workv1alpha2.ResourceBindingStatus
}

// findBinding finds the binding of the template kind/name: kind may be a
// Kind or a resource name ("deployment", "deployments", "Deployment"). A
// namespaced kind is looked up as a ResourceBinding in ns, a cluster-scoped
// one as a ClusterResourceBinding; when the API server does not know the
// kind, both are tried.
func findBinding(ctx context.Context, c client.Client, kind, name, ns string) (*boundTemplate, error) {
	namespaced, clusterScoped := true, true
	if gvk, err := c.RESTMapper().KindFor(schema.GroupVersionResource{Resource: strings.ToLower(kind)}); err == nil {
		kind = gvk.Kind
		if m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			isNS := m.Scope.Name() == meta.RESTScopeNameNamespace
			namespaced, clusterScoped = isNS, !isNS
		}
	}
	bindingName := detector.BindingName(kind, name)
	var tried []string
	if namespaced {
		rb := &workv1alpha2.ResourceBinding{}
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: bindingName}, rb)
		switch {
		case err == nil:
			return &boundTemplate{kind: "ResourceBinding", namespace: ns, name: rb.Name, generation: rb.Generation, spec: &rb.Spec, status: &rb.Status}, nil
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading ResourceBinding %s/%s: %w", ns, bindingName, err)
		}
		tried = append(tried, fmt.Sprintf("ResourceBinding %q in namespace %q", bindingName, ns))
	}
	if clusterScoped {
		crb := &workv1alpha2.ClusterResourceBinding{}
		err := c.Get(ctx, types.NamespacedName{Name: bindingName}, crb)
		switch {
		case err == nil:
			return &boundTemplate{kind: "ClusterResourceBinding", name: crb.Name, generation: crb.Generation, spec: &crb.Spec, status: &crb.Status}, nil
		case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
			return nil, fmt.Errorf("reading ClusterResourceBinding %s: %w", bindingName, err)
		}
		tried = append(tried, fmt.Sprintf("ClusterResourceBinding %q", bindingName))
	}
	return nil, errors.New("no binding for " + kind + "/" + name + ": found no " + strings.Join(tried, " and no ") +
		". Is the template propagated by a PropagationPolicy (or ClusterPropagationPolicy)?")
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
			if to == "" {
				to = "<pending>"
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
