//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// Helpers of TestClusterFailover (clusterfailover_test.go). Everything here
// works on the test's private environment, never on the shared one.

// cfTimeout bounds the waits of the cluster-failover scenarios: failure
// detection (3 s), a toleration (10 s) and a rescheduling fit well inside.
const cfTimeout = 90 * time.Second

// cfPeriods are the cluster health flags of a private environment, from
// which the documented failover times follow.
type cfPeriods struct {
	// args are the controller manager's flags that set them (none: the
	// defaults).
	args []string
	// P, F, S, T: --cluster-status-update-frequency,
	// --cluster-failure-threshold, --cluster-success-threshold,
	// --cluster-probe-timeout.
	P, F, S, T time.Duration
}

// shortPeriods are TestClusterFailover's and TestMembersUnjoined's:
// probes every second, 3 s to Ready=False, 2 s back to Ready=True, the
// default probe timeout.
var shortPeriods = cfPeriods{
	args: []string{"--cluster-status-update-frequency=1s", "--cluster-failure-threshold=3s", "--cluster-success-threshold=2s"},
	P:    time.Second, F: 3 * time.Second, S: 2 * time.Second, T: cluster.NewOptions().ProbeTimeout,
}

// defaultPeriods are the controller manager's defaults.
var defaultPeriods = func() cfPeriods {
	o := cluster.NewOptions()
	return cfPeriods{P: o.StatusUpdateFrequency, F: o.FailureThreshold, S: o.SuccessThreshold, T: o.ProbeTimeout}
}()

// window is the storm guard's settling window for these periods.
func (p cfPeriods) window() time.Duration { return failover.SettlingWindow(p.P, p.F, p.T) }

// evictionBound is docs/cluster-failover.md's "How long a failover takes,
// at worst" for the first workload (k = 1, within the burst) without a
// toleration (S = 0), with the noticing time D at its worst, P:
// t0 + D + F + T + max(S, P).
func (p cfPeriods) evictionBound() time.Duration { return p.P + p.F + p.T + p.P }

// cfEnv is TestClusterFailover's own environment: it stops members, so it
// must not be the suite's shared one.
type cfEnv struct {
	*privateEnv
	periods cfPeriods

	mu sync.Mutex
	// stopping holds the result of each `lifeboat env stop` still running
	// (it waits for the API server process to exit, seconds after the
	// member stopped answering).
	stopping map[string]chan error
}

// cfMembers are the private environment's members.
var cfMembers = []string{"member1", "member2", "member3"}

// startCFEnv brings up a private three-member environment with the given
// health periods, torn down when the test ends.
func startCFEnv(t *testing.T, periods cfPeriods, upFlags ...string) *cfEnv {
	t.Helper()
	e := &cfEnv{
		privateEnv: startPrivateEnv(t, envOptions{members: len(cfMembers), controllerManagerArgs: periods.args, upFlags: upFlags}),
		periods:    periods,
		stopping:   map[string]chan error{},
	}
	for _, m := range cfMembers {
		e.waitReady(t, m, metav1.ConditionTrue)
	}
	return e
}

// scenario runs f as the subtest name of t, then restores the members
// (restoreAll) and logs how long the scenario took.
func (e *cfEnv) scenario(t *testing.T, name string, f func(t *testing.T, e *cfEnv)) {
	t.Run(name, func(t *testing.T) {
		start := time.Now()
		t.Cleanup(func() {
			e.restoreAll(t)
			t.Logf("%s took %s (with the members restored)", name, time.Since(start).Round(time.Second))
		})
		f(t, e)
	})
}

// stop stops member's API server. It returns once the command is started;
// the member stops answering at once, and start waits for the command.
func (e *cfEnv) stop(t *testing.T, member string) {
	t.Helper()
	e.stopWith(t, member)
}

// kill is stop with `env stop --kill`: the API server crashes, and every
// connection to it is reset at once.
func (e *cfEnv) kill(t *testing.T, member string) {
	t.Helper()
	e.stopWith(t, member, "--kill")
}

// crash kills member's API server and waits until the controller manager
// says it lost the connection: its watches on the member break, and it
// probes the member at once instead of at its next period.
func (e *cfEnv) crash(t *testing.T, member string) {
	t.Helper()
	logOffset := controllerLogSize(e.state)
	e.kill(t, member)
	cfEventually(t, time.Minute, "the controller manager to report the lost connection to "+member, func(context.Context) (bool, string, error) {
		data, err := os.ReadFile(controllerLog(e.state))
		if err != nil {
			return false, "", err
		}
		for _, line := range strings.Split(string(data[min(logOffset, int64(len(data))):]), "\n") {
			if strings.Contains(line, "lost the connection to the member's API server") && strings.Contains(line, `"cluster":"`+member+`"`) {
				return true, "", nil
			}
		}
		return false, "no such line in the log yet", nil
	})
}

