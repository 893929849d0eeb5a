package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// kubeconfigRule is the one rule every command's cluster flags follow;
// `lifeboat --help` and README's CLI section state it.
const kubeconfigRule = `Which cluster a flag names is the same in every command:

  --kubeconfig, --context    the Lifeboat control plane, as in kubectl and karmadactl
                             (default: $KUBECONFIG, else ~/.kube/config, and its
                             current context). Every command that talks to the
                             control plane takes them; --control-plane-kubeconfig and
                             --control-plane-context are other names for them.
  --cluster-kubeconfig,      a MEMBER cluster (karmadactl's names), only in the
  --cluster-context          commands that contact one: join, unjoin --cleanup-member,
                             and agent (the member it runs in).
  --state-dir DIR            the local environment of "lifeboat up" (default .lifeboat),
                             whose kubeconfig DIR/kubeconfig has the contexts
                             lifeboat (the control plane) and member1..N: up, down,
                             status and env use it, and bench by default.

A command given a flag it does not take says which cluster it works on. Each
request to a cluster gives up after a minute.`

// Names of the cluster flags.
const (
	flagKubeconfig             = "kubeconfig"
	flagContext                = "context"
	flagControlPlaneKubeconfig = "control-plane-kubeconfig"
	flagControlPlaneContext    = "control-plane-context"
	flagClusterKubeconfig      = "cluster-kubeconfig"
	flagClusterContext         = "cluster-context"
)

// kubeconfigRef names a kubeconfig and a context in it; empty fields take
// clientcmd's defaults ($KUBECONFIG, else ~/.kube/config; the current
// context).
type kubeconfigRef struct {
	path, context string
}

func (r kubeconfigRef) given() bool { return r.path != "" || r.context != "" }

// restConfig loads the cluster r names and the namespace of its context
// (or "default").
func (r kubeconfigRef) restConfig() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = r.path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: r.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig %s: %w", r, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = metav1.NamespaceDefault
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	return cfg, ns, nil
}

// requestTimeout bounds each request a command makes, unless the kubeconfig
// sets its own: an API server that accepts the connection and never answers
// is an error, not a command that waits for good. Commands that wait for
// something (unjoin, init) poll with requests of their own.
const requestTimeout = time.Minute

func (r kubeconfigRef) String() string {
	path := r.path
	if path == "" {
		path = "$KUBECONFIG or ~/.kube/config"
	}
	if r.context != "" {
		return fmt.Sprintf("%s (context %s)", path, r.context)
	}
	return path
}

// controlPlaneFlags are --kubeconfig and --context, and their other names
// --control-plane-kubeconfig and --control-plane-context: the Lifeboat
// control plane.
type controlPlaneFlags struct {
	kubeconfig, context     string
	cpKubeconfig, cpContext string
}

// Usage of the control-plane flags with the usual defaults.
const (
	controlPlaneKubeconfigUsage = "Kubeconfig of the Lifeboat control plane (default: $KUBECONFIG, else ~/.kube/config)."
	controlPlaneContextUsage    = "Context of the Lifeboat control plane in that kubeconfig (default: its current context)."
)

func (f *controlPlaneFlags) add(fs *pflag.FlagSet) {
	f.addWithUsage(fs, controlPlaneKubeconfigUsage, controlPlaneContextUsage)
}

// addWithUsage registers the flags with usages that state other defaults.
func (f *controlPlaneFlags) addWithUsage(fs *pflag.FlagSet, kubeconfigUsage, contextUsage string) {
	fs.StringVar(&f.kubeconfig, flagKubeconfig, "", kubeconfigUsage)
	fs.StringVar(&f.context, flagContext, "", contextUsage)
	fs.StringVar(&f.cpKubeconfig, flagControlPlaneKubeconfig, "", "Same as --kubeconfig: the Lifeboat control plane.")
	fs.StringVar(&f.cpContext, flagControlPlaneContext, "", "Same as --context: the Lifeboat control plane.")
}

// ref merges each flag with its other name; two different values are an
// error rather than a silent choice.
func (f *controlPlaneFlags) ref() (kubeconfigRef, error) {
	path, err := sameFlag(flagKubeconfig, f.kubeconfig, flagControlPlaneKubeconfig, f.cpKubeconfig)
	if err != nil {
		return kubeconfigRef{}, err
	}
	kctx, err := sameFlag(flagContext, f.context, flagControlPlaneContext, f.cpContext)
	if err != nil {
		return kubeconfigRef{}, err
	}
	return kubeconfigRef{path: path, context: kctx}, nil
}

// sameFlag returns the value of a flag given under either of its names.
func sameFlag(nameA, a, nameB, b string) (string, error) {
	if a != "" && b != "" && a != b {
		return "", fmt.Errorf("--%s and --%s name the same cluster but disagree (%q, %q); give one", nameA, nameB, a, b)
	}
	if a != "" {
		return a, nil
	}
	return b, nil
}

// controlPlane is a connection to the control plane: a client for
// Lifeboat's and Kubernetes' types, discovery for resolving resource types,
// and the namespace of the kubeconfig's context.
type controlPlane struct {
	client    client.Client
	discovery discovery.DiscoveryInterface
	namespace string
}

// connect builds the connection to the control plane f names.
func (f *controlPlaneFlags) connect() (*controlPlane, error) {
	ref, err := f.ref()
	if err != nil {
		return nil, err
	}
	return connectControlPlane(ref)
}

