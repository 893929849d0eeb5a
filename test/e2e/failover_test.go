//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// Application failover, graceful eviction, stateful failover and the
// failover history, end to end (issue 4). Every scenario ends by checking
// what a user finds afterwards: status.failoverHistory, the Events and
// `lifeboat history` (assertFailoverRecorded).

// TestFailoverSeedWalkthrough is seed 000's example as written (toleration
// shortened): cordon the member, delete the pods, watch the workload move,
// keep the old copy (purgeMode Never) until a user sets suppressDeletion to
// false. Not parallel: it cordons a shared member's node.
func TestFailoverSeedWalkthrough(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "fo-seed")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	kubeconfig := suite.state.KubeconfigPath()
	applyFile(t, ns, "failover/000-nginx-never.yaml")

	x := waitPlacedHealthy(t, cp, ns, "nginx", "")
	predicted := predictUnhealthy(t, ns, "deploy/nginx", x)

	t.Cleanup(func() { _, _ = kubectlE(kubeconfig, "--context", x, "uncordon", x+"-control-plane") })
	kubectl(t, kubeconfig, "--context", x, "cordon", x+"-control-plane")
	kubectl(t, kubeconfig, "--context", x, "-n", ns, "delete", "pod", "-l", "app=nginx")

	eventually(t, failoverTimeout, "the binding shows "+x+" Unhealthy with 0/2 ready", func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, "nginx")
		if err != nil {
			return false, "", err
		}
		if task := findTask(rb, x); task != nil {
			return false, "already evicted before Unhealthy was seen", fmt.Errorf("missed the Unhealthy state")
		}
		item := aggregatedItem(rb, x)
		if item == nil {
			return false, "no item for " + x, nil
		}
		return item.Applied && item.Health == workv1alpha2.ResourceUnhealthy && reflectedInt(item, "readyReplicas") == 0 &&
				reflectedInt(item, "availableReplicas") == 0 && reflectedInt(item, "replicas") == 2,
			fmt.Sprintf("health=%s ready=%d available=%d replicas=%d", item.Health, reflectedInt(item, "readyReplicas"),
				reflectedInt(item, "availableReplicas"), reflectedInt(item, "replicas")), nil
	})

	y := waitPlacedHealthy(t, cp, ns, "nginx", x)
	rb, task := waitTask(t, cp, ns, "nginx", x)
	if task.Reason != workv1alpha2.EvictionReasonApplicationFailure || task.Producer != workv1alpha2.EvictionProducerRBApplicationFailover ||
		task.SuppressDeletion == nil || !*task.SuppressDeletion {
		t.Fatalf("eviction task = %+v; want reason ApplicationFailure, producer %s, suppressDeletion true", *task, workv1alpha2.EvictionProducerRBApplicationFailover)
	}
	if got := scheduledClusters(rb); !slices.Equal(got, []string{y}) {
		t.Fatalf("spec.clusters = %v, want [%s]", got, y)
	}
	// The seed's two other clusters score the same, and the scheduler takes
	// the one with more room; other scenarios' clean-up changes the room
	// between the prediction and the failover, so the prediction may name
	// the other of the two. It must still move the copy, once, to one
	// cluster of the placement other than x, with the same replicas and
	// purge mode.
	got, want := targetsOf(rb.Spec.Clusters), targetsOf(predicted.After)
	if len(predicted.Evictions) != 1 || predicted.Evictions[0].PurgeMode != task.PurgeMode || len(predicted.After) != 1 ||
		predicted.After[0].Name == x || predicted.After[0].Replicas != rb.Spec.Clusters[0].Replicas {
		t.Errorf("lifeboat simulate --unhealthy predicted %s with purge mode %v; the failover placed %s with %s", want, predicted.Evictions, got, task.PurgeMode)
	} else if got != want {
		t.Logf("lifeboat simulate --unhealthy predicted %s; the failover placed %s (the room in the clusters changed in between)", want, got)
	}
	// What the seed shows with kubectl get rb -o yaml.
	out := kubectl(t, kubeconfig, "-n", ns, "get", "rb", "nginx-deployment", "-o", "yaml")
	for _, want := range []string{"fromCluster: " + x, "reason: ApplicationFailure", "suppressDeletion: true",
		"producer: " + workv1alpha2.EvictionProducerRBApplicationFailover, "- name: " + y} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get rb -o yaml lacks %q:\n%s", want, out)
		}
	}

	// Never: the copy on x stays although the replacement is healthy.
	stays(t, time.Now().Add(3*time.Second), "the copy in "+x+" and the task stay for 3s with the replacement healthy", func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, "nginx")
		if err != nil {
			return false, "", err
		}
		d, err := ms[x].AppsV1().Deployments(ns).Get(ctx, "nginx", metav1.GetOptions{})
		if err != nil {
			return false, "the old copy: " + err.Error(), nil
		}
		return d.DeletionTimestamp == nil && findTask(rb, x) != nil, "tasks " + tasksSummary(rb), nil
	})

	kubectl(t, kubeconfig, "-n", ns, "patch", "rb", "nginx-deployment", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/gracefulEvictionTasks/0/suppressDeletion","value":false}]`)
	eventually(t, failoverTimeout, "suppressDeletion false deletes the copy in "+x+" and removes the task", func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, "nginx")
		if err != nil {
			return false, "", err
		}
		_, err = ms[x].AppsV1().Deployments(ns).Get(ctx, "nginx", metav1.GetOptions{})
		gone := apierrors.IsNotFound(err)
		return gone && len(rb.Spec.GracefulEvictionTasks) == 0, fmt.Sprintf("copy gone=%v (%v); tasks %s", gone, err, tasksSummary(rb)), nil
	})
	if ds, err := memberDeployments(ctx, ms, ns, "nginx"); err != nil || len(ds) != 1 || ds[y] == nil {
		t.Errorf("after the confirmation nginx should run only in %s: %s (%v)", y, summarizeDeployments(ds), err)
	}
	eventWith(t, ns, "nginx", "Normal", failover.EventReasonEvictionSucceed, x, "suppressDeletion: false")
	assertFailoverRecorded(t, ns, "nginx", x, y, "Never")
}

