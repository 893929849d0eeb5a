package flinkstandin

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// flinkDeployment builds a FlinkDeployment for the tests.
type flinkDeployment struct{ u *unstructured.Unstructured }

func makeFlink(name string) flinkDeployment {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "flink.apache.org/v1beta1",
		"kind":       "FlinkDeployment",
		"metadata":   map[string]interface{}{"name": name, "namespace": "ns", "generation": int64(1)},
		"spec":       map[string]interface{}{"image": "flink:1.17", "job": map[string]interface{}{"jarURI": "local:///job.jar"}},
	}}
	return flinkDeployment{u}
}

func (f flinkDeployment) image(i string) flinkDeployment {
	_ = unstructured.SetNestedField(f.u.Object, i, "spec", "image")
	return f
}

func (f flinkDeployment) label(k, v string) flinkDeployment {
	f.u.SetLabels(map[string]string{k: v})
	return f
}

func (f flinkDeployment) savepoint(p string) flinkDeployment {
	_ = unstructured.SetNestedField(f.u.Object, p, "spec", "job", "initialSavepointPath")
	return f
}

func (f flinkDeployment) reports(jobID, state, startTime string) flinkDeployment {
	_ = unstructured.SetNestedMap(f.u.Object, map[string]interface{}{
		"jobId": jobID, "state": state, "startTime": startTime,
	}, "status", "jobStatus")
	return f
}

func (f flinkDeployment) obj() *unstructured.Unstructured { return f.u }

func TestDesiredStatus(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	const fresh = "ffffffffffffffffffffffffffffffff"
	cases := map[string]struct {
		obj           *unstructured.Unstructured
		wantJobID     string
		wantState     string
		wantLifecycle string
		wantStart     string
		wantSavepoint string
		wantError     bool
	}{
		"a new job runs with a new ID": {
			obj:       makeFlink("foo").obj(),
			wantJobID: fresh, wantState: "RUNNING", wantLifecycle: "STABLE", wantStart: "1700000000000",
		},
		"a running job keeps its ID and start time": {
			obj:       makeFlink("foo").reports("aaaa", "RUNNING", "5").obj(),
			wantJobID: "aaaa", wantState: "RUNNING", wantLifecycle: "STABLE", wantStart: "5",
		},
		"a fake/ image fails the job it ran, keeping its ID": {
			obj:       makeFlink("foo").reports("aaaa", "RUNNING", "5").image("fake/flink:1.17").obj(),
			wantJobID: "aaaa", wantState: "FAILED", wantLifecycle: "FAILED", wantStart: "5", wantError: true,
		},
		"the failover label resumes that job": {
			obj:       makeFlink("foo").label(FailoverJobIDLabel, "bbbb").obj(),
			wantJobID: "bbbb", wantState: "RUNNING", wantLifecycle: "STABLE", wantStart: "1700000000000",
		},
		"the failover label wins over a reported ID": {
			obj:       makeFlink("foo").label(FailoverJobIDLabel, "bbbb").reports("aaaa", "RUNNING", "5").obj(),
			wantJobID: "bbbb", wantState: "RUNNING", wantLifecycle: "STABLE", wantStart: "1700000000000",
		},
		"initialSavepointPath is reported as restored from": {
			obj:       makeFlink("foo").label(FailoverJobIDLabel, "bbbb").savepoint("/ckpt/ns/bbbb/chk-7").obj(),
			wantJobID: "bbbb", wantState: "RUNNING", wantLifecycle: "STABLE", wantStart: "1700000000000",
			wantSavepoint: "/ckpt/ns/bbbb/chk-7",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := &unstructured.Unstructured{Object: map[string]interface{}{
				"status": DesiredStatus(tc.obj, now, func() string { return fresh }),
			}}
			str := func(path ...string) string {
				v, _, _ := unstructured.NestedString(got.Object, append([]string{"status"}, path...)...)
				return v
			}
			if v := str("jobStatus", "jobId"); v != tc.wantJobID {
				t.Errorf("jobId = %q, want %q", v, tc.wantJobID)
			}
			if v := str("jobStatus", "state"); v != tc.wantState {
				t.Errorf("jobStatus.state = %q, want %q", v, tc.wantState)
			}
			if v := str("lifecycleState"); v != tc.wantLifecycle {
				t.Errorf("lifecycleState = %q, want %q", v, tc.wantLifecycle)
			}
			if v := str("jobStatus", "startTime"); v != tc.wantStart {
				t.Errorf("startTime = %q, want %q", v, tc.wantStart)
			}
			if v := str("jobStatus", "savepointInfo", "lastSavepoint", "location"); v != tc.wantSavepoint {
				t.Errorf("savepoint location = %q, want %q", v, tc.wantSavepoint)
			}
			if v := str("jobStatus", "jobName"); v != "foo" {
				t.Errorf("jobName = %q, want foo", v)
			}
			errText := str("error")
			if (errText != "") != tc.wantError {
				t.Errorf("error = %q, want one: %v", errText, tc.wantError)
			}
			// The shipped health rule treats image-pull errors as the
			// user's and stays Healthy: the failure must not read as one.
			for _, userError := range []string{"ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff"} {
				if strings.Contains(errText, userError) {
					t.Errorf("error %q reads as a user error (%s)", errText, userError)
				}
			}
		})
	}
}

func TestNewJobID(t *testing.T) {
	a, b := NewJobID(), NewJobID()
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("NewJobID() = %q, want 32 hex digits", a)
	}
	if a == b {
		t.Errorf("two job IDs are equal: %s", a)
	}
}
