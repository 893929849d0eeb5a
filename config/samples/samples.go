// Package samples holds manifests Lifeboat installs or documents, embedded
// so that `lifeboat up` can install them.
package samples

import _ "embed"

// DefaultClusterTaintPolicy adds cluster.karmada.io/not-ready:NoExecute to a
// cluster whose Ready condition is False or Unknown and removes it when Ready
// is True, so cluster failover works out of the box.
//
//go:embed default-clustertaintpolicy.yaml
var DefaultClusterTaintPolicy []byte