// TestFailoverGraciously: the old copy goes once the replacement is
// Healthy; when no replacement can become Healthy, it goes when
// gracePeriodSeconds have passed since the eviction.
func TestFailoverGraciously(t *testing.T) {
	t.Parallel()
	pair := []string{"member1", "member2"}

	t.Run("replacement healthy", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "fo-gracious")
		cp := clientFor(t, controlPlaneConfig(t))
		const name, grace = "web", 15
		applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 3
      purgeMode: Graciously
      gracePeriodSeconds: 15
`)+"---"+nginxDeployment(name, ""))
		x := waitPlacedHealthy(t, cp, ns, name, "")
		y := other(pair, x)
		w := watchMemberDeployments(t, ns, name)
		applyYAML(t, ns, fakeRegistry(name, []string{x}, ""))

		evicted := waitEvicted(t, cp, ns, name, x)
		var goneAt time.Time
		eventually(t, failoverTimeout, "the copy in "+x+" deleted", func(ctx context.Context) (bool, string, error) {
			var ok bool
			goneAt, ok = w.goneAt(x)
			return ok, w.String(), nil
		})
		inOrder, ok, detail := w.availableThenGone(y, x)
		if !ok {
			t.Fatalf("the copy in %s was deleted but the replacement in %s was never seen available: %s; %s", x, y, detail, w)
		}
		if !inOrder {
			t.Errorf("the old copy in %s went before the replacement in %s was available: %s; %s", x, y, detail, w)
		}
		if strings.HasSuffix(detail, receivedOutOfOrder) {
			t.Logf("the old copy went after the replacement was available: %s", detail)
		}
		if limit := evicted.Add(grace * time.Second); !goneAt.Before(limit) {
			t.Errorf("the old copy went at %s, not before the grace period ended at %s: the replacement's health did not end the task",
				goneAt.Format(time.StampMilli), limit.Format(time.StampMilli))
		}
		eventWith(t, ns, name, "Normal", failover.EventReasonEvictionSucceed, x, "is healthy")
		entry, _ := assertFailoverRecorded(t, ns, name, x, y, "Gracefully")
		if entry.PurgeMode != "Gracefully" {
			t.Errorf("history purge mode %q: Graciously should be recorded normalised as Gracefully", entry.PurgeMode)
		}
	})

	t.Run("no healthy replacement", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "fo-grace-expiry")
		cp := clientFor(t, controlPlaneConfig(t))
		const name, grace = "web", 5
		// The toleration is longer than the grace period, so the broken
		// replacement is not evicted in turn before the grace period ends
		// (with every cluster evicted there would be no target, and the
		// old copy would be kept on purpose).
		applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 8
      purgeMode: Graciously
      gracePeriodSeconds: 5
`)+"---"+nginxDeployment(name, ""))
		x := waitPlacedHealthy(t, cp, ns, name, "")
		y := other(pair, x)
		w := watchMemberDeployments(t, ns, name)
		applyYAML(t, ns, fakeRegistry(name, pair, ""))

		_, task := waitTask(t, cp, ns, name, x)
		created := task.CreationTimestamp.Time
		var goneAt time.Time
		eventually(t, failoverTimeout, "the copy in "+x+" deleted after the grace period", func(ctx context.Context) (bool, string, error) {
			var ok bool
			goneAt, ok = w.goneAt(x)
			return ok, w.String(), nil
		})
		if d := goneAt.Sub(created); d < grace*time.Second {
			t.Errorf("old copy deleted %s after the task was created (%s); want at least gracePeriodSeconds %ds", d, created.Format(time.RFC3339), grace)
		}
		if _, ok := w.first(y, fullyAvailable); ok {
			t.Errorf("the replacement in %s became available; the scenario needs it broken: %s", y, w)
		}
		eventWith(t, ns, name, "Normal", failover.EventReasonEvictionSucceed, x, "grace period")
		assertFailoverRecorded(t, ns, name, x, y)
	})
}

