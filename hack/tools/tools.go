//go:build tools

// Package tools pins the code generators used by hack/generate.sh and the
// linter hack/verify.sh runs. It is a separate module so that their
// dependencies never leak into the main module's go.mod.
package tools

import (
	_ "honnef.co/go/tools/cmd/staticcheck"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
