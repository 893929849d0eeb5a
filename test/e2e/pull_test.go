//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// pullMember is the member TestPullMode joins in Pull mode.
const pullMember = "member3"

// pullPeriods are the short health periods of TestPullMode: the push
// members' (shortPeriods), and for the pull member a Lease renewed every
// 1.5 s that the control plane waits 6 s for.
var pullPeriods = cfPeriods{
	args: append(append([]string{}, shortPeriods.args...),
		"--cluster-monitor-period=1s", "--cluster-monitor-grace-period="+pullGrace.String(), "--fencing-stop-margin="+pullStopMargin.String()),
	P: shortPeriods.P, F: shortPeriods.F, S: shortPeriods.S, T: shortPeriods.T,
}

// pullGrace is pullPeriods' --cluster-monitor-grace-period.
const pullGrace = 6 * time.Second

// pullStopMargin is pullPeriods' --fencing-stop-margin.
const pullStopMargin = 5 * time.Second

// pullLease is the pull member's agent's --cluster-lease-duration.
const pullLease = 6 * time.Second

// pullAgentArgs are the pull member's agent's flags.
var pullAgentArgs = []string{
	"--cluster-lease-duration=" + pullLease.String(), "--cluster-lease-renew-interval-fraction=0.25",
	"--cluster-status-update-frequency=1s", "--cluster-failure-threshold=3s", "--cluster-success-threshold=2s",
	"--failover-event-burst=" + strconv.Itoa(pullEventBurst),
}

// pullEventBurst is the pull member's agent's --failover-event-burst: a
// rollout of more Works than this has its Events counted on the Cluster.
const pullEventBurst = 2

// TestPullMode runs member3 in Pull mode, on an environment of its own
// where every path can be cut: member3 is registered with a bootstrap
// token and served by `lifeboat agent`; the control plane never connects
// to it.
func TestPullMode(t *testing.T) {
	t.Parallel()
	flags := []string{"--partitionable", "--pull-member=" + pullMember}
	for _, a := range append(pullAgentArgs, pullCertificateArgs...) {
		flags = append(flags, "--agent-arg="+a)
	}
	e := startCFEnv(t, pullPeriods, flags...)
	c, err := e.cluster(context.Background(), pullMember)
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.SyncMode != clusterv1alpha1.Pull || c.Spec.SecretRef != nil {
		t.Fatalf("Cluster %s: syncMode %s, secretRef %v; want Pull without credentials", pullMember, c.Spec.SyncMode, c.Spec.SecretRef)
	}
	var registered *x509.Certificate
	e.scenario(t, "the agent registered again with a ten-minute certificate", func(t *testing.T, e *cfEnv) {
		registered = pullShortCertificate(t, e)
	})
	e.scenario(t, "a workload is applied and repaired and updated and kept when its Work is deleted by hand and deleted in the pull member by its agent", pullPropagation)
	e.scenario(t, "the seed 000 walkthrough on the pull member", pullSeedWalkthrough)
	e.scenario(t, "registration refuses expired and revoked and misused tokens and Push clusters", pullBadInput)
	e.scenario(t, "the agent restarted 5 times during a rollout of 50 workloads deletes and recreates nothing and counts the Works' Events past its burst on the Cluster", pullAgentRestarts)
	e.scenario(t, "the agent killed: the Lease expires and the cluster turns Unknown and the workload fails over", pullAgentKilled)
	e.scenario(t, "the pull member partitioned: the workload fails over and the old copy goes after heal", pullPartitioned)
	e.scenario(t, "a Directly workload behind a partition is fenced before its replacement starts", pullFenced)
	e.scenario(t, "a fenced copy that nothing replaced runs again after heal", pullFencedOnlyCopy)
	e.scenario(t, "an agent started behind a partition stays alive and fences when due by its recorded renewal not at once", pullStartedBehindPartition)
	e.scenario(t, "the agent outlives the certificate it was registered with: it renewed it and still renews its Lease and applies", func(t *testing.T, e *cfEnv) {
		pullCertificateRenewed(t, e, registered)
	})
}

// pullRecordLease is the Lease in the member where the agent records its
// last renewal (agent.RecordName; --member-lease-namespace's default).
const pullRecordLease = "lifeboat-agent-" + pullMember

// pullTolerance is the toleration of pullStartedBehindPartition's workload
// of the not-ready and unreachable taints: its copy is fenced that long
// after the Lease duration.
const pullTolerance = 20 * time.Second