func (e *cfEnv) stopWith(t *testing.T, member string, flags ...string) {
	t.Helper()
	ch := make(chan error, 1)
	cmd := exec.Command(suite.lifeboat, append([]string{"env", "stop", member, "--state-dir", e.dir}, flags...)...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Start(); err != nil {
		t.Fatalf("lifeboat env stop %s: %v", member, err)
	}
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, b.String())
		}
		ch <- err
	}()
	e.mu.Lock()
	e.stopping[member] = ch
	e.mu.Unlock()
}

// start waits for a pending stop of member, starts its API server again,
// restarts the member's own components and waits until the Cluster is Ready
// and the not-ready taints are gone.
func (e *cfEnv) start(t *testing.T, member string) {
	t.Helper()
	e.finishStop(t, member)
	e.run(t, "env", "start", member, "--state-dir", e.dir)
	e.restartMemberComponents(t, member)
	e.waitReady(t, member, metav1.ConditionTrue)
	e.waitTaint(t, member, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, false)
	e.waitTaint(t, member, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoSchedule, false)
}

// partition cuts the path from the control plane to member (lifeboat env
// partition); the member keeps running.
func (e *cfEnv) partition(t *testing.T, member string) {
	t.Helper()
	e.run(t, "env", "partition", member, "--state-dir", e.dir)
}

// heal restores the path and waits until member is Ready without the
// not-ready taints.
func (e *cfEnv) heal(t *testing.T, member string) {
	t.Helper()
	e.run(t, "env", "heal", member, "--state-dir", e.dir)
	e.waitReady(t, member, metav1.ConditionTrue)
	e.waitTaint(t, member, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, false)
	e.waitTaint(t, member, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoSchedule, false)
}

// finishStop waits for a pending `lifeboat env stop` of member. A stop that
// reported an error still counts when the API server is down (concurrent
// stops race on the state file's temporary copy).
func (e *cfEnv) finishStop(t *testing.T, member string) {
	t.Helper()
	e.mu.Lock()
	ch := e.stopping[member]
	delete(e.stopping, member)
	e.mu.Unlock()
	if ch == nil {
		return
	}
	if err := <-ch; err != nil {
		s, lerr := localenv.Load(e.dir)
		if lerr != nil {
			t.Fatalf("lifeboat env stop %s: %v (and reading the state: %v)", member, err, lerr)
		}
		for _, c := range s.Components {
			if c.Name == member+"-apiserver" && c.Process.Alive() {
				t.Fatalf("lifeboat env stop %s: %v", member, err)
			}
		}
		t.Logf("lifeboat env stop %s reported %v, but its API server is down", member, err)
	}
}

// restoreAll starts every member that is stopped, together, and forgives
// their failures (flap damping would otherwise keep a member that failed
// in two scenarios out of the next one's placements); scenario calls it
// when each subtest ends so that the next starts with three Ready,
// undamped members.
func (e *cfEnv) restoreAll(t *testing.T) {
	t.Helper()
	s, err := localenv.Load(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	var stopped []string
	for _, m := range cfMembers {
		e.mu.Lock()
		pending := e.stopping[m] != nil
		e.mu.Unlock()
		for _, c := range s.Components {
			if c.Name == m+"-apiserver" && (pending || !c.Process.Alive()) {
				stopped = append(stopped, m)
			}
		}
	}
	if len(stopped) > 0 {
		e.startTogether(t, stopped...)
	}
	for _, m := range cfMembers {
		if s.Partitioned(m) {
			e.heal(t, m)
		}
	}
	for _, m := range cfMembers {
		kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "annotate", "cluster", m, clusterv1alpha1.AnnotationReadyFailures+"-")
		e.waitTaint(t, m, clusterv1alpha1.TaintClusterFlapping, corev1.TaintEffectNoSchedule, false)
	}
}