// TestFailoverImmediately: with Immediately the old copy is deleted before
// the new one is created.
func TestFailoverImmediately(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fo-immediately")
	cp := clientFor(t, controlPlaneConfig(t))
	pair := []string{"member2", "member3"}
	const name = "web"
	applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 3
      purgeMode: Immediately
`)+"---"+nginxDeployment(name, ""))
	x := waitPlacedHealthy(t, cp, ns, name, "")
	y := other(pair, x)
	w := watchMemberDeployments(t, ns, name)
	applyYAML(t, ns, fakeRegistry(name, []string{x}, ""))

	var added deploymentEvent
	eventually(t, failoverTimeout, "the new copy created in "+y, func(ctx context.Context) (bool, string, error) {
		var ok bool
		added, ok = w.first(y, isType(watch.Added))
		return ok, w.String(), nil
	})
	goneAt, ok := w.goneAt(x)
	if !ok {
		t.Fatalf("the new copy was created in %s while the old one in %s was never seen deleted: %s", y, x, w)
	}
	if !goneAt.Before(added.at) {
		t.Errorf("old copy in %s deleted at %s, not before the new copy in %s was created at %s: %s",
			x, goneAt.Format(time.StampMilli), y, added.at.Format(time.StampMilli), w)
	}
	waitPlacedHealthy(t, cp, ns, name, x)
	entry, _ := assertFailoverRecorded(t, ns, name, x, y, "Directly")
	if entry.PurgeMode != "Directly" {
		t.Errorf("history purge mode %q: Immediately should be recorded normalised as Directly", entry.PurgeMode)
	}
}

// TestFailoverNeverLosesLastCopy: with one cluster allowed, nothing can take
// the workload; the eviction is recorded, the binding says why, and the
// only copy survives the grace period (Graciously) and Immediately alike.
func TestFailoverNeverLosesLastCopy(t *testing.T) {
	t.Parallel()
	const only, grace = "member3", 5
	for _, tc := range []struct{ name, application string }{
		{"graciously", `
      decisionConditions:
        tolerationSeconds: 3
      purgeMode: Graciously
      gracePeriodSeconds: 5
`},
		{"immediately", `
      decisionConditions:
        tolerationSeconds: 3
      purgeMode: Immediately
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "fo-last-copy")
			cp := clientFor(t, controlPlaneConfig(t))
			ms := members(t)
			name := "lonely-" + tc.name
			applyYAML(t, ns, onePolicy(name, []string{only}, tc.application)+"---"+nginxDeployment(name, ""))
			waitPlacedHealthy(t, cp, ns, name, "")
			applyYAML(t, ns, fakeRegistry(name, []string{only}, ""))

			_, task := waitTask(t, cp, ns, name, only)
			waitNoFailoverTarget(t, cp, ns, name, only, nil)
			keptPastGrace(t, cp, ms[only], ns, name, only, task, grace, grace+4, "")
			assertFailoverRecorded(t, ns, name, only, "", "WARNING: No cluster can take the workload", "<pending>")
		})
	}
}