// pullStartedBehindPartition: the agent stopped, its path to the control
// plane cut, and the agent started again. Its first renewal fails; it
// counts from the last renewal it recorded in the member, so a Directly
// copy that tolerates the not-ready taint for 20 s is fenced 6 s (the
// Lease) + 20 s after that renewal, not as soon as the agent starts.
// Waiting for the control plane it answers /healthz, so that a liveness
// probe would not kill it. After heal the copy scales back.
func pullStartedBehindPartition(t *testing.T, e *cfEnv) {
	ns := e.namespace(t, "pull-start-cut")
	seconds := int(pullTolerance / time.Second)
	e.apply(t, ns, cfDeployment("tolerant", 1)+fmt.Sprintf(`
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: tolerant
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: tolerant}
  placement:
    clusterAffinity:
      clusterNames: [%s]
    clusterTolerations:
      - {key: %s, operator: Exists, effect: NoExecute, tolerationSeconds: %d}
      - {key: %s, operator: Exists, effect: NoExecute, tolerationSeconds: %d}
  failover:
    cluster:
      purgeMode: Directly
`, pullMember, clusterv1alpha1.TaintClusterNotReady, seconds, clusterv1alpha1.TaintClusterUnreachable, seconds))
	if got := e.waitPlaced(t, ns, "tolerant", 1, ""); got != pullMember {
		t.Fatalf("tolerant placed on %s, want %s", got, pullMember)
	}
	cfEventually(t, cfTimeout, describe("the copy in %s marked to be fenced after %d s", pullMember, seconds), func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, pullMember, ns, "tolerant")
		if err != nil || d == nil {
			return false, "not there", err
		}
		return d.Labels["fencing.lifeboat.dev/action"] == "ScaleToZero" && d.Annotations["fencing.lifeboat.dev/after-seconds"] == fmt.Sprint(seconds),
			fmt.Sprintf("labels %v, annotations %v", d.Labels, d.Annotations), nil
	})
	renewals := recordRenewals(t, e, pullMember)
	cfEventually(t, cfTimeout, describe("the renewals recorded in %s's Lease %s", pullMember, pullRecordLease), func(ctx context.Context) (bool, string, error) {
		l, err := e.members[pullMember].CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, pullRecordLease, metav1.GetOptions{})
		if err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		return l.Spec.RenewTime != nil && ptr.Deref(l.Spec.LeaseDurationSeconds, 0) == int32(pullLease/time.Second), fmt.Sprintf("%+v", l.Spec), nil
	})

	e.restartAgentOnCleanup(t)
	e.run(t, "env", "stop", pullMember+"-agent", "--state-dir", e.dir)
	e.partition(t, pullMember)
	// The agent does not become ready behind the partition: it is started
	// in the background, and its start returns once the partition heals.
	started := make(chan error, 1)
	go func() {
		out, err := lifeboat(t, "env", "restart", pullMember+"-agent", "--state-dir", e.dir)
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		started <- err
	}()
	startedAt := time.Now()
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(e.dir, pullMember, "partitioned")); err == nil {
			e.heal(t, pullMember)
		}
		<-started
	})

	// Waiting for the control plane, it is alive (a liveness probe must
	// not kill it) and not ready.
	ready := e.component(t, pullMember+"-agent").Health
	healthz := strings.TrimSuffix(ready, "/readyz") + "/healthz"
	cfEventually(t, cfTimeout, "the agent behind the partition answers /healthz and is not ready", func(ctx context.Context) (bool, string, error) {
		h, hb := httpGet(ctx, healthz)
		r, rb := httpGet(ctx, ready)
		return h == http.StatusOK && r == http.StatusServiceUnavailable && strings.Contains(rb, "waiting for the control plane"),
			fmt.Sprintf("/healthz %d %q, /readyz %d %q", h, hb, r, rb), nil
	})

	var fencedAt time.Time
	cfEventually(t, cfTimeout+pullTolerance, describe("the copy in %s fenced to zero replicas", pullMember), func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, pullMember, ns, "tolerant")
		if err != nil || d == nil {
			return false, "not there", err
		}
		for _, f := range d.ManagedFields {
			if f.Manager == "lifeboat-fencing" && f.Time != nil {
				fencedAt = f.Time.Time
			}
		}
		return ptr.Deref(d.Spec.Replicas, 1) == 0 && !fencedAt.IsZero(), fmt.Sprintf("spec.replicas %d", ptr.Deref(d.Spec.Replicas, 1)), nil
	})
	last, seen := renewals.last()
	if !seen {
		t.Fatal("no renewal seen before the partition")
	}
	due := last.Add(pullLease + pullTolerance)
	// The record may lag the Lease by a renewal or two (it is written
	// after each), and the fencing's time is in whole seconds: an agent
	// that fenced as soon as it started would have done so within seconds
	// of the stop, long before due less the Lease.
	t.Logf("last renewal %s; agent started %s after it; fenced %s after it (due by the Lease %s after it)",
		last.UTC().Format("15:04:05.000"), startedAt.Sub(last).Round(100*time.Millisecond), fencedAt.Sub(last).Round(time.Second), due.Sub(last))
	if earliest := due.Add(-pullLease); fencedAt.Add(time.Second).Before(earliest) {
		t.Errorf("the copy was fenced at %s, %s after the last renewal: the agent started behind the partition fenced before the renewal it recorded allowed (not before %s)",
			fencedAt.UTC().Format("15:04:05"), fencedAt.Sub(last).Round(time.Second), earliest.UTC().Format("15:04:05.000"))
	}
	// Nor later than the control plane counts it stopped (--fencing-stop-margin).
	if latest := due.Add(pullStopMargin); fencedAt.After(latest) {
		t.Errorf("the copy was fenced at %s, %s after the last renewal: later than the control plane counts it stopped (%s after it)",
			fencedAt.UTC().Format("15:04:05"), fencedAt.Sub(last).Round(time.Second), latest.Sub(last))
	}

	e.heal(t, pullMember)
	if err := <-started; err != nil {
		t.Errorf("starting the agent behind the partition: %v", err)
	}
	started <- nil
	e.waitScaledBack(t, ns, "tolerant", 1)
}

// waitScaledBack waits until the pull member's copy of Deployment name,
// fenced behind a partition, runs its replicas again after heal and its
// binding says it is Healthy there.
func (e *cfEnv) waitScaledBack(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	cfEventually(t, cfTimeout, describe("the copy of %s scaled back and Healthy after heal", name), func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, pullMember, ns, name)
		if err != nil || d == nil {
			return false, "not there", err
		}
		rb, err := e.binding(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		item := aggregatedItem(rb, pullMember)
		return deploymentReady(d, replicas) && item != nil && item.Health == workv1alpha2.ResourceHealthy,
			fmt.Sprintf("Deployment %s; aggregated %+v", summarizeDeployments(map[string]*appsv1.Deployment{pullMember: d}), item), nil
	})
}