// startTogether starts the API servers of members at the same time, as a
// partition that heals brings every member back at once (each start
// records only its own component, under the environment's state lock),
// then their other components, and waits until each is Ready without the
// not-ready taints.
func (e *cfEnv) startTogether(t *testing.T, members ...string) {
	t.Helper()
	for _, m := range members {
		e.finishStop(t, m)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := lifeboat(t, "env", "restart", m+"-apiserver", "--state-dir", e.dir); err != nil {
				errs[i] = fmt.Errorf("lifeboat env restart %s-apiserver: %w\n%s", m, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range members {
		e.restartMemberComponents(t, m)
	}
	for _, m := range members {
		e.waitReady(t, m, metav1.ConditionTrue)
		e.waitTaint(t, m, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, false)
		e.waitTaint(t, m, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoSchedule, false)
	}
}

// probeFailing waits until member's ProbeSucceeded condition is False and
// returns since when (its lastTransitionTime).
func (e *cfEnv) probeFailing(t *testing.T, member string) time.Time {
	t.Helper()
	var cond metav1.Condition
	cfEventually(t, cfTimeout, describe("Cluster %s ProbeSucceeded=False", member),
		e.clusterConditionIs(member, clusterv1alpha1.ClusterConditionProbeSucceeded, metav1.ConditionFalse, &cond))
	return cond.LastTransitionTime.Time
}

// readySince returns member's Ready condition's lastTransitionTime.
func (e *cfEnv) readySince(t *testing.T, member string) time.Time {
	t.Helper()
	c, err := e.cluster(context.Background(), member)
	if err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if cond == nil {
		t.Fatalf("%s has no Ready condition", member)
	}
	return cond.LastTransitionTime.Time
}

// pinEach places one single-replica Deployment on each member (no
// tolerations: the default ClusterTaintPolicy's taint evicts it at once)
// and returns their names by member.
func (e *cfEnv) pinEach(t *testing.T, ns, prefix string) map[string]string {
	t.Helper()
	names := map[string]string{}
	var b strings.Builder
	for _, m := range cfMembers {
		names[m] = prefix + "-" + m
		b.WriteString("---" + cfDeployment(names[m], 1) + "---" + cfPinnedPolicy(names[m], byName(names[m]), m, "", ""))
	}
	e.apply(t, ns, b.String())
	for _, m := range cfMembers {
		if got := e.waitPlaced(t, ns, names[m], 1, ""); got != m {
			t.Fatalf("%s placed on %s, want %s", names[m], got, m)
		}
	}
	return names
}

// allStay is a stays condition: each Deployment of names is scheduled to
// its member only, without an eviction task or a failover history.
func (e *cfEnv) allStay(ns string, names map[string]string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		for m, name := range names {
			ok, seen, err := e.staysOn(ns, name, m)(ctx)
			if err != nil || !ok {
				return ok, name + ": " + seen, err
			}
			rb, err := e.binding(ctx, ns, name)
			if err != nil {
				return false, "", err
			}
			if len(rb.Status.FailoverHistory) > 0 {
				return false, fmt.Sprintf("%s: failover history %+v", name, rb.Status.FailoverHistory), nil
			}
		}
		return true, "", nil
	}
}

// waitReady waits until member's Ready condition has the given status.
func (e *cfEnv) waitReady(t *testing.T, member string, want metav1.ConditionStatus) {
	t.Helper()
	cfEventually(t, cfTimeout, describe("Cluster %s Ready=%s", member, want),
		e.clusterConditionIs(member, clusterv1alpha1.ClusterConditionReady, want, nil))
}

func findTaint(c *clusterv1alpha1.Cluster, key string, effect corev1.TaintEffect) *corev1.Taint {
	for i := range c.Spec.Taints {
		if c.Spec.Taints[i].Key == key && c.Spec.Taints[i].Effect == effect {
			return &c.Spec.Taints[i]
		}
	}
	return nil
}

// waitTaint waits until member has (present) or lacks the taint key:effect
// and returns it when present.
func (e *cfEnv) waitTaint(t *testing.T, member, key string, effect corev1.TaintEffect, present bool) corev1.Taint {
	t.Helper()
	var got corev1.Taint
	cfEventually(t, cfTimeout, describe("taint %s:%s on %s present=%t", key, effect, member, present), func(ctx context.Context) (bool, string, error) {
		c, err := e.cluster(ctx, member)
		if err != nil {
			return false, "", err
		}
		taint := findTaint(c, key, effect)
		if taint != nil {
			got = *taint
		}
		return (taint != nil) == present, fmt.Sprintf("taints %v", c.Spec.Taints), nil
	})
	return got
}

// setCondition sets a condition in a Cluster's status, as a health checker
// of the user's would, retrying on conflicts with the status controller.
func (e *cfEnv) setCondition(t *testing.T, member, typ string, status metav1.ConditionStatus) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := e.cluster(context.Background(), member)
		if err != nil {
			return err
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: "SetByTest", Message: "set by TestClusterFailover",
		})
		return e.cp.Status().Update(context.Background(), c)
	})
	if err != nil {
		t.Fatalf("setting condition %s=%s on %s: %v", typ, status, member, err)
	}
}

