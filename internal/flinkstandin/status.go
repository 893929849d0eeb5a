package flinkstandin

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GVR is the resource of FlinkDeployments.
var GVR = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkdeployments"}

const (
	// FailoverJobIDLabel is the label the control plane's state
	// preservation puts on the new copy after a failover (seed 000's
	// aliasLabelName): the ID of the job to resume.
	FailoverJobIDLabel = "application.karmada.io/failover-jobid"
	// FailingImagePrefix marks images whose job fails: the local
	// environment's registry "fake" cannot be pulled.
	FailingImagePrefix = "fake/"
)

// Values of the operator's status fields.
const (
	LifecycleStable  = "STABLE"
	LifecycleFailed  = "FAILED"
	JobManagerReady  = "READY"
	JobManagerError  = "ERROR"
	JobStateRunning  = "RUNNING"
	JobStateFailed   = "FAILED"
	savepointTrigger = "UNKNOWN"
	savepointFormat  = "CANONICAL"
)

// DesiredStatus is the status the stand-in reports for obj (see the
// package documentation). now is used for a new job's startTime (epoch
// milliseconds, as the operator writes it); newJobID makes the ID of a new
// job. The result depends only on obj's spec, labels, generation and the
// current status, so applying it twice changes nothing.
func DesiredStatus(obj *unstructured.Unstructured, now time.Time, newJobID func() string) map[string]interface{} {
	current, _, _ := unstructured.NestedMap(obj.Object, "status", "jobStatus")
	currentID, _ := current["jobId"].(string)

	jobID := obj.GetLabels()[FailoverJobIDLabel]
	if jobID == "" {
		jobID = currentID
	}
	if jobID == "" {
		jobID = newJobID()
	}
	startTime, _ := current["startTime"].(string)
	if currentID != jobID || startTime == "" {
		startTime = strconv.FormatInt(now.UnixMilli(), 10)
	}

	image, _, _ := unstructured.NestedString(obj.Object, "spec", "image")
	savepoint, _, _ := unstructured.NestedString(obj.Object, "spec", "job", "initialSavepointPath")

	job := map[string]interface{}{
		"jobName":   obj.GetName(),
		"jobId":     jobID,
		"state":     JobStateRunning,
		"startTime": startTime,
	}
	if savepoint != "" {
		job["savepointInfo"] = map[string]interface{}{
			"lastSavepoint": map[string]interface{}{
				"location":    savepoint,
				"triggerType": savepointTrigger,
				"formatType":  savepointFormat,
			},
		}
	}
	status := map[string]interface{}{
		"lifecycleState":             LifecycleStable,
		"jobManagerDeploymentStatus": JobManagerReady,
		"observedGeneration":         obj.GetGeneration(),
		"jobStatus":                  job,
	}
	if strings.HasPrefix(image, FailingImagePrefix) {
		job["state"] = JobStateFailed
		status["lifecycleState"] = LifecycleFailed
		status["jobManagerDeploymentStatus"] = JobManagerError
		status["error"] = fmt.Sprintf(`{"type":"org.apache.flink.runtime.JobException","message":"Recovery is suppressed by NoRestartBackoffTimeStrategy: job %s failed running image %s"}`, jobID, image)
	}
	return status
}

// NewJobID returns a random Flink-style job ID: 32 lowercase hex digits.
func NewJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}