// pullPropagation: a Deployment pinned to the pull member runs there,
// reported Healthy through the agent; a copy deleted in the member is
// recreated; an update reaches it; deleting the template deletes it.
func pullPropagation(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "pull-prop")
	e.apply(t, ns, cfDeployment("web", 2)+"\n---\n"+cfPinnedPolicy("web", byName("web"), pullMember, "", ""))
	if got := e.waitPlaced(t, ns, "web", 2, ""); got != pullMember {
		t.Fatalf("web placed on %s, want %s", got, pullMember)
	}
	work := e.pullWork(t, ns, "web")
	if !meta.IsStatusConditionTrue(work.Status.Conditions, workv1alpha1.WorkApplied) {
		t.Errorf("Work %s: Applied is not True: %+v", work.Name, work.Status.Conditions)
	}

	// Drift: the copy deleted in the member comes back.
	first, err := e.memberDeployment(ctx, pullMember, ns, "web")
	if err != nil || first == nil {
		t.Fatalf("web in %s: %v", pullMember, err)
	}
	if err := e.members[pullMember].AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cfEventually(t, cfTimeout, "web recreated in the pull member by its agent", func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, pullMember, ns, "web")
		if err != nil || d == nil {
			return false, "not there", err
		}
		return d.UID != first.UID, "still the old copy", nil
	})

	// Update.
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "scale", "deployment/web", "--replicas=3")
	cfEventually(t, cfTimeout, "web scaled to 3 in the pull member", func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, pullMember, ns, "web")
		if err != nil || d == nil {
			return false, "not there", err
		}
		return deploymentReady(d, 3), summarizeDeployments(map[string]*appsv1.Deployment{pullMember: d}), nil
	})

	// A Work deleted by hand while its binding places the cluster: the
	// agent waits for the control plane's answer, leaves the copy, and the
	// Work made again adopts it (a copy deleted and created again would
	// have another UID).
	before, err := e.memberDeployment(ctx, pullMember, ns, "web")
	if err != nil || before == nil {
		t.Fatalf("web in %s: %v", pullMember, err)
	}
	work = e.pullWork(t, ns, "web")
	if err := e.cp.Delete(ctx, &work); err != nil {
		t.Fatalf("deleting the pull member's Work by hand: %v", err)
	}
	cfEventually(t, cfTimeout, "the pull member's Work made again and applied", func(ctx context.Context) (bool, string, error) {
		var w workv1alpha1.Work
		if err := e.cp.Get(ctx, client.ObjectKeyFromObject(&work), &w); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		applied := meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkApplied)
		return w.UID != work.UID && applied, fmt.Sprintf("uid %s (deleted %s), applied %t", w.UID, work.UID, applied), nil
	})
	after, err := e.memberDeployment(ctx, pullMember, ns, "web")
	if err != nil || after == nil {
		t.Fatalf("web in %s after its Work was made again: %v", pullMember, err)
	}
	if after.UID != before.UID {
		t.Errorf("the agent deleted and created web again (UID %s, then %s) when its Work was deleted while placed", before.UID, after.UID)
	}

	// Deletion.
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "delete", "deployment/web")
	e.waitGoneFrom(t, ns, "web", pullMember)
}

// pullWork returns the Work of Deployment ns/name in the pull member's
// execution namespace.
func (e *cfEnv) pullWork(t *testing.T, ns, name string) workv1alpha1.Work {
	t.Helper()
	var found workv1alpha1.Work
	cfEventually(t, cfTimeout, describe("the Work of %s in %s", name, pullMember), func(ctx context.Context) (bool, string, error) {
		var works workv1alpha1.WorkList
		if err := e.cp.List(ctx, &works, client.InNamespace(clusterv1alpha1.ExecutionSpacePrefix+pullMember)); err != nil {
			return false, "", err
		}
		for _, w := range works.Items {
			if w.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey] == name+"-deployment" &&
				w.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] == ns {
				found = w
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d Works, none of %s", len(works.Items), name), nil
	})
	return found
}

