//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/flinkstandin"
)

// TestFlinkStatefulFailover is seed 000's "Application State Preservation"
// story on a FlinkDeployment (issue 6): the real CRD's field paths, the
// shipped FlinkDeployment health rule, a stand-in operator per member
// (internal/flinkstandin) that runs each job, fails it when its image is
// under fake/, and resumes the job named by the label
// application.karmada.io/failover-jobid from spec.job.initialSavepointPath,
// and the real Kyverno in every member (lifeboat up --with-kyverno) with
// the shipped ClusterPolicy, which sets that path from the label.
//
// The seed's policy is used as written (all three members, maxGroups 1,
// purgeMode Immediately) with tolerationSeconds 3 instead of 60. Placement
// is whatever the scheduler picks; only then is that member's copy broken,
// with an OverridePolicy on spec.image.
func TestFlinkStatefulFailover(t *testing.T) {
	t.Parallel()
	installCRD(t, flinkCRDFile)

	// The rule reads the operator's field, jobStatus.jobId: the new copy
	// carries the failed job's ID; Kyverno in the new member turns it into
	// spec.job.initialSavepointPath from the ConfigMap
	// flink-latest-checkpoints (the shipped ClusterPolicy), and the
	// stand-in resumes that job from that path.
	t.Run("jobId", func(t *testing.T) {
		t.Parallel()
		requireKyverno(t)
		f := runFlinkScenario(t, "flink-jobid", "flink/policy.yaml")
		// What tracks the job's checkpoints publishes the latest one, and a
		// PropagationPolicy sends it to every member before anything fails.
		ckpt := checkpointFor(f.jobID, 42)
		applyYAML(t, f.ns, latestCheckpoints(map[string]string{f.jobID: ckpt}))
		waitCheckpointsEverywhere(t, f.ns, map[string]string{f.jobID: ckpt})
		f.breakCopy(t)

		y, copyY := f.waitNewCopy(t, func(u *unstructured.Unstructured) (bool, string) {
			id, state := flinkJobOf(statusOf(u))
			savepoint, mode := flinkJobSpec(u)
			return u.GetLabels()[flinkstandin.FailoverJobIDLabel] == f.jobID && id == f.jobID && state == flinkstandin.JobStateRunning &&
					savepoint == ckpt && mode == "last-state" && restoredFrom(u) == ckpt,
				fmt.Sprintf("labels %v, job %q %s, initialSavepointPath %q (%s), restored from %q", u.GetLabels(), id, state, savepoint, mode, restoredFrom(u))
		})
		t.Logf("job %s moved from %s to %s and resumed there from %s", f.jobID, f.x, y, ckpt)
		if _, ok := copyY.GetLabels()[flinkstandin.FailoverJobIDLabel]; !ok {
			t.Fatalf("new copy in %s lacks the failover label", y)
		}
		// Kyverno set the path, not Lifeboat: the template has none, and
		// Kyverno in y says it mutated the copy.
		d := dynamicFor(t, controlPlaneConfig(t))
		if tpl, err := getObject(context.Background(), d, flinkstandin.GVR, f.ns, "foo"); err != nil || tpl == nil {
			t.Fatalf("reading the template: %v", err)
		} else if savepoint, _ := flinkJobSpec(tpl); savepoint != "" {
			t.Errorf("the template has initialSavepointPath %q; only the member's Kyverno may set it", savepoint)
		}
		waitKyvernoMutated(t, y, f.ns, "foo")

		// The binding and the template show the resumed job.
		if got, id := waitFlinkRunning(t, f.cp, f.ns, "foo", f.x); got != y || id != f.jobID {
			t.Errorf("binding: running on %s with job %s, want %s with job %s", got, id, y, f.jobID)
		}
		f.waitTemplateJob(t, f.jobID)
		f.waitGoneFrom(t, f.x)

		entry := f.waitHistory(t)
		if entry.PreservedLabelState[flinkstandin.FailoverJobIDLabel] != f.jobID {
			t.Errorf("history preservedLabelState = %v, want %s=%s", entry.PreservedLabelState, flinkstandin.FailoverJobIDLabel, f.jobID)
		}
		state := flinkstandin.FailoverJobIDLabel + "=" + f.jobID
		waitEvent(t, f.ns, "FlinkDeployment", "foo", "Warning", failover.EventReasonEvicted, "from cluster "+f.x, state)
		out, err := lifeboat(t, "history", "flinkdeployment/foo", "-n", f.ns, "--kubeconfig", suite.state.KubeconfigPath())
		if err != nil || !strings.Contains(out, state) || !strings.Contains(out, f.x) {
			t.Errorf("lifeboat history flinkdeployment/foo (err %v) should name %s and %s:\n%s", err, f.x, state, out)
		}

		// A later template change is applied to the copy server-side, which
		// drops a field the template lacks; Kyverno mutates that UPDATE too
		// and keeps the path the job was deployed from, although a newer
		// checkpoint has been published meanwhile.
		newer := checkpointFor(f.jobID, 43)
		applyYAML(t, f.ns, latestCheckpoints(map[string]string{f.jobID: newer}))
		waitCheckpointsEverywhere(t, f.ns, map[string]string{f.jobID: newer})
		patch := []byte(`{"spec":{"job":{"parallelism":3}}}`)
		if _, err := d.Resource(flinkstandin.GVR).Namespace(f.ns).Patch(context.Background(), "foo", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("changing the template: %v", err)
		}
		var after *unstructured.Unstructured
		eventually(t, failoverTimeout, "the template change reaches "+y, func(ctx context.Context) (bool, string, error) {
			u, err := getObject(ctx, f.members[y], flinkstandin.GVR, f.ns, "foo")
			if err != nil || u == nil {
				return false, "no copy", err
			}
			after = u
			parallelism, _, _ := unstructured.NestedInt64(u.Object, "spec", "job", "parallelism")
			return parallelism == 3, fmt.Sprintf("parallelism %d", parallelism), nil
		})
		if savepoint, _ := flinkJobSpec(after); savepoint != ckpt || restoredFrom(after) != ckpt {
			t.Errorf("after the template change: initialSavepointPath %q, restored from %q; want both %q", savepoint, restoredFrom(after), ckpt)
		}
	})

	// The seed's spelling, jobStatus.jobID, matches nothing: the failover
	// still happens, without the label (the stand-in starts a new job), and
	// a Warning Event names the rule and suggests jobId.
	t.Run("seed jobID", func(t *testing.T) {
		t.Parallel()
		f := startFlinkScenario(t, "flink-seed", "flink/policy-seed.yaml")
		y, _ := f.waitNewCopy(t, func(u *unstructured.Unstructured) (bool, string) {
			id, state := flinkJobOf(statusOf(u))
			_, labelled := u.GetLabels()[flinkstandin.FailoverJobIDLabel]
			return !labelled && id != "" && id != f.jobID && state == flinkstandin.JobStateRunning,
				fmt.Sprintf("labels %v, job %q %s", u.GetLabels(), id, state)
		})
		t.Logf("job %s moved from %s to %s without its ID", f.jobID, f.x, y)
		waitFlinkRunning(t, f.cp, f.ns, "foo", f.x)
		f.waitGoneFrom(t, f.x)

		msg := waitEvent(t, f.ns, "ResourceBinding", "foo-flinkdeployment", "Warning", failover.EventReasonStatePreservationFailed,
			f.x, flinkstandin.FailoverJobIDLabel, "jobID not found; did you mean jobId?", "the failover goes on")
		t.Logf("Event: %s", msg)
		waitEvent(t, f.ns, "FlinkDeployment", "foo", "Warning", failover.EventReasonStatePreservationFailed, "did you mean jobId?")
		entry := f.waitHistory(t)
		if len(entry.PreservedLabelState) != 0 || !strings.Contains(entry.Message, "state not preserved for rule "+flinkstandin.FailoverJobIDLabel) {
			t.Errorf("history entry: message %q, state %v; want the rule named and no state", entry.Message, entry.PreservedLabelState)
		}
	})
}