// TestFailoverKeepsAShareThatFitsNowhere: a Divided workload on two
// clusters, its copy in one of them unhealthy and evicted Graciously, while
// the placement (a spread over exactly two clusters) cannot take that share
// anywhere else. The other cluster keeps its share, so spec.clusters is not
// empty, but nothing replaced the evicted copy: the grace period must not
// run out and delete it. The kept copy is still part of the workload: the
// fix of its image reaches it, and once it is Healthy the eviction is
// undone with the same copy.
func TestFailoverKeepsAShareThatFitsNowhere(t *testing.T) {
	t.Parallel()
	const keeps, evicted, grace = "member2", "member3", 5
	ctx := context.Background()
	ns := newNamespace(t, "fo-share")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	const name = "halves"
	policy := fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %[1]s
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: %[1]s
  placement:
    clusterAffinity:
      clusterNames: [%[2]s, %[3]s]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 2
        minGroups: 2
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        dynamicWeight: AvailableReplicas
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 3
      purgeMode: Graciously
      gracePeriodSeconds: %[4]d
`, name, keeps, evicted, grace)
	// Two replicas in each cluster: a copy whose new Pods cannot pull their
	// image then counts fewer updated replicas than it should, and reports
	// Unhealthy (with one, the new Pod is the one updated replica).
	applyYAML(t, ns, policy+"---"+strings.Replace(nginxDeployment(name, ""), "replicas: 2", "replicas: 4", 1))
	eventually(t, failoverTimeout, "two replicas in each of "+keeps+" and "+evicted, func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		return len(rb.Spec.Clusters) == 2 && workv1alpha2.IsPlacementHealthy(rb.Spec.Clusters, rb.Status.AggregatedStatus),
			fmt.Sprintf("clusters %+v", rb.Spec.Clusters), nil
	})
	original, err := ms[evicted].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applyYAML(t, ns, fakeRegistry(name, []string{evicted}, ""))

	_, task := waitTask(t, cp, ns, name, evicted)
	waitNoFailoverTarget(t, cp, ns, name, evicted, []string{keeps})
	keptPastGrace(t, cp, ms[evicted], ns, name, evicted, task, grace, grace+6, original.UID)

	kubectl(t, suite.state.KubeconfigPath(), "-n", ns, "delete", "overridepolicy", name+"-broken")
	eventually(t, failoverTimeout, "the eviction from "+evicted+" undone once its copy, fixed, is Healthy", func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		return len(rb.Spec.GracefulEvictionTasks) == 0 && slices.Contains(scheduledClusters(rb), evicted),
			fmt.Sprintf("clusters %v, tasks %s", scheduledClusters(rb), tasksSummary(rb)), nil
	})
	d, err := ms[evicted].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || d.UID != original.UID {
		t.Errorf("the copy in %s was recreated, not kept: %v", evicted, err)
	}
}

// TestFailoverTimerSurvivesRestart: the controller manager is restarted in
// the middle of the toleration window; the eviction happens at the original
// deadline (status.unhealthyClusters keeps the timer). Not parallel: the
// restart pauses every controller.
func TestFailoverTimerSurvivesRestart(t *testing.T) {
	ns := newNamespace(t, "fo-restart")
	cp := clientFor(t, controlPlaneConfig(t))
	pair := []string{"member1", "member2"}
	const name, toleration = "web", 10 * time.Second
	applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 10
      purgeMode: Gracefully
`)+"---"+nginxDeployment(name, ""))
	x := waitPlacedHealthy(t, cp, ns, name, "")
	applyYAML(t, ns, fakeRegistry(name, []string{x}, ""))

	since := waitUnhealthyTimer(t, cp, ns, name, x)
	// Restart well into the window, so that a timer restarted at the
	// restart would miss the deadline by more than the allowed slack.
	restartAt := since.Add(toleration * 6 / 10)
	eventually(t, toleration, "60% of the toleration window elapsed", func(context.Context) (bool, string, error) {
		return !time.Now().Before(restartAt), "", nil
	})
	if out, err := lifeboat(t, "env", "restart", "lifeboat-controller-manager", "--state-dir", suite.state.Dir); err != nil {
		t.Fatalf("restarting the controller manager: %v\n%s", err, out)
	}
	if time.Now().After(since.Add(toleration)) {
		t.Fatalf("the restart ended after the deadline (%s); the scenario proves nothing", since.Add(toleration).Format(time.RFC3339))
	}

	evicted := waitEvicted(t, cp, ns, name, x)
	if rb, err := bindingOf(context.Background(), cp, ns, name); err != nil {
		t.Fatal(err)
	} else if got, ok := unhealthySince(rb, x); ok && !got.Equal(&since) {
		t.Errorf("unhealthySince changed across the restart: %s, was %s", got.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	d := evicted.Sub(since.Time)
	if d < toleration || d > toleration+5*time.Second {
		t.Errorf("evicted %s after the application became unhealthy (%s); want within [%s, %s]",
			d, since.Format(time.RFC3339), toleration, toleration+5*time.Second)
	}
	waitPlacedHealthy(t, cp, ns, name, x)
	assertFailoverRecorded(t, ns, name, x, other(pair, x))
}

// TestFailoverUnknownDoesNotResetTimer: health alternating between
// Unhealthy and Unknown still fails over at the deadline of the first
// Unhealthy report. Unknown is produced honestly: an OverridePolicy adds a
// label value the member's API server rejects, so the Work cannot be
// applied (Applied False) and the binding reports the health as Unknown.
func TestFailoverUnknownDoesNotResetTimer(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fo-unknown")
	cp := clientFor(t, controlPlaneConfig(t))
	pair := []string{"member1", "member3"}
	const name, toleration = "web", 10 * time.Second
	applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 10
`)+"---"+nginxDeployment(name, ""))
	x := waitPlacedHealthy(t, cp, ns, name, "")
	unhealthy := fakeRegistry(name, []string{x}, "")
	unknown := fakeRegistry(name, []string{x}, `        plaintext:
          - path: /metadata/labels/lifeboat-e2e-invalid
            operator: add
            value: "not a valid label value!"
`)

	applyYAML(t, ns, unhealthy)
	rb := waitHealth(t, cp, ns, name, x, workv1alpha2.ResourceUnhealthy)
	var since metav1.Time
	eventually(t, failoverTimeout, "the unhealthy timer started", func(ctx context.Context) (bool, string, error) {
		var err error
		if rb, err = bindingOf(ctx, cp, ns, name); err != nil {
			return false, "", err
		}
		var ok bool
		since, ok = unhealthySince(rb, x)
		return ok, fmt.Sprintf("%v", rb.Status.UnhealthyClusters), nil
	})
	sameTimer := func(state string) {
		t.Helper()
		rb, err := bindingOf(context.Background(), cp, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if findTask(rb, x) != nil {
			t.Fatalf("evicted before the health alternation ended (%s); lengthen the toleration", state)
		}
		if got, ok := unhealthySince(rb, x); !ok || !got.Equal(&since) {
			t.Fatalf("%s reset the unhealthy timer: unhealthyClusters %v, was since %s", state, rb.Status.UnhealthyClusters, since.Format(time.RFC3339))
		}
	}
	applyYAML(t, ns, unknown)
	waitHealth(t, cp, ns, name, x, workv1alpha2.ResourceUnknown)
	sameTimer("Unknown")
	applyYAML(t, ns, unhealthy)
	waitHealth(t, cp, ns, name, x, workv1alpha2.ResourceUnhealthy)
	sameTimer("Unhealthy after Unknown")
	applyYAML(t, ns, unknown)
	waitHealth(t, cp, ns, name, x, workv1alpha2.ResourceUnknown)
	sameTimer("Unknown again")

	if d := waitEvicted(t, cp, ns, name, x).Sub(since.Time); d < toleration || d > toleration+5*time.Second {
		t.Errorf("evicted %s after the first Unhealthy report; want within [%s, %s]", d, toleration, toleration+5*time.Second)
	}
	waitPlacedHealthy(t, cp, ns, name, x)
	assertFailoverRecorded(t, ns, name, x, other(pair, x))
}