// caHash is the --discovery-token-ca-cert-hash `lifeboat token create`
// prints.
var caHashPattern = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// tokenPattern is a bootstrap token.
var tokenPattern = regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`)

// createToken runs `lifeboat token create` for cluster and returns the
// token and the CA hash it prints.
func (e *cfEnv) createToken(t *testing.T, cluster string, flags ...string) (token, hash string) {
	t.Helper()
	out := e.run(t, append([]string{"token", "create", "--cluster", cluster, "--kubeconfig", e.kubeconfig, "--context", localenv.ControlPlaneName}, flags...)...)
	token, hash = tokenPattern.FindString(out), caHashPattern.FindString(out)
	if token == "" || hash == "" {
		t.Fatalf("lifeboat token create printed no token or CA hash:\n%s", out)
	}
	return token, hash
}

// register runs `lifeboat register` against the control plane; it
// returns the output and the error.
func (e *cfEnv) register(t *testing.T, cluster, token, hash string) (string, error) {
	t.Helper()
	cp, _ := e.state.Cluster(localenv.ControlPlaneName)
	return lifeboat(t, "register", cp.Server, "--token", token, "--discovery-token-ca-cert-hash", hash,
		"--cluster-name", cluster, "--agent-kubeconfig", filepath.Join(t.TempDir(), "agent-kubeconfig"), "--timeout", "30s")
}

func pullBadInput(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	// A token for a Push cluster is refused when it is made.
	out, err := lifeboat(t, "token", "create", "--cluster", "member1", "--kubeconfig", e.kubeconfig, "--context", localenv.ControlPlaneName)
	if err == nil || !strings.Contains(out, "Push") {
		t.Errorf("token create for the Push cluster member1: err %v, output:\n%s", err, out)
	}

	// An expired token: refused by the control plane, with what to do.
	token, hash := e.createToken(t, pullMember, "--ttl", "2s")
	secret, err := e.cs.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+strings.SplitN(token, ".", 2)[0], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the token's Secret: %v", err)
	}
	expires, err := time.Parse(time.RFC3339, string(secret.Data["expiration"]))
	if err != nil {
		t.Fatalf("the token's expiration %q: %v", secret.Data["expiration"], err)
	}
	cfEventually(t, time.Minute, "the token to expire", func(context.Context) (bool, string, error) {
		return time.Now().After(expires.Add(time.Second)), "expires " + expires.String(), nil
	})
	out, err = e.register(t, pullMember, token, hash)
	if err == nil || !strings.Contains(out, "refused the bootstrap token") || !strings.Contains(out, "lifeboat token create") {
		t.Errorf("register with an expired token: err %v, output:\n%s", err, out)
	}

	// A revoked token.
	token, hash = e.createToken(t, pullMember)
	e.run(t, "token", "delete", strings.SplitN(token, ".", 2)[0], "--kubeconfig", e.kubeconfig, "--context", localenv.ControlPlaneName)
	out, err = e.register(t, pullMember, token, hash)
	if err == nil || !strings.Contains(out, "refused the bootstrap token") {
		t.Errorf("register with a revoked token: err %v, output:\n%s", err, out)
	}

	// A token made for member3 cannot register another cluster.
	token, hash = e.createToken(t, pullMember)
	out, err = e.register(t, "member1", token, hash)
	if err == nil || !strings.Contains(strings.ToLower(out), "denied") {
		t.Errorf("register member1 with member3's token: err %v, output:\n%s", err, out)
	}
	// A wrong CA hash: nothing is sent with the token.
	out, err = e.register(t, pullMember, token, "sha256:"+strings.Repeat("0", 64))
	if err == nil || !strings.Contains(out, "hash") {
		t.Errorf("register with a wrong CA hash: err %v, output:\n%s", err, out)
	}

	// An agent for a Push cluster refuses to start.
	memberKubeconfig := filepath.Join(e.dir, "member1", "kubeconfig")
	out, err = lifeboat(t, "agent", "--cluster-name", "member1", "--kubeconfig", e.kubeconfig, "--context", localenv.ControlPlaneName,
		"--cluster-kubeconfig", memberKubeconfig, "--health-probe-bind-address=0", "--metrics-bind-address=0")
	if err == nil || !strings.Contains(out, "Push mode") {
		t.Errorf("agent for the Push cluster member1: err %v, output:\n%s", err, out)
	}
	// The pull member's agent credentials read nothing of another cluster.
	out, err = lifeboat(t, "agent", "--cluster-name", "member1", "--kubeconfig", filepath.Join(e.dir, pullMember, "agent-kubeconfig"),
		"--cluster-kubeconfig", memberKubeconfig, "--health-probe-bind-address=0", "--metrics-bind-address=0")
	if err == nil || !strings.Contains(out, "may not read Cluster member1") {
		t.Errorf("agent of member1 with member3's credentials: err %v, output:\n%s", err, out)
	}
}

// objectWatch records the events of one watch of a member, with the time
// this process received each (one clock for every member).
type objectWatch struct {
	mu     sync.Mutex
	events []watchedEvent
}

type watchedEvent struct {
	typ  watch.EventType
	name string
	uid  types.UID
	at   time.Time
}

// leaseRenewals are the renewTimes a Pull cluster's Lease was seen with.
type leaseRenewals struct {
	mu    sync.Mutex
	times []time.Time
}

// recordRenewals polls the Lease of member in the control plane every
// 100 ms until the test ends (its renewals are 1.5 s apart) and keeps each
// renewTime it sees.
func recordRenewals(t *testing.T, e *cfEnv, member string) *leaseRenewals {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	r := &leaseRenewals{}
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var lease coordinationv1.Lease
			if err := e.cp.Get(ctx, types.NamespacedName{Namespace: cluster.LeaseNamespace, Name: member}, &lease); err == nil && lease.Spec.RenewTime != nil {
				r.add(lease.Spec.RenewTime.Time)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

func (r *leaseRenewals) add(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.times); n == 0 || at.After(r.times[n-1]) {
		r.times = append(r.times, at)
	}
}

// httpGet returns the status and body of a GET of url (0 and the error
// when it could not be asked).
func httpGet(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// last is the newest renewal seen.
func (r *leaseRenewals) last() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.times) == 0 {
		return time.Time{}, false
	}
	return r.times[len(r.times)-1], true
}

// longestGap is the longest time between two renewals seen, up to now for
// the last one, and which renewals bound it.
func (r *leaseRenewals) longestGap() (time.Duration, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.times) == 0 {
		return 0, "no renewal seen"
	}
	times := append(slices.Clone(r.times), time.Now())
	var gap time.Duration
	var between string
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d > gap {
			gap = d
			between = fmt.Sprintf("from %s to %s", times[i-1].UTC().Format("15:04:05.000"), times[i].UTC().Format("15:04:05.000"))
		}
	}
	return gap, between
}

// record reads w until the test ends.
func record(t *testing.T, what string, start func(ctx context.Context) (watch.Interface, error)) *objectWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := start(ctx)
	if err != nil {
		t.Fatalf("watching %s: %v", what, err)
	}
	ow := &objectWatch{}
	go func() {
		for ev := range w.ResultChan() {
			obj, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			ow.mu.Lock()
			ow.events = append(ow.events, watchedEvent{typ: ev.Type, name: obj.GetName(), uid: obj.GetUID(), at: time.Now()})
			ow.mu.Unlock()
		}
	}()
	return ow
}

// times returns when events of typ were received, in order.
func (w *objectWatch) times(typ watch.EventType) []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Time
	for _, e := range w.events {
		if e.typ == typ {
			out = append(out, e.at)
		}
	}
	return out
}

func (e *cfEnv) watchMemberDeployments(t *testing.T, member, ns string) *objectWatch {
	return record(t, "Deployments in "+member+"/"+ns, func(ctx context.Context) (watch.Interface, error) {
		return e.members[member].AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	})
}

func (e *cfEnv) watchPods(t *testing.T, member, ns string) *objectWatch {
	return record(t, "pods in "+member+"/"+ns, func(ctx context.Context) (watch.Interface, error) {
		return e.members[member].CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	})
}

// pullAgentRestarts: the agent is restarted five times while 50
// Deployments roll out to its member. Every one ends Healthy, and the
// member never saw one deleted or created twice. The policy names the pull
// member alone: should a loaded control plane miss the new agents' first
// renewals for longer than the grace, the member turns Unknown and is
// tainted, and its copies, with nowhere else to go, must still stay.
func pullAgentRestarts(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "pull-restart")
	mw := e.watchMemberDeployments(t, pullMember, ns)
	const n = 50
	var manifests []string
	for i := range n {
		manifests = append(manifests, cfDeployment(fmt.Sprintf("r%02d", i), 1, "rollout", "pull"))
	}
	manifests = append(manifests, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: rollout
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {rollout: pull}}}
  placement:
    clusterAffinity:
      clusterNames: [`+pullMember+`]`)
	began := time.Now()
	e.apply(t, ns, strings.Join(manifests, "\n---\n"))
	t.Cleanup(func() {
		if t.Failed() {
			e.logAgentErrors(t)
		}
	})

	renewals := recordRenewals(t, e, pullMember)
	var took []string
	for i := range 5 {
		at := i * n / 5
		cfEventually(t, cfTimeout, describe("at least %d Deployments in %s before restart %d", at, pullMember, i+1), func(ctx context.Context) (bool, string, error) {
			list, err := e.members[pullMember].AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			return len(list.Items) >= at, fmt.Sprintf("%d", len(list.Items)), nil
		})
		restart := time.Now()
		e.run(t, "env", "restart", pullMember+"-agent", "--state-dir", e.dir)
		took = append(took, time.Since(restart).Round(10*time.Millisecond).String())
	}
	t.Logf("the 5 restarts took %s", strings.Join(took, ", "))

	cfEventually(t, 3*cfTimeout, describe("all %d Deployments Healthy in %s", n, pullMember), func(ctx context.Context) (bool, string, error) {
		var rbs workv1alpha2.ResourceBindingList
		if err := e.cp.List(ctx, &rbs, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		healthy := 0
		var others []string
		for i := range rbs.Items {
			rb := &rbs.Items[i]
			item := aggregatedItem(rb, pullMember)
			if item != nil && item.Health == workv1alpha2.ResourceHealthy {
				healthy++
				continue
			}
			if len(others) < 5 {
				health := "no status"
				if item != nil {
					health = fmt.Sprintf("applied %t, %s", item.Applied, item.Health)
				}
				others = append(others, fmt.Sprintf("%s on %v (tasks %s; %s: %s)", rb.Name, scheduledClusters(rb), cfTasks(rb), pullMember, health))
			}
		}
		return healthy == n, fmt.Sprintf("%d of %d bindings Healthy on %s; e.g. %s", healthy, len(rbs.Items), pullMember, strings.Join(others, "; ")), nil
	})
	// While each new agent renews the Lease within the grace period, the
	// cluster stays Ready. A restart that leaves the Lease unrenewed for
	// longer (a control plane too slow to answer the new agent's first
	// renewals) rightly turns it Unknown: then the premise did not hold.
	gap, between := renewals.longestGap()
	if gap == 0 {
		t.Errorf("no renewal of %s's Lease was seen during the restarts", pullMember)
	}
	if c, err := e.cluster(ctx, pullMember); err != nil {
		t.Error(err)
	} else if ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); ready == nil || ready.LastTransitionTime.After(began) {
		if gap < pullGrace {
			t.Errorf("Cluster %s's Ready condition changed during the restarts although the Lease was renewed at most %s apart (grace %s): %+v", pullMember, gap.Round(10*time.Millisecond), pullGrace, ready)
		} else {
			t.Logf("Cluster %s's Ready changed during the restarts (%+v): the Lease went unrenewed for %s (%s), longer than the grace %s", pullMember, ready, gap.Round(10*time.Millisecond), between, pullGrace)
		}
	} else {
		t.Logf("the Lease was renewed at most %s apart during the restarts", gap.Round(10*time.Millisecond))
	}
	list, err := e.members[pullMember].AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Errorf("%d Deployments in %s, want %d", len(list.Items), pullMember, n)
	}
	e.pullRolloutEvents(t, ns, began, n)
	mw.mu.Lock()
	defer mw.mu.Unlock()
	uids := map[string]map[types.UID]bool{}
	for _, ev := range mw.events {
		if ev.typ == watch.Deleted {
			t.Errorf("the member saw Deployment %s deleted across agent restarts", ev.name)
		}
		if uids[ev.name] == nil {
			uids[ev.name] = map[types.UID]bool{}
		}
		uids[ev.name][ev.uid] = true
	}
	for name, seen := range uids {
		if len(seen) > 1 {
			t.Errorf("Deployment %s was created %d times in the member", name, len(seen))
		}
	}
}

