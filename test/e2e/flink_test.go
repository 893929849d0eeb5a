//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/flinkstandin"
)

// TestFlinkStatefulFailover is seed 000's "Application State Preservation"
// story on a FlinkDeployment (issue 6): the real CRD's field paths, the
// shipped FlinkDeployment health rule, and a stand-in operator per member
// (internal/flinkstandin) that runs each job, fails it when its image is
// under fake/, and resumes the job named by the label
// application.karmada.io/failover-jobid.
//
// The seed's policy is used as written (all three members, maxGroups 1,
// purgeMode Immediately) with tolerationSeconds 3 instead of 60. Placement
// is whatever the scheduler picks; only then is that member's copy broken,
// with an OverridePolicy on spec.image.
func TestFlinkStatefulFailover(t *testing.T) {
	t.Parallel()
	installCRD(t, flinkCRDFile)

	// The rule reads the operator's field, jobStatus.jobId: the new copy
	// carries the failed job's ID and the stand-in resumes that job.
	t.Run("jobId", func(t *testing.T) {
		t.Parallel()
		f := startFlinkScenario(t, "flink-jobid", "flink/policy.yaml")
		y, copyY := f.waitNewCopy(t, func(u *unstructured.Unstructured) (bool, string) {
			id, state := flinkJobOf(statusOf(u))
			return u.GetLabels()[flinkstandin.FailoverJobIDLabel] == f.jobID && id == f.jobID && state == flinkstandin.JobStateRunning,
				fmt.Sprintf("labels %v, job %q %s", u.GetLabels(), id, state)
		})
		t.Logf("job %s moved from %s to %s and resumed there", f.jobID, f.x, y)
		if _, ok := copyY.GetLabels()[flinkstandin.FailoverJobIDLabel]; !ok {
			t.Fatalf("new copy in %s lacks the failover label", y)
		}
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