func (e *cfEnv) binding(ctx context.Context, ns, name string) (*workv1alpha2.ResourceBinding, error) {
	return getBinding(ctx, e.cp, ns, name+"-deployment")
}

// memberDeployment returns Deployment ns/name of member, nil when absent.
func (e *cfEnv) memberDeployment(ctx context.Context, member, ns, name string) (*appsv1.Deployment, error) {
	d, err := e.members[member].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

func deploymentReady(d *appsv1.Deployment, replicas int32) bool {
	return d != nil && d.Spec.Replicas != nil && *d.Spec.Replicas == replicas &&
		d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == replicas && d.Status.AvailableReplicas == replicas
}

// waitPlaced waits until Deployment name is scheduled to exactly one
// cluster, other than not, that reports it Healthy, and runs there with
// replicas ready; it returns that cluster.
func (e *cfEnv) waitPlaced(t *testing.T, ns, name string, replicas int32, not string) string {
	t.Helper()
	var placed string
	cfEventually(t, cfTimeout, describe("%s healthy on one member other than %q", name, not), func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		cs := scheduledClusters(rb)
		if len(cs) != 1 || cs[0] == not {
			return false, fmt.Sprintf("scheduled to %v; tasks %s", cs, cfTasks(rb)), nil
		}
		placed = cs[0]
		item := aggregatedItem(rb, placed)
		if item == nil || item.Health != workv1alpha2.ResourceHealthy {
			return false, fmt.Sprintf("on %s, aggregated %+v", placed, item), nil
		}
		d, err := e.memberDeployment(ctx, placed, ns, name)
		if err != nil {
			return false, "", err
		}
		if !deploymentReady(d, replicas) {
			return false, fmt.Sprintf("on %s, Deployment there %s", placed, summarizeDeployments(map[string]*appsv1.Deployment{placed: d})), nil
		}
		return true, "", nil
	})
	return placed
}

// waitHistory waits for a failoverHistory entry of Deployment name from
// cluster with the given reason and returns it.
func (e *cfEnv) waitHistory(t *testing.T, ns, name, from, reason string) workv1alpha2.FailoverHistoryItem {
	t.Helper()
	var entry workv1alpha2.FailoverHistoryItem
	cfEventually(t, cfTimeout, describe("failover history of %s: %s from %s", name, reason, from), func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster == from && h.Reason == reason {
				entry = h
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("history %+v; clusters %v; tasks %s", rb.Status.FailoverHistory, scheduledClusters(rb), cfTasks(rb)), nil
	})
	return entry
}

// waitGoneFrom waits until Deployment ns/name and the binding's Work are
// gone from member.
func (e *cfEnv) waitGoneFrom(t *testing.T, ns, name, member string) {
	t.Helper()
	cfEventually(t, cfTimeout, describe("stale copy of %s deleted from %s", name, member), func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, member, ns, name)
		if err != nil {
			return false, "", err
		}
		if d != nil {
			return false, fmt.Sprintf("Deployment still in %s (deleting: %t)", member, d.DeletionTimestamp != nil), nil
		}
		var works workv1alpha1.WorkList
		if err := e.cp.List(ctx, &works, client.InNamespace(clusterv1alpha1.ExecutionSpacePrefix+member)); err != nil {
			return false, "", err
		}
		for _, w := range works.Items {
			if w.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey] == name+"-deployment" &&
				w.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] == ns {
				return false, fmt.Sprintf("Work %s/%s still there", w.Namespace, w.Name), nil
			}
		}
		return true, "", nil
	})
}

// cfEventually is eventually, logging the waits that took a while (the
// scenarios' timings are in the test log).
func cfEventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	start := time.Now()
	eventually(t, timeout, what, cond)
	if d := time.Since(start); d >= 3*time.Second {
		t.Logf("%s: %s", what, d.Round(100*time.Millisecond))
	}
}