// pullRolloutEvents waits until the rollout of n Works in ns has had its
// SyncWorkloadSucceed Events said within the agents' budget: some on the
// Works, the rest counted in summaries on the pull member's Cluster.
// Without a budget there would be no summary. The totals are not compared
// with n: each agent process has a budget of its own, an Event an agent
// had queued when it was stopped is lost with it, and a Work whose Applied
// condition a stopped agent had not written yet is applied, and said,
// again by the next.
func (e *cfEnv) pullRolloutEvents(t *testing.T, ns string, since time.Time, n int) {
	t.Helper()
	var seen string
	defer func() { t.Logf("the rollout's SyncWorkloadSucceed Events: %s", seen) }()
	cfEventually(t, 2*time.Minute, "the rollout's SyncWorkloadSucceed Events on its Works or counted on the Cluster", func(ctx context.Context) (bool, string, error) {
		var works workv1alpha1.WorkList
		if err := e.cp.List(ctx, &works, client.InNamespace(clusterv1alpha1.ExecutionSpacePrefix+pullMember)); err != nil {
			return false, "", err
		}
		ours := map[string]bool{}
		for _, w := range works.Items {
			if w.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] == ns {
				ours[w.Name] = true
			}
		}
		onWorks, err := e.cs.CoreV1().Events(clusterv1alpha1.ExecutionSpacePrefix+pullMember).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Work,reason=" + execution.EventSyncSucceeded,
		})
		if err != nil {
			return false, "", err
		}
		recorded := 0
		for _, ev := range onWorks.Items {
			if ours[ev.InvolvedObject.Name] {
				recorded++
			}
		}
		counted, summaries, err := e.summarised(ctx, execution.EventSyncSucceeded, pullMember, since)
		if err != nil {
			return false, "", err
		}
		said := fmt.Sprintf("%d Works; %d Events on them, %d counted in %d summaries on %s", len(ours), recorded, counted, summaries, pullMember)
		seen = said
		return len(ours) == n && summaries > 0 && counted > 0 && recorded > 0, said, nil
	})
}

