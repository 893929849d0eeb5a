//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/hostnode"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// The host suite (LIFEBOAT_E2E_HOST=1, `make test-host`) installs the Helm
// chart into the environment's host cluster, a cluster with a real node,
// joins the members to the control plane that runs there, and runs the
// TestHost* scenarios and the seeds' walkthroughs named in the Makefile
// against it. The environment's own controller manager is stopped first:
// one member is managed by one control plane.

// Where the chart is installed and how the suite reaches it.
const (
	hostRelease   = "lifeboat"
	hostNamespace = "lifeboat-system"
	// hostNodePort exposes the Lifeboat API server on the node's address,
	// as a platform team would expose it to clients outside the host
	// cluster; the certificate names the node's address (extraSANs).
	hostNodePort = 31443
)

// hostSuite is what the host suite knows beyond suite.
type hostSuite struct {
	// env is the environment itself (host cluster, members, and its own
	// control plane, idle).
	env *localenv.State
	// helm is the pinned helm binary.
	helm string
	// imageRef is Lifeboat's image as the node has it.
	imageRef string
	// installed is how long helm install took until every pod was Ready.
	installed time.Duration
}

var host *hostSuite

func hostMode() bool { return os.Getenv("LIFEBOAT_E2E_HOST") != "" }

// hostValues are the chart values of the suite: Lifeboat's image as built
// by make image, nothing pulled, the API server on a NodePort.
func hostValues(imageRef string, extra ...string) []string {
	registry, rest, _ := strings.Cut(imageRef, "/")
	repo, tag, _ := strings.Cut(rest, ":")
	set := []string{
		"image.registry=" + registry, "image.repository=" + repo,
		"image.pullPolicy=Never", "etcd.image.pullPolicy=Never", "apiServer.image.pullPolicy=Never",
		"kubeControllerManager.image.pullPolicy=Never",
		"apiServer.service.type=NodePort", fmt.Sprintf("apiServer.service.nodePort=%d", hostNodePort),
		"apiServer.extraSANs[0]=" + hostnode.NodeIP,
	}
	for i, a := range controllerManagerArgs {
		set = append(set, fmt.Sprintf("controllerManager.extraArgs[%d]=%s", i, a))
	}
	set = append(set, extra...)
	// A tag of digits only (a short commit hash can be one) would be a
	// number with --set, which the schema refuses.
	args := []string{"--set-string", "image.tag=" + tag}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

// helmCmd runs helm against the host cluster.
func helmCmd(ctx context.Context, env *localenv.State, helm string, args ...string) (string, error) {
	full := append([]string{"--kubeconfig", env.KubeconfigPath(), "--kube-context", localenv.HostClusterName}, args...)
	cmd := exec.CommandContext(ctx, helm, full...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, b.String())
	}
	return b.String(), err
}

