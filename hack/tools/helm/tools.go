//go:build tools

// Package tools pins the helm binary that `make verify` uses to lint and
// render charts/lifeboat. A module of its own: Helm's dependencies would move
// the Kubernetes libraries controller-gen is built with.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