// client builds a client of the control plane f names.
func (f *controlPlaneFlags) client() (client.Client, error) {
	cp, err := f.connect()
	if err != nil {
		return nil, err
	}
	return cp.client, nil
}

// connectControlPlane builds the connection to the control plane ref names.
func connectControlPlane(ref kubeconfigRef) (*controlPlane, error) {
	cfg, ns, err := ref.restConfig()
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building the control-plane client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the control-plane discovery client: %w", err)
	}
	return &controlPlane{client: c, discovery: dc, namespace: ns}, nil
}

// memberFlags are --cluster-kubeconfig and --cluster-context: a member
// cluster.
type memberFlags struct {
	kubeconfig, context string
}

func (f *memberFlags) add(fs *pflag.FlagSet, purpose string) {
	fs.StringVar(&f.kubeconfig, flagClusterKubeconfig, "", "Kubeconfig of the MEMBER cluster"+purpose+" (default, when only --cluster-context is given: $KUBECONFIG, else ~/.kube/config).")
	fs.StringVar(&f.context, flagClusterContext, "", "Context of the MEMBER cluster in that kubeconfig (default: its current context).")
}

func (f *memberFlags) ref() kubeconfigRef {
	return kubeconfigRef{path: f.kubeconfig, context: f.context}
}

// joinKubeconfigs decides which clusters join's flags name:
//  1. --cluster-kubeconfig/--cluster-context given: they name the member, and
//     --kubeconfig/--context (or their other names) the control plane;
//  2. otherwise, --kubeconfig/--context given: join's older spelling, in which
//     they named the member; the control plane is then
//     --control-plane-kubeconfig/--control-plane-context, and older reports
//     true so that the caller says so;
//  3. neither: no member (member.given() is false).
func joinKubeconfigs(cp controlPlaneFlags, m memberFlags) (member, controlPlane kubeconfigRef, older bool, err error) {
	if m.ref().given() {
		controlPlane, err = cp.ref()
		return m.ref(), controlPlane, false, err
	}
	legacy := kubeconfigRef{path: cp.kubeconfig, context: cp.context}
	if !legacy.given() {
		controlPlane, err = cp.ref()
		return kubeconfigRef{}, controlPlane, false, err
	}
	return legacy, kubeconfigRef{path: cp.cpKubeconfig, context: cp.cpContext}, true, nil
}

// explainFlagError adds to cobra's "unknown flag" error, for the cluster
// flags, which cluster the command works on instead.
func explainFlagError(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	if hint := clusterFlagHint(cmd, name); hint != "" {
		return fmt.Errorf("%w: %s", err, hint)
	}
	return err
}

// clusterFlagHint says why cmd does not take the cluster flag name, or "".
func clusterFlagHint(cmd *cobra.Command, name string) string {
	has := func(n string) bool { return cmd.Flags().Lookup(n) != nil || cmd.InheritedFlags().Lookup(n) != nil }
	path := cmd.CommandPath()
	switch name {
	case flagClusterKubeconfig, flagClusterContext:
		if has("member-context") {
			return fmt.Sprintf("%s reaches the members through their contexts in --kubeconfig (see --member-context) and takes no --%s", path, name)
		}
		if has(flagKubeconfig) {
			return fmt.Sprintf("%s does not contact a member cluster with a kubeconfig of its own; --%s names a member in join and unjoin --cleanup-member only (the control plane is --kubeconfig/--context)", path, name)
		}
	case flagKubeconfig, flagContext, flagControlPlaneKubeconfig, flagControlPlaneContext:
	default:
		return ""
	}
	if !cmd.HasParent() {
		return fmt.Sprintf("give --%s after the command that takes it (lifeboat COMMAND --%s ...; see lifeboat --help)", name, name)
	}
	if cmd.HasSubCommands() {
		var takers []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() && (sub.Flags().Lookup(name) != nil || sub.InheritedFlags().Lookup(name) != nil) {
				takers = append(takers, sub.CommandPath())
			}
		}
		if len(takers) > 0 {
			return fmt.Sprintf("%s only groups commands; give --%s to one of them: %s", path, name, strings.Join(takers, ", "))
		}
	}
	switch {
	case has(flagAgentKubeconfig):
		return fmt.Sprintf("%s reaches the control plane at CONTROL_PLANE_URL with a bootstrap token, and writes the agent's kubeconfig to --%s; it takes no --%s", path, flagAgentKubeconfig, name)
	case has("state-dir"):
		return fmt.Sprintf("%s works on the local environment in --state-dir (its kubeconfig is DIR/kubeconfig) and takes no --%s", path, name)
	case !has(flagKubeconfig):
		return fmt.Sprintf("%s talks to no cluster and takes no --%s", path, name)
	}
	return ""
}

// warnTo returns a warning printer for w, in kubectl's format.
func warnTo(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(w, "Warning: %s\n", msg) }
}

// loadMember loads the member cluster ref names.
func loadMember(ref kubeconfigRef) (cluster.MemberKubeconfig, error) {
	mk, err := cluster.LoadKubeconfig(ref.path, ref.context)
	if err != nil {
		return cluster.MemberKubeconfig{}, fmt.Errorf("member: %w", err)
	}
	return mk, nil
}
