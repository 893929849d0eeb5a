// Package examples embeds the example manifests that `lifeboat up` installs
// as they are shipped, so that the file a user reads is the one that runs.
package examples

import _ "embed"

// FlinkDeploymentCRD is the trimmed FlinkDeployment CRD (flink/crd.yaml).
//
//go:embed flink/crd.yaml
var FlinkDeploymentCRD []byte

// FlinkKyvernoClusterPolicy is the Kyverno ClusterPolicy that restores a
// failed-over Flink job from its last checkpoint
// (flink/kyverno-clusterpolicy.yaml); `lifeboat up --with-kyverno` installs
// it in every member.
//
//go:embed flink/kyverno-clusterpolicy.yaml
var FlinkKyvernoClusterPolicy []byte