// setUpHost starts the environment with a host cluster in dir, installs
// the chart, joins the members to the control plane in the host cluster,
// and returns a state whose "lifeboat" cluster is that control plane
// (written under dir/../in-cluster), for the scenarios' helpers.
func setUpHost(ctx context.Context, bin, cacheDir, dir string) (*localenv.State, error) {
	image, imageRef, helm := os.Getenv("LIFEBOAT_E2E_IMAGE"), os.Getenv("LIFEBOAT_E2E_IMAGE_REF"), os.Getenv("LIFEBOAT_E2E_HELM")
	if image == "" || imageRef == "" || helm == "" {
		return nil, errors.New("the host suite needs LIFEBOAT_E2E_IMAGE (make image's archive), LIFEBOAT_E2E_IMAGE_REF (its tag) and LIFEBOAT_E2E_HELM (bin/helm): run it with make test-host")
	}
	args := []string{"up", "--members", "3", "--host", "--host-image", image, "--state-dir", dir, "--cache-dir", cacheDir,
		"--member-propagate-resource", "*.example.lifeboat.dev"}
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("lifeboat up --host: %w", err)
	}
	fmt.Printf("e2e-host: environment with a host cluster up in %s\n", time.Since(start).Round(time.Second))
	env, err := localenv.Load(dir)
	if err != nil {
		return nil, err
	}
	if err := localenv.StopComponent(dir, localenv.ControllerManagerComponent); err != nil {
		return nil, fmt.Errorf("stopping the environment's own controller manager: %w", err)
	}
	host = &hostSuite{env: env, helm: helm, imageRef: imageRef}

	start = time.Now()
	install := append([]string{"install", hostRelease, chartDir(), "--namespace", hostNamespace, "--create-namespace",
		"--wait", "--wait-for-jobs", "--timeout", "5m"}, hostValues(imageRef)...)
	if _, err := helmCmd(ctx, env, helm, install...); err != nil {
		return nil, errors.Join(err, describeHostPods(ctx, env))
	}
	host.installed = time.Since(start)
	fmt.Printf("e2e-host: helm install: every pod Ready in %s\n", host.installed.Round(100*time.Millisecond))

	inCluster, err := inClusterState(ctx, env, filepath.Join(filepath.Dir(dir), "in-cluster"))
	if err != nil {
		return nil, err
	}
	start = time.Now()
	for _, m := range env.Members() {
		out, err := exec.CommandContext(ctx, bin, "join", m, "--kubeconfig", inCluster.KubeconfigPath(), "--context", localenv.ControlPlaneName,
			"--cluster-kubeconfig", env.KubeconfigPath(), "--cluster-context", m,
			"--propagate-resource", "*.flink.apache.org", "--propagate-resource", "*.example.lifeboat.dev").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("lifeboat join %s to the control plane in the host cluster: %w\n%s", m, err, out)
		}
	}
	if err := waitClustersReady(ctx, inCluster, env.Members()); err != nil {
		return nil, err
	}
	fmt.Printf("e2e-host: %d members joined and Ready in %s\n", len(env.Members()), time.Since(start).Round(100*time.Millisecond))
	return inCluster, nil
}

// chartDir is charts/lifeboat of this checkout.
func chartDir() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..", "charts", "lifeboat")
}

// hostClientset is the host cluster's admin client.
func hostClientset(env *localenv.State) (kubernetes.Interface, error) {
	cfg, err := env.RESTConfig(localenv.HostClusterName)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// describeHostPods says what the chart's pods are doing, for a failed install.
func describeHostPods(ctx context.Context, env *localenv.State) error {
	cs, err := hostClientset(env)
	if err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods(hostNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s", p.Name, p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " [%s ready=%v restarts=%d", c.Name, c.Ready, c.RestartCount)
			if c.State.Waiting != nil {
				fmt.Fprintf(&b, " waiting %s: %s", c.State.Waiting.Reason, c.State.Waiting.Message)
			}
			if c.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, " last exit %d %s", c.LastTerminationState.Terminated.ExitCode, c.LastTerminationState.Terminated.Reason)
			}
			b.WriteString("]")
		}
		b.WriteString("\n")
	}
	return fmt.Errorf("the chart's pods:\n%s", b.String())
}

// chartSecret reads one key of a Secret the chart created.
func chartSecret(ctx context.Context, cs kubernetes.Interface, name, key string) ([]byte, error) {
	s, err := cs.CoreV1().Secrets(hostNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", hostNamespace, name, err)
	}
	v, ok := s.Data[key]
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s has no %s", hostNamespace, name, key)
	}
	return v, nil
}

