//go:build tools

// Package tools pins the code generators used by hack/generate.sh. It is a
// separate module so that generator dependencies never leak into the main
// module's go.mod.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
