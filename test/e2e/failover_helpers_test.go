//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// failoverTimeout bounds every wait of the failover scenarios: propagation,
// a toleration window and a rescheduling fit well inside it.
const failoverTimeout = 90 * time.Second

// Helpers of the application-failover scenarios (failover_test.go).

// nginxDeployment is the seeds' nginx Deployment (2 replicas, app label)
// under another name; strategy, when set, is a Deployment strategy type.
func nginxDeployment(name, strategy string) string {
	s := ""
	if strategy != "" {
		s = "\n  strategy:\n    type: " + strategy
	}
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels:
    app: %[1]s
spec:
  replicas: 2%[2]s
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
`, name, s)
}

// onePolicy is a PropagationPolicy for the Deployment name that places it
// on one of clusters (spread maxGroups 1) with the given
// spec.failover.application body (indented by 6 spaces).
func onePolicy(name string, clusters []string, application string) string {
	return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %[1]s
spec:
  propagateDeps: true
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: %[1]s
  placement:
    clusterAffinity:
      clusterNames: [%[2]s]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 1
        minGroups: 1
  failover:
    application:
%[3]s`, name, strings.Join(clusters, ", "), application)
}

// fakeRegistry is an OverridePolicy that moves the Deployment name's image
// to the registry "fake" in the given clusters, where kwok then reports
// ErrImagePull: the copy there never becomes available. extra are more
// overriders (YAML indented by 8 spaces), "" for none.
func fakeRegistry(name string, clusters []string, extra string) string {
	return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: %[1]s-broken
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: %[1]s
  overrideRules:
    - targetCluster:
        clusterNames: [%[2]s]
      overriders:
        imageOverrider:
          - component: Registry
            operator: replace
            value: fake
%[3]s`, name, strings.Join(clusters, ", "), extra)
}

// bindingOf reads the ResourceBinding of Deployment name.
func bindingOf(ctx context.Context, c client.Client, ns, name string) (*workv1alpha2.ResourceBinding, error) {
	return getBinding(ctx, c, ns, name+"-deployment")
}

// waitPlacedHealthy waits until the binding of Deployment name is scheduled
// to exactly one cluster where it is applied, Healthy and fully ready, and
// returns that cluster. not, when set, is a cluster it must not be.
func waitPlacedHealthy(t *testing.T, c client.Client, ns, name, not string) string {
	t.Helper()
	var placed string
	eventually(t, failoverTimeout, describe("%s placed on one member (not %q), applied and Healthy", name, not), func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, c, ns, name)
		if err != nil {
			return false, "", err
		}
		cs := scheduledClusters(rb)
		if len(cs) != 1 || cs[0] == not {
			return false, fmt.Sprintf("scheduled to %v; tasks %s", cs, tasksSummary(rb)), nil
		}
		placed = cs[0]
		item := aggregatedItem(rb, placed)
		if item == nil {
			return false, "no aggregated status for " + placed, nil
		}
		return item.Applied && item.Health == workv1alpha2.ResourceHealthy && reflectedInt(item, "readyReplicas") == 2,
			fmt.Sprintf("%s: applied=%v health=%s ready=%d", placed, item.Applied, item.Health, reflectedInt(item, "readyReplicas")), nil
	})
	return placed
}

// waitHealth waits until the binding reports health for cluster.
func waitHealth(t *testing.T, c client.Client, ns, name, cluster string, health workv1alpha2.ResourceHealth) *workv1alpha2.ResourceBinding {
	t.Helper()
	var got *workv1alpha2.ResourceBinding
	eventually(t, failoverTimeout, describe("%s reported %s in %s", name, health, cluster), func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, c, ns, name)
		if err != nil {
			return false, "", err
		}
		got = rb
		item := aggregatedItem(rb, cluster)
		if item == nil {
			return false, fmt.Sprintf("no item for %s; clusters %v", cluster, scheduledClusters(rb)), nil
		}
		return item.Health == health, fmt.Sprintf("%s: health=%s applied=%v %s", cluster, item.Health, item.Applied, item.AppliedMessage), nil
	})
	return got
}

// waitTask waits for the eviction task from cluster and returns the binding.
func waitTask(t *testing.T, c client.Client, ns, name, from string) (*workv1alpha2.ResourceBinding, *workv1alpha2.GracefulEvictionTask) {
	t.Helper()
	var rb *workv1alpha2.ResourceBinding
	eventually(t, failoverTimeout, describe("eviction task of %s from %s", name, from), func(ctx context.Context) (bool, string, error) {
		var err error
		if rb, err = bindingOf(ctx, c, ns, name); err != nil {
			return false, "", err
		}
		task := findTask(rb, from)
		return task != nil && task.CreationTimestamp != nil,
			fmt.Sprintf("clusters %v; tasks %s; unhealthy %v", scheduledClusters(rb), tasksSummary(rb), rb.Status.UnhealthyClusters), nil
	})
	return rb, findTask(rb, from)
}

// waitEvicted returns when the binding's resource was evicted from
// cluster from: the creation time of the eviction task, or, when the task
// was already removed (a Gracefully eviction whose new copy became Healthy
// between two polls), of the failover history entry it left, which carries
// the same time.
func waitEvicted(t *testing.T, c client.Client, ns, name, from string) metav1.Time {
	t.Helper()
	var at metav1.Time
	eventually(t, failoverTimeout, describe("eviction of %s from %s", name, from), func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, c, ns, name)
		if err != nil {
			return false, "", err
		}
		if task := findTask(rb, from); task != nil && task.CreationTimestamp != nil {
			at = *task.CreationTimestamp
			return true, "", nil
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster == from {
				at = h.Time
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("clusters %v; tasks %s; unhealthy %v; history %d entries", scheduledClusters(rb), tasksSummary(rb), rb.Status.UnhealthyClusters, len(rb.Status.FailoverHistory)), nil
	})
	return at
}

func findTask(rb *workv1alpha2.ResourceBinding, from string) *workv1alpha2.GracefulEvictionTask {
	for i := range rb.Spec.GracefulEvictionTasks {
		if rb.Spec.GracefulEvictionTasks[i].FromCluster == from {
			return &rb.Spec.GracefulEvictionTasks[i]
		}
	}
	return nil
}

func tasksSummary(rb *workv1alpha2.ResourceBinding) string {
	if len(rb.Spec.GracefulEvictionTasks) == 0 {
		return "none"
	}
	var parts []string
	for _, task := range rb.Spec.GracefulEvictionTasks {
		s := fmt.Sprintf("from %s (%s, %s", task.FromCluster, task.Reason, task.PurgeMode)
		if task.SuppressDeletion != nil {
			s += fmt.Sprintf(", suppressDeletion=%v", *task.SuppressDeletion)
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, ", ")
}

// waitUnhealthyTimer waits until the binding of Deployment name records
// cluster as unhealthy, and returns since when.
func waitUnhealthyTimer(t *testing.T, cp client.Client, ns, name, cluster string) metav1.Time {
	t.Helper()
	var since metav1.Time
	eventually(t, failoverTimeout, "the unhealthy timer of "+cluster+" started", func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		var ok bool
		since, ok = unhealthySince(rb, cluster)
		return ok, fmt.Sprintf("unhealthyClusters %v", rb.Status.UnhealthyClusters), nil
	})
	return since
}

// unhealthySince returns status.unhealthyClusters[cluster].unhealthySince.
func unhealthySince(rb *workv1alpha2.ResourceBinding, cluster string) (metav1.Time, bool) {
	for _, u := range rb.Status.UnhealthyClusters {
		if u.ClusterName == cluster {
			return u.UnhealthySince, true
		}
	}
	return metav1.Time{}, false
}

// other returns the member of pair that is not x.
func other(pair []string, x string) string {
	for _, p := range pair {
		if p != x {
			return p
		}
	}
	return ""
}

// deploymentEvent is one watch event of a member Deployment, with the time
// the test received it.
type deploymentEvent struct {
	member string
	typ    watch.EventType
	at     time.Time
	obj    *appsv1.Deployment
}

// deploymentWatch records the watch events of Deployment ns/name in every
// member, from the moment it is started until the test ends.
type deploymentWatch struct {
	mu     sync.Mutex
	events []deploymentEvent
}

// watchMemberDeployments starts watching Deployment ns/name in every member;
// the watches are established when it returns.
func watchMemberDeployments(t *testing.T, ns, name string) *deploymentWatch {
	t.Helper()
	return watchDeploymentsIn(t, members(t), ns, name)
}

// watchDeploymentsIn starts watching Deployment ns/name in each of
// clusters, by name; the watches are established when it returns.
func watchDeploymentsIn(t *testing.T, clusters map[string]kubernetes.Interface, ns, name string) *deploymentWatch {
	t.Helper()
	w := &deploymentWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for member, cs := range clusters {
		wi, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			t.Fatalf("watching Deployments in %s: %v", member, err)
		}
		go func(member string, wi watch.Interface) {
			defer wi.Stop()
			for ev := range wi.ResultChan() {
				d, ok := ev.Object.(*appsv1.Deployment)
				if !ok {
					continue
				}
				w.mu.Lock()
				w.events = append(w.events, deploymentEvent{member: member, typ: ev.Type, at: time.Now(), obj: d})
				w.mu.Unlock()
			}
		}(member, wi)
	}
	return w
}

// first returns the first event in member matching match.
func (w *deploymentWatch) first(member string, match func(deploymentEvent) bool) (deploymentEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if e.member == member && match(e) {
			return e, true
		}
	}
	return deploymentEvent{}, false
}

func (w *deploymentWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for _, e := range w.events {
		parts = append(parts, fmt.Sprintf("%s %s %s ready=%d version=%s", e.at.Format("15:04:05.000"), e.member, e.typ, e.obj.Status.ReadyReplicas, e.obj.ResourceVersion))
	}
	return strings.Join(parts, "; ")
}

func isType(typ watch.EventType) func(deploymentEvent) bool {
	return func(e deploymentEvent) bool { return e.typ == typ }
}

// fullyAvailable: the Deployment is fully rolled out and available.
func fullyAvailable(e deploymentEvent) bool {
	d := e.obj
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return e.typ != watch.Deleted && d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want && d.Status.ReadyReplicas == want
}

// goneAt is when the Deployment in member was seen going away: the
// deletionTimestamp of the first event that carries one, or the time the
// DELETED event was received, whichever is earlier.
func (w *deploymentWatch) goneAt(member string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if e.member != member {
			continue
		}
		if e.obj.DeletionTimestamp != nil {
			ts := e.obj.DeletionTimestamp.Time
			if e.at.Before(ts) {
				ts = e.at
			}
			return ts, true
		}
		if e.typ == watch.Deleted {
			return e.at, true
		}
	}
	return time.Time{}, false
}

// receivedOutOfOrder marks an availableThenGone detail whose two events the
// test's watches delivered in the other order than they were written.
const receivedOutOfOrder = "the watches delivered them in the other order"

// goneEvent is the first event in member that shows the Deployment going:
// the first that carries a deletionTimestamp, or its DELETED event.
func (w *deploymentWatch) goneEvent(member string) (deploymentEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if e.member == member && (e.obj.DeletionTimestamp != nil || e.typ == watch.Deleted) {
			return e, true
		}
	}
	return deploymentEvent{}, false
}

// availableThenGone checks that the copy in to was fully available before
// the copy in from went. The local environment's members keep their
// objects in one etcd, so the resourceVersions of their events are
// revisions of one store, ordered as they were written: a deletion made
// after the controllers saw the copy in to available has the higher one,
// whichever of the test's two watches delivered its event first (under
// load one can lag the other by more than the controllers take to act).
// Where a version is not a number, the order the events were received in
// decides. ok is false when an event is missing; detail says what was seen.
func (w *deploymentWatch) availableThenGone(to, from string) (inOrder, ok bool, detail string) {
	available, okA := w.first(to, fullyAvailable)
	gone, okG := w.goneEvent(from)
	if !okA || !okG {
		return false, false, fmt.Sprintf("available in %s: %t, gone from %s: %t", to, okA, from, okG)
	}
	detail = fmt.Sprintf("%s available (received %s, version %s), %s gone (received %s, version %s)",
		to, available.at.Format("15:04:05.000"), available.obj.ResourceVersion,
		from, gone.at.Format("15:04:05.000"), gone.obj.ResourceVersion)
	a, errA := strconv.ParseUint(available.obj.ResourceVersion, 10, 64)
	g, errG := strconv.ParseUint(gone.obj.ResourceVersion, 10, 64)
	if errA == nil && errG == nil {
		if (a < g) != available.at.Before(gone.at) {
			detail += "; " + receivedOutOfOrder
		}
		return a < g, true, detail
	}
	return available.at.Before(gone.at), true, detail
}

// assertFailoverRecorded checks what a user finds after an application
// failover of Deployment name from cluster from to cluster to ("" when
// nothing could take it): an entry in status.failoverHistory, the EvictWorkloadFromCluster Event on the binding
// and on the Deployment, and `lifeboat history` printing the entry. It
// returns the history entry and the history output. want are more strings
// the output must contain.
func assertFailoverRecorded(t *testing.T, ns, name, from, to string, want ...string) (workv1alpha2.FailoverHistoryItem, string) {
	t.Helper()
	cp := clientFor(t, controlPlaneConfig(t))
	cs := clientsetFor(t, controlPlaneConfig(t))
	var entry workv1alpha2.FailoverHistoryItem
	eventually(t, failoverTimeout, describe("failover history of %s has an entry from %s to %q", name, from, to), func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster == from && h.Reason == workv1alpha2.EvictionReasonApplicationFailure && strings.Join(h.ClustersAfter, ",") == to {
				entry = h
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("history %+v", rb.Status.FailoverHistory), nil
	})
	if entry.Producer != workv1alpha2.EvictionProducerRBApplicationFailover {
		t.Errorf("history entry producer = %q, want %q", entry.Producer, workv1alpha2.EvictionProducerRBApplicationFailover)
	}
	for _, kind := range []string{"ResourceBinding", "Deployment"} {
		obj := name
		if kind == "ResourceBinding" {
			obj = name + "-deployment"
		}
		eventually(t, 30*time.Second, describe("EvictWorkloadFromCluster Event on %s %s naming %s", kind, obj, from), func(ctx context.Context) (bool, string, error) {
			evs, err := eventsFor(ctx, cs, ns, kind, obj)
			if err != nil {
				return false, "", err
			}
			for _, e := range evs {
				if e.Type == "Warning" && e.Reason == "EvictWorkloadFromCluster" && strings.Contains(e.Message, "from cluster "+from) {
					return true, "", nil
				}
			}
			return false, summarizeEvents(evs), nil
		})
	}
	out, err := lifeboat(t, "history", "deployment/"+name, "-n", ns, "--kubeconfig", suite.state.KubeconfigPath())
	if err != nil {
		t.Fatalf("lifeboat history: %v\n%s", err, out)
	}
	row := ""
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == entry.Time.UTC().Format(time.RFC3339) && f[1] == "ApplicationFailure" && f[2] == from {
			row = line
		}
	}
	wantTo := to
	if wantTo == "" {
		wantTo = "<pending>"
	}
	if row == "" || strings.Fields(row)[3] != wantTo {
		t.Errorf("lifeboat history has no row for the eviction from %s at %s to %s:\n%s", from, entry.Time.UTC().Format(time.RFC3339), wantTo, out)
	}
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("lifeboat history lacks %q:\n%s", s, out)
		}
	}
	return entry, out
}

// eventWith waits for an Event of the given type and reason on the binding
// of name whose message contains every part.
func eventWith(t *testing.T, ns, name, typ, reason string, parts ...string) {
	t.Helper()
	waitEvent(t, ns, "ResourceBinding", name+"-deployment", typ, reason, parts...)
}

// stays polls cond every 250ms until the time until and fails the test as
// soon as cond does not hold (false or an error): a "must stay true for a
// while" check.
func stays(t *testing.T, until time.Time, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ok, seen, err := cond(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !ok {
			t.Fatalf("%s: no longer true: %s", what, seen)
		}
		if !time.Now().Before(until) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitNoFailoverTarget waits for Deployment name's binding to say that
// nothing took what was evicted from from (FailoverTargetAvailable=False,
// NoFailoverTarget) while spec.clusters holds clusters (none: nil), and
// for the Warning Event that says so.
func waitNoFailoverTarget(t *testing.T, cp client.Client, ns, name, from string, clusters []string) {
	t.Helper()
	eventually(t, failoverTimeout, "FailoverTargetAvailable False / NoFailoverTarget, clusters "+strings.Join(clusters, ","), func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		c := condition(rb.Status.Conditions, failover.ConditionFailoverTargetAvailable)
		if c == nil {
			return false, fmt.Sprintf("no condition; clusters %v", scheduledClusters(rb)), nil
		}
		return c.Status == metav1.ConditionFalse && c.Reason == failover.ReasonNoFailoverTarget &&
				slices.Equal(scheduledClusters(rb), clusters) && strings.Contains(c.Message, from),
			fmt.Sprintf("%s %s: %s; clusters %v", c.Status, c.Reason, c.Message, scheduledClusters(rb)), nil
	})
	eventWith(t, ns, name, "Warning", failover.EventReasonNoFailoverTarget, from)
}

// keptPastGrace checks until seconds after task's creation, past its grace
// period of grace seconds, that Deployment name's copy in cluster (member is its client)
// stays, not being deleted (and is the object uid, unless ""), and that
// the task stays open. Once the grace period is over it touches the
// binding, so that every controller looks at it again: one that would
// delete the copy on time-out gets its chance.
func keptPastGrace(t *testing.T, cp client.Client, member kubernetes.Interface, ns, name, cluster string, task *workv1alpha2.GracefulEvictionTask, grace, seconds int, uid types.UID) {
	t.Helper()
	expired := task.CreationTimestamp.Add(time.Duration(grace) * time.Second)
	poked := false
	stays(t, task.CreationTimestamp.Add(time.Duration(seconds)*time.Second), describe("the copy in %s still there %ds after the eviction", cluster, seconds), func(ctx context.Context) (bool, string, error) {
		if !poked && time.Now().After(expired) {
			kubectl(t, suite.state.KubeconfigPath(), "-n", ns, "annotate", "rb", name+"-deployment", "--overwrite", "e2e.lifeboat.dev/poke="+time.Now().Format("150405"))
			poked = true
		}
		d, err := member.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "the copy: " + err.Error(), nil
		}
		if d.DeletionTimestamp != nil || (uid != "" && d.UID != uid) {
			return false, fmt.Sprintf("the copy was replaced or is being deleted (uid %s, deleting %v)", d.UID, d.DeletionTimestamp != nil), nil
		}
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		return findTask(rb, cluster) != nil, "the task was closed with nothing placed instead: tasks " + tasksSummary(rb), nil
	})
}