// staysOn is a cfStays condition: Deployment name is scheduled to exactly
// cluster, with no eviction task.
func (e *cfEnv) staysOn(ns, name, cluster string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		cs := scheduledClusters(rb)
		return len(cs) == 1 && cs[0] == cluster && len(rb.Spec.GracefulEvictionTasks) == 0,
			fmt.Sprintf("scheduled to %v; tasks %s", cs, cfTasks(rb)), nil
	}
}

func cfTasks(rb *workv1alpha2.ResourceBinding) string {
	if len(rb.Spec.GracefulEvictionTasks) == 0 {
		return "none"
	}
	var parts []string
	for _, task := range rb.Spec.GracefulEvictionTasks {
		parts = append(parts, fmt.Sprintf("from %s (%s, %s)", task.FromCluster, task.Reason, task.PurgeMode))
	}
	return strings.Join(parts, ", ")
}

// cfDeployment is a Deployment of the nginx image with replicas and the
// given labels besides app: name.
func cfDeployment(name string, replicas int, labels ...string) string {
	extra := ""
	for i := 0; i+1 < len(labels); i += 2 {
		extra += fmt.Sprintf("\n    %s: %q", labels[i], labels[i+1])
	}
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels:
    app: %[1]s%[3]s
spec:
  replicas: %[2]d
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
        - image: nginx
          name: nginx
`, name, replicas, extra)
}

// cfPinnedPolicy places the Deployments selected by selector (YAML of one
// resourceSelectors item, indented by 6 spaces after "- ") on primary, and
// on one of the other members when primary cannot take them: ordered
// clusterAffinities, one cluster at a time. placement and spec are more
// YAML for spec.placement (indented by 4) and spec (indented by 2).
func cfPinnedPolicy(name, selector, primary, placement, spec string) string {
	var backup []string
	for _, m := range cfMembers {
		if m != primary {
			backup = append(backup, m)
		}
	}
	return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %[1]s
spec:
  resourceSelectors:
    - %[2]s
  placement:
    clusterAffinities:
      - affinityName: primary
        clusterNames: [%[3]s]
      - affinityName: backup
        clusterNames: [%[4]s]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 1
        minGroups: 1
%[5]s
%[6]s`, name, selector, primary, strings.Join(backup, ", "), placement, spec)
}

// byName is a resourceSelectors item for the Deployment name.
func byName(name string) string {
	return fmt.Sprintf("{apiVersion: apps/v1, kind: Deployment, name: %s}", name)
}

// clusterEvents lists the Events about Clusters with the given reason.
func (e *cfEnv) clusterEvents(ctx context.Context, reason string) ([]corev1.Event, error) {
	list, err := e.cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Cluster,reason=" + reason,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// summarised adds up the summaries of reason on Cluster cluster since
// since (an Event budget's, "N more ... Events"): the Events they counted
// instead of recording them on each object, and how many summaries there
// were.
func (e *cfEnv) summarised(ctx context.Context, reason, cluster string, since time.Time) (counted, summaries int, err error) {
	sums, err := e.clusterEvents(ctx, reason)
	if err != nil {
		return 0, 0, err
	}
	for _, ev := range sums {
		var more int
		if ev.InvolvedObject.Name != cluster || ev.Source.Component != eventbudget.SummaryComponent || ev.LastTimestamp.Time.Before(since) {
			continue
		}
		if _, err := fmt.Sscanf(ev.Message, "%d more", &more); err == nil {
			counted += more
			summaries++
		}
	}
	return counted, summaries, nil
}

// waitEvent waits for an Event in ns (every namespace if empty) that
// matches fieldSelector and whose message contains text, and returns it.
// Events are sent apart from the writes they describe and may come later.
func (e *cfEnv) waitEvent(t *testing.T, ns, fieldSelector, text string) corev1.Event {
	t.Helper()
	var found corev1.Event
	cfEventually(t, cfTimeout, describe("an Event (%s) saying %q", fieldSelector, text), func(ctx context.Context) (bool, string, error) {
		list, err := e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fieldSelector})
		if err != nil {
			return false, "", err
		}
		for _, ev := range list.Items {
			if strings.Contains(ev.Message, text) {
				found = ev
				return true, "", nil
			}
		}
		return false, summarizeEvents(list.Items), nil
	})
	return found
}

// controllerErrors returns the error lines of the private controller
// manager's log, for the test log.
func (e *cfEnv) controllerErrors() []string {
	return logErrors(controllerLog(e.state))
}

// logErrors returns the error lines of the log at path, sorted.
func logErrors(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"level":"error"`) {
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}