// logAgentErrors logs the error lines of the pull member's agent's log.
func (e *cfEnv) logAgentErrors(t *testing.T) {
	errs := logErrors(e.component(t, pullMember+"-agent").Log)
	t.Logf("the agent logged %d error line(s), e.g.:\n%s", len(errs), strings.Join(errs[max(0, len(errs)-15):], "\n"))
}

// restartAgentOnCleanup starts the pull member's agent again when the
// scenario ends, if it is stopped.
func (e *cfEnv) restartAgentOnCleanup(t *testing.T) {
	t.Cleanup(func() {
		if !e.component(t, pullMember+"-agent").Process.Alive() {
			e.run(t, "env", "restart", pullMember+"-agent", "--state-dir", e.dir)
		}
	})
}

// pullAgentKilled: with its agent gone, the pull member's Lease expires;
// the control plane marks it Ready=Unknown, taints it, and its workload
// moves. The old copy runs on in the member (nothing can reach it) until
// the agent returns and deletes it.
func pullAgentKilled(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "pull-kill")
	e.apply(t, ns, cfDeployment("job", 1)+"\n---\n"+cfPinnedPolicy("job", byName("job"), pullMember, "", ""))
	if got := e.waitPlaced(t, ns, "job", 1, ""); got != pullMember {
		t.Fatalf("job placed on %s, want %s", got, pullMember)
	}
	e.restartAgentOnCleanup(t)
	e.run(t, "env", "stop", pullMember+"-agent", "--state-dir", e.dir)
	stopped := time.Now()

	var ready metav1.Condition
	cfEventually(t, cfTimeout, describe("Cluster %s Ready=Unknown", pullMember),
		e.clusterConditionIs(pullMember, clusterv1alpha1.ClusterConditionReady, metav1.ConditionUnknown, &ready))
	if ready.Reason != clusterv1alpha1.ClusterReasonStatusUnknown {
		t.Errorf("Ready=Unknown with reason %q, want %q", ready.Reason, clusterv1alpha1.ClusterReasonStatusUnknown)
	}
	t.Logf("Ready=Unknown %s after the agent stopped (grace 6 s)", ready.LastTransitionTime.Sub(stopped).Round(100*time.Millisecond))
	e.waitTaint(t, pullMember, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	to := e.waitPlaced(t, ns, "job", 1, pullMember)
	// The rollout of the agent-restart scenario, pinned to the pull member
	// alone, is evicted too, with nowhere to go: it is no failover in
	// flight, and must not hold job's clean-up back for the whole
	// --graceful-eviction-hold (1 minute here).
	e.waitHistoryWithin(t, ns, "job", pullMember, workv1alpha2.EvictionReasonTaintUntolerated, 45*time.Second)
	if d, err := e.memberDeployment(ctx, pullMember, ns, "job"); err != nil || d == nil {
		t.Errorf("the old copy in %s while its agent is down: %v, present %t (nothing may delete it without the agent)", pullMember, err, d != nil)
	}
	t.Logf("job moved %s -> %s", pullMember, to)

	e.run(t, "env", "restart", pullMember+"-agent", "--state-dir", e.dir)
	e.waitReady(t, pullMember, metav1.ConditionTrue)
	e.waitGoneFrom(t, ns, "job", pullMember)
}