// TestFlinkKyvernoPolicy runs the shipped ClusterPolicy
// (examples/flink/kyverno-clusterpolicy.yaml) through the real Kyverno of
// each member, without Lifeboat in between: FlinkDeployments are applied
// server-side, as Lifeboat's execution controller applies them.
func TestFlinkKyvernoPolicy(t *testing.T) {
	t.Parallel()
	requireKyverno(t)
	installCRD(t, flinkCRDFile)
	const job, unknownJob = "9d3195748ee6faacd03f984192c82a0f", "00000000000000000000000000000000"
	for _, m := range memberNames {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			cfg := memberConfig(t, m)
			cs := clientsetFor(t, cfg)
			d := dynamicFor(t, cfg)
			ns := createNamespace(t, cfg, "kyverno-flink")
			setCheckpoints := func(path string) {
				t.Helper()
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: checkpointsConfigMap}, Data: map[string]string{job: path}}
				_, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{})
				if apierrors.IsNotFound(err) {
					_, err = cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
				}
				if err != nil {
					t.Fatalf("writing ConfigMap %s: %v", checkpointsConfigMap, err)
				}
			}
			ckpt := checkpointFor(job, 42)
			setCheckpoints(ckpt)

			// A copy labelled with a job the ConfigMap knows restores from
			// that job's checkpoint, and Kyverno says it mutated it.
			got := applyFlink(t, d, ns, "restored", job, 2)
			if savepoint, mode := flinkJobSpec(got); savepoint != ckpt || mode != "last-state" {
				t.Errorf("labelled %s: initialSavepointPath %q, upgradeMode %q; want %q, last-state", job, savepoint, mode, ckpt)
			}
			waitKyvernoMutated(t, m, ns, "restored")

			// Not labelled: not mutated, on CREATE nor on UPDATE.
			for _, parallelism := range []int64{2, 3} {
				got = applyFlink(t, d, ns, "plain", "", parallelism)
				if savepoint, mode := flinkJobSpec(got); savepoint != "" || mode != "stateless" {
					t.Errorf("unlabelled (parallelism %d): initialSavepointPath %q, upgradeMode %q; want none, stateless", parallelism, savepoint, mode)
				}
			}

			// Labelled with a job the ConfigMap does not know, or in a
			// namespace without the ConfigMap: admitted unchanged.
			got = applyFlink(t, d, ns, "unknown", unknownJob, 2)
			if savepoint, mode := flinkJobSpec(got); savepoint != "" || mode != "stateless" {
				t.Errorf("unknown job: initialSavepointPath %q, upgradeMode %q; want none, stateless", savepoint, mode)
			}
			bare := createNamespace(t, cfg, "kyverno-flink-bare")
			got = applyFlink(t, d, bare, "restored", job, 2)
			if savepoint, mode := flinkJobSpec(got); savepoint != "" || mode != "stateless" {
				t.Errorf("no ConfigMap: initialSavepointPath %q, upgradeMode %q; want none, stateless", savepoint, mode)
			}

			// Applied again with a change after a newer checkpoint was
			// published: the applier sends upgradeMode stateless again (its
			// own field: without the UPDATE rule it would win) and no path;
			// Kyverno sets last-state again and keeps the path the job was
			// deployed from.
			setCheckpoints(checkpointFor(job, 43))
			got = applyFlink(t, d, ns, "restored", job, 3)
			if savepoint, mode := flinkJobSpec(got); savepoint != ckpt || mode != "last-state" {
				t.Errorf("re-applied: initialSavepointPath %q, upgradeMode %q; want %q (kept), last-state", savepoint, mode, ckpt)
			}
			if p, _, _ := unstructured.NestedInt64(got.Object, "spec", "job", "parallelism"); p != 3 {
				t.Errorf("re-applied: parallelism %d, want 3", p)
			}
			// A new job restores from the newer checkpoint.
			got = applyFlink(t, d, ns, "restored-later", job, 2)
			if savepoint, _ := flinkJobSpec(got); savepoint != checkpointFor(job, 43) {
				t.Errorf("created after the update: initialSavepointPath %q, want %q", savepoint, checkpointFor(job, 43))
			}
		})
	}
}

// applyFlink server-side applies a FlinkDeployment (upgradeMode stateless,
// labelled with the failover job ID when jobID is set) as Lifeboat's
// execution controller would, and returns the object as admitted.
func applyFlink(t *testing.T, d dynamic.Interface, ns, name, jobID string, parallelism int64) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flink.apache.org/v1beta1",
		"kind":       "FlinkDeployment",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"image":        "flink:1.17",
			"flinkVersion": "v1_17",
			"job": map[string]any{
				"jarURI":      "local:///opt/flink/examples/streaming/StateMachineExample.jar",
				"parallelism": parallelism,
				"upgradeMode": "stateless",
			},
		},
	}}
	if jobID != "" {
		u.SetLabels(map[string]string{flinkstandin.FailoverJobIDLabel: jobID})
	}
	got, err := d.Resource(flinkstandin.GVR).Namespace(ns).Apply(context.Background(), name, u, metav1.ApplyOptions{FieldManager: "lifeboat-e2e", Force: true})
	if err != nil {
		t.Fatalf("applying FlinkDeployment %s/%s: %v", ns, name, err)
	}
	return got
}
