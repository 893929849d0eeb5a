// Package flinkstandin is a test-only stand-in for the Apache Flink
// Kubernetes Operator: it runs against one member cluster and gives every
// FlinkDeployment (flink.apache.org/v1beta1) the status the real operator
// would report, without running Flink. The e2e suite runs it in-process,
// one per member, to drive the shipped FlinkDeployment health rule and
// stateful failover end to end.
//
// What it decides (DesiredStatus, a pure function):
//   - spec.image under "fake/": the job ran and then failed:
//     status.lifecycleState FAILED, jobManagerDeploymentStatus ERROR,
//     jobStatus.state FAILED with an error, keeping the job's ID;
//   - any other image: the job runs: lifecycleState STABLE,
//     jobManagerDeploymentStatus READY, jobStatus.state RUNNING;
//   - the job's ID (status.jobStatus.jobId): the value of the label
//     application.karmada.io/failover-jobid when the object carries it (the
//     job resumes the failed-over job), else the ID it already reports,
//     else a new random 32-hex-digit ID, as Flink's JobID;
//   - spec.job.initialSavepointPath, when set, is reported as the savepoint
//     the job restored from: status.jobStatus.savepointInfo.lastSavepoint
//     {location: <path>, triggerType: UNKNOWN, formatType: CANONICAL}.
//
// Fields written: FlinkDeployment status only (through the status
// subresource): lifecycleState, jobManagerDeploymentStatus, error,
// observedGeneration and jobStatus {jobName, jobId, state, startTime,
// savepointInfo}. Nothing is written when the status already says that.
package flinkstandin