// pullPartitioned: the agent loses its path to the control plane while
// both run. As with the agent gone, the member turns Unknown and its
// workload moves; the old copy runs on; after heal, the agent deletes it.
func pullPartitioned(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "pull-part")
	e.apply(t, ns, cfDeployment("part", 1)+"\n---\n"+cfPinnedPolicy("part", byName("part"), pullMember, "", ""))
	if got := e.waitPlaced(t, ns, "part", 1, ""); got != pullMember {
		t.Fatalf("part placed on %s, want %s", got, pullMember)
	}
	e.partition(t, pullMember)
	cfEventually(t, cfTimeout, describe("Cluster %s Ready=Unknown behind the partition", pullMember),
		e.clusterConditionIs(pullMember, clusterv1alpha1.ClusterConditionReady, metav1.ConditionUnknown, nil))
	to := e.waitPlaced(t, ns, "part", 1, pullMember)
	if d, err := e.memberDeployment(ctx, pullMember, ns, "part"); err != nil || d == nil {
		t.Errorf("the old copy in %s behind the partition: %v, present %t", pullMember, err, d != nil)
	}
	t.Logf("part moved %s -> %s", pullMember, to)
	e.heal(t, pullMember)
	e.waitGoneFrom(t, ns, "part", pullMember)
	if _, err := os.Stat(filepath.Join(e.dir, pullMember, "partitioned")); err == nil {
		t.Errorf("the cut file is still there after heal")
	}
}

// pullFenced: a Directly workload on the pull member, then a partition.
// The agent cannot renew its Lease and scales its copy to zero; the
// control plane moves the workload, and creates the new copy only once the
// old one counts as stopped: every old pod is gone before the first new
// pod exists. After heal the old copy is deleted, never started again.
func pullFenced(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "pull-fence")
	e.apply(t, ns, cfDeployment("single", 2)+"\n---\n"+cfPinnedPolicy("single", byName("single"), pullMember, "", `  failover:
    cluster:
      purgeMode: Directly`))
	if got := e.waitPlaced(t, ns, "single", 2, ""); got != pullMember {
		t.Fatalf("single placed on %s, want %s", got, pullMember)
	}
	old, err := e.memberDeployment(ctx, pullMember, ns, "single")
	if err != nil || old == nil {
		t.Fatalf("single in %s: %v", pullMember, err)
	}
	if got := old.Labels["fencing.lifeboat.dev/action"]; got != "ScaleToZero" {
		t.Fatalf("the copy in %s has fencing action %q, want ScaleToZero (labels %v)", pullMember, got, old.Labels)
	}
	e.waitFencingCondition(t, ns, "single", metav1.ConditionTrue, "FencedByAgents")
	oldPods := e.watchPods(t, pullMember, ns)
	newPods := map[string]*objectWatch{}
	for _, m := range cfMembers {
		if m != pullMember {
			newPods[m] = e.watchPods(t, m, ns)
		}
	}

	e.partition(t, pullMember)
	partitioned := time.Now()
	cfEventually(t, cfTimeout, describe("the copy in %s fenced to zero replicas", pullMember), func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, pullMember, ns, "single")
		if err != nil || d == nil {
			return false, "not there", err
		}
		return ptr.Deref(d.Spec.Replicas, 1) == 0 && d.Status.Replicas == 0, fmt.Sprintf("spec.replicas %d, status.replicas %d", ptr.Deref(d.Spec.Replicas, 1), d.Status.Replicas), nil
	})
	fenced := time.Now()
	to := e.waitPlaced(t, ns, "single", 2, pullMember)
	t.Logf("partitioned at 0 s; fenced by %s; Healthy on %s by %s", fenced.Sub(partitioned).Round(100*time.Millisecond), to, time.Since(partitioned).Round(100*time.Millisecond))

	oldDeleted := oldPods.times(watch.Deleted)
	if len(oldDeleted) < 2 {
		t.Fatalf("saw %d of the 2 old pods deleted in %s", len(oldDeleted), pullMember)
	}
	lastOld := oldDeleted[len(oldDeleted)-1]
	added := newPods[to].times(watch.Added)
	if len(added) == 0 {
		t.Fatalf("saw no new pod in %s", to)
	}
	if firstNew := added[0]; !lastOld.Before(firstNew) {
		t.Errorf("the last old pod in %s ended %s after the first new pod in %s was created: two copies ran at once", pullMember, lastOld.Sub(firstNew), to)
	} else {
		t.Logf("the last old pod ended %s before the first new pod was created", firstNew.Sub(lastOld).Round(10*time.Millisecond))
	}
	rb, err := e.binding(ctx, ns, "single")
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, ns, "involvedObject.name="+rb.Name, "fenced by its agent")

	// Its new cluster is a Push cluster: the binding says it cannot be
	// fenced there.
	e.waitFencingCondition(t, ns, "single", metav1.ConditionFalse, "PushClustersNotFenced")

	e.heal(t, pullMember)
	e.waitGoneFrom(t, ns, "single", pullMember)
	if added := oldPods.times(watch.Added); len(added) > 0 {
		// The watch starts with the existing pods as ADDED events: only
		// those created after the fencing count.
		var restarted int
		for _, a := range added {
			if a.After(fenced) {
				restarted++
			}
		}
		if restarted > 0 {
			t.Errorf("%d pods of the fenced copy started again in %s", restarted, pullMember)
		}
	}
}