// inClusterState writes, in dir, a state and kubeconfig like the
// environment's, whose control plane is the chart's API server (through
// its NodePort, with the administrator's kubeconfig of the chart's
// Secret) and whose members are the environment's. The CA bundle holds
// both CAs.
func inClusterState(ctx context.Context, env *localenv.State, dir string) (*localenv.State, error) {
	cs, err := hostClientset(env)
	if err != nil {
		return nil, err
	}
	raw, err := chartSecret(ctx, cs, hostRelease+"-admin-kubeconfig", "kubeconfig")
	if err != nil {
		return nil, err
	}
	admin, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing the chart's admin kubeconfig: %w", err)
	}
	ctxName := admin.CurrentContext
	ac := admin.Contexts[ctxName]
	if ac == nil {
		return nil, fmt.Errorf("the chart's admin kubeconfig has no current context")
	}
	chartCA := admin.Clusters[ac.Cluster].CertificateAuthorityData
	token := admin.AuthInfos[ac.AuthInfo].Token
	if len(chartCA) == 0 || token == "" {
		return nil, fmt.Errorf("the chart's admin kubeconfig lacks its CA or token")
	}
	envCA, err := os.ReadFile(env.CAPath())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		return nil, err
	}
	bundle := append(append(append([]byte{}, envCA...), '\n'), chartCA...)
	if err := os.WriteFile(filepath.Join(dir, "pki", "ca.crt"), bundle, 0o600); err != nil {
		return nil, err
	}
	s := *env
	s.Dir = dir
	s.Host = nil
	s.Clusters = nil
	for _, c := range env.Clusters {
		switch {
		case c.Name == localenv.ControlPlaneName:
			c.Server = fmt.Sprintf("https://%s:%d", hostnode.NodeIP, hostNodePort)
			c.Token = token
			c.ControllerManagerToken = ""
		case !c.Member:
			continue
		}
		s.Clusters = append(s.Clusters, c)
	}
	data, err := json.MarshalIndent(&s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), data, 0o600); err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	for _, c := range s.Clusters {
		cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: bundle}
		cfg.AuthInfos[c.Name] = &clientcmdapi.AuthInfo{Token: c.Token}
		cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	}
	cfg.CurrentContext = localenv.ControlPlaneName
	if err := clientcmd.WriteToFile(*cfg, s.KubeconfigPath()); err != nil {
		return nil, err
	}
	return localenv.Load(dir)
}