// waitFencingCondition waits for the binding of Deployment name to have
// the Fencing condition with status and reason.
func (e *cfEnv) waitFencingCondition(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	cfEventually(t, cfTimeout, describe("binding of %s: Fencing=%s (%s)", name, status, reason), func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(rb.Status.Conditions, "Fencing")
		if c == nil {
			return false, "no Fencing condition", nil
		}
		return c.Status == status && c.Reason == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message), nil
	})
}

// pullSeedWalkthrough runs seed 000's application failover, as the guide
// writes it (toleration shortened to 5 s), on the pull member: the other
// members carry a NoSchedule taint until the workload is placed there.
// Its pods are deleted on a cordoned node; the agent reports it Unhealthy,
// the workload moves, and with purgeMode Never the copy stays until
// suppressDeletion is set to false, when the agent deletes it.
func pullSeedWalkthrough(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "pull-seed")
	const keepOff = "e2e.lifeboat.dev/pull-walkthrough"
	setKeepOff := func(add bool) {
		for _, m := range cfMembers {
			if m == pullMember {
				continue
			}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				c, err := e.cluster(context.Background(), m)
				if err != nil {
					return err
				}
				c.Spec.Taints = slices.DeleteFunc(c.Spec.Taints, func(t corev1.Taint) bool { return t.Key == keepOff })
				if add {
					c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: keepOff, Effect: corev1.TaintEffectNoSchedule})
				}
				return e.cp.Update(context.Background(), c)
			})
			if err != nil {
				t.Errorf("setting the taint %s on %s (%t): %v", keepOff, m, add, err)
			}
		}
	}
	untaint := func() { setKeepOff(false) }
	setKeepOff(true)
	t.Cleanup(untaint)
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "apply", "-f", filepath.Join("testdata", "failover", "000-nginx-never.yaml"))
	if got := e.waitPlaced(t, ns, "nginx", 2, ""); got != pullMember {
		t.Fatalf("nginx placed on %s, want %s", got, pullMember)
	}
	untaint()

	node := pullMember + "-control-plane"
	t.Cleanup(func() { _, _ = kubectlE(e.kubeconfig, "--context", pullMember, "uncordon", node) })
	kubectl(t, e.kubeconfig, "--context", pullMember, "cordon", node)
	kubectl(t, e.kubeconfig, "--context", pullMember, "-n", ns, "delete", "pod", "-l", "app=nginx")
	to := e.waitPlaced(t, ns, "nginx", 2, pullMember)
	rb, err := e.binding(ctx, ns, "nginx")
	if err != nil {
		t.Fatal(err)
	}
	task := findTask(rb, pullMember)
	if task == nil || task.Reason != workv1alpha2.EvictionReasonApplicationFailure || task.SuppressDeletion == nil || !*task.SuppressDeletion {
		t.Fatalf("eviction task from %s: %+v; want ApplicationFailure with suppressDeletion true", pullMember, task)
	}
	if d, err := e.memberDeployment(ctx, pullMember, ns, "nginx"); err != nil || d == nil {
		t.Fatalf("with purgeMode Never the copy in %s must stay: %v, present %t", pullMember, err, d != nil)
	}
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "patch", "rb", "nginx-deployment", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/gracefulEvictionTasks/0/suppressDeletion","value":false}]`)
	e.waitGoneFrom(t, ns, "nginx", pullMember)
	t.Logf("nginx moved %s -> %s by application failover; the confirmed deletion went through the agent", pullMember, to)
}

// pullFencedOnlyCopy: a Directly workload that may run on the pull member
// only. Behind a partition its agent fences it all the same (it cannot
// know that nothing will replace it), and the control plane keeps it, the
// last copy, where it is. After heal the agent applies its Work again and
// it runs as before: the same Deployment, scaled back.
func pullFencedOnlyCopy(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "pull-only")
	e.apply(t, ns, cfDeployment("only", 2)+`
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: only
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: only}
  placement:
    clusterAffinity:
      clusterNames: [`+pullMember+`]
  failover:
    cluster:
      purgeMode: Directly
`)
	if got := e.waitPlaced(t, ns, "only", 2, ""); got != pullMember {
		t.Fatalf("only placed on %s, want %s", got, pullMember)
	}
	before, err := e.memberDeployment(ctx, pullMember, ns, "only")
	if err != nil || before == nil {
		t.Fatalf("only in %s: %v", pullMember, err)
	}
	e.partition(t, pullMember)
	cfEventually(t, cfTimeout, describe("the only copy, in %s, fenced to zero replicas", pullMember), func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, pullMember, ns, "only")
		if err != nil || d == nil {
			return false, "not there", err
		}
		return ptr.Deref(d.Spec.Replicas, 1) == 0, fmt.Sprintf("spec.replicas %d", ptr.Deref(d.Spec.Replicas, 1)), nil
	})
	e.waitTaint(t, pullMember, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	rb, err := e.binding(ctx, ns, "only")
	if err != nil {
		t.Fatal(err)
	}
	if got := scheduledClusters(rb); len(got) != 0 && !slices.Equal(got, []string{pullMember}) {
		t.Errorf("only scheduled to %v behind the partition; nothing else may take it", got)
	}
	e.heal(t, pullMember)
	e.waitScaledBack(t, ns, "only", 2)
	after, err := e.memberDeployment(ctx, pullMember, ns, "only")
	if err != nil || after == nil || after.UID != before.UID {
		t.Errorf("after heal: %v; want the same Deployment (UID %s), not a new one", err, before.UID)
	}
}