// waitClustersReady waits until every named Cluster is Ready in the
// control plane of s.
func waitClustersReady(ctx context.Context, s *localenv.State, members []string) error {
	cfg, err := s.RESTConfig(localenv.ControlPlaneName)
	if err != nil {
		return err
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	var seen string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list clusterv1alpha1.ClusterList
		if err := c.List(ctx, &list); err != nil {
			seen = err.Error()
			return false, nil
		}
		ready := map[string]bool{}
		var parts []string
		for _, cl := range list.Items {
			ready[cl.Name] = meta.IsStatusConditionTrue(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
			parts = append(parts, fmt.Sprintf("%s Ready=%v", cl.Name, ready[cl.Name]))
		}
		seen = strings.Join(parts, ", ")
		for _, m := range members {
			if !ready[m] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the members did not become Ready in the control plane in the host cluster (last: %s): %w", seen, err)
	}
	return nil
}

// tearDownHost uninstalls the chart and checks that nothing it created is
// left in the host cluster, while the members keep what was propagated.
func tearDownHost(ctx context.Context) []string {
	if host == nil {
		return nil
	}
	var problems []string
	// Members keep what was propagated to them: uninstalling the control
	// plane is not a reason to stop workloads.
	if err := propagateKeeper(ctx); err != nil {
		return []string{err.Error()}
	}
	before, err := memberWorkloads(ctx, host.env)
	if err != nil {
		return []string{err.Error()}
	}
	if len(before) == 0 {
		return []string{"no workload propagated before helm uninstall; the check would prove nothing"}
	}
	start := time.Now()
	if _, err := helmCmd(ctx, host.env, host.helm, "uninstall", hostRelease, "--namespace", hostNamespace, "--wait", "--timeout", "3m"); err != nil {
		return []string{err.Error()}
	}
	fmt.Printf("e2e-host: helm uninstall in %s\n", time.Since(start).Round(100*time.Millisecond))
	after, err := memberWorkloads(ctx, host.env)
	if err != nil {
		return []string{err.Error()}
	}
	for _, w := range before {
		if !slices.Contains(after, w) {
			problems = append(problems, "helm uninstall took from a member what Lifeboat had propagated: "+w)
		}
	}
	cs, err := hostClientset(host.env)
	if err != nil {
		return []string{err.Error()}
	}
	var left string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var parts []string
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + hostRelease}
		pods, _ := cs.CoreV1().Pods(hostNamespace).List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			parts = append(parts, "pod/"+p.Name)
		}
		for _, list := range []func() ([]string, error){
			func() ([]string, error) {
				// Every Secret (the credentials' carry no instance label)
				// but the key that encrypts Secrets in etcd, which Helm
				// keeps by design.
				l, err := cs.CoreV1().Secrets(hostNamespace).List(ctx, metav1.ListOptions{})
				n, err := names(l, err)
				return slices.DeleteFunc(n, func(name string) bool { return name == hostRelease+"-encryption" }), err
			},
			func() ([]string, error) {
				l, err := cs.CoreV1().Services(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.CoreV1().PersistentVolumeClaims(hostNamespace).List(ctx, metav1.ListOptions{})
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.AppsV1().Deployments(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.AppsV1().StatefulSets(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.BatchV1().Jobs(hostNamespace).List(ctx, metav1.ListOptions{})
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.CoreV1().ConfigMaps(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.CoreV1().ServiceAccounts(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.PolicyV1().PodDisruptionBudgets(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.NetworkingV1().NetworkPolicies(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) {
				l, err := cs.RbacV1().Roles(hostNamespace).List(ctx, sel)
				return names(l, err)
			},
			func() ([]string, error) { l, err := cs.RbacV1().ClusterRoles().List(ctx, sel); return names(l, err) },
			func() ([]string, error) {
				l, err := cs.RbacV1().ClusterRoleBindings().List(ctx, sel)
				return names(l, err)
			},
		} {
			n, err := list()
			if err != nil {
				left = err.Error()
				return false, nil
			}
			parts = append(parts, n...)
		}
		left = strings.Join(parts, ", ")
		return len(parts) == 0, nil
	})
	if err != nil {
		problems = append(problems, "helm uninstall left in the host cluster: "+left)
	}
	if _, err := cs.CoreV1().Secrets(hostNamespace).Get(ctx, hostRelease+"-encryption", metav1.GetOptions{}); err != nil {
		problems = append(problems, "the key that encrypts Secrets in etcd did not outlive helm uninstall: "+err.Error())
	}
	return problems
}

// propagateKeeper propagates a Deployment through the control plane in
// the host cluster, to be found in a member after the uninstall, and
// waits until it is there.
func propagateKeeper(ctx context.Context) error {
	const manifest = `apiVersion: v1
kind: Namespace
metadata:
  name: host-keeper
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: keeper
  namespace: host-keeper
spec:
  replicas: 1
  selector: {matchLabels: {app: keeper}}
  template:
    metadata: {labels: {app: keeper}}
    spec:
      containers: [{name: nginx, image: nginx:1.27}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: keeper
  namespace: host-keeper
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: keeper}
  placement:
    clusterAffinity: {clusterNames: [member1]}
`
	cmd := exec.CommandContext(ctx, suite.bins.Path("kubectl"), "--kubeconfig", suite.state.KubeconfigPath(), "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("applying the keeper workload: %w\n%s", err, out)
	}
	var seen []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		seen, err = memberWorkloads(ctx, host.env)
		return err == nil && slices.ContainsFunc(seen, func(w string) bool { return strings.HasPrefix(w, "member1/host-keeper/keeper ") }), nil
	})
	if err != nil {
		return fmt.Errorf("the keeper workload did not reach member1 (seen %v): %w", seen, err)
	}
	return nil
}

// memberWorkloads lists the Deployments Lifeboat manages in the members
// ("member/namespace/name uid").
func memberWorkloads(ctx context.Context, env *localenv.State) ([]string, error) {
	var out []string
	for _, m := range env.Members() {
		cfg, err := env.RESTConfig(m)
		if err != nil {
			return nil, err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		ds, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: membercluster.ManagedLabel + "=" + membercluster.ManagedLabelValue})
		if err != nil {
			return nil, fmt.Errorf("listing Deployments in %s: %w", m, err)
		}
		for _, d := range ds.Items {
			out = append(out, fmt.Sprintf("%s/%s/%s %s", m, d.Namespace, d.Name, d.UID))
		}
	}
	return out, nil
}

// names lists the names of the items of a typed list.
func names(list runtime.Object, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range items {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		out = append(out, m.GetName())
	}
	return out, nil
}
