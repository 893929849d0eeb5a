#!/usr/bin/env bash
# Regenerates the API's deepcopy functions and CRD manifests.
#
#   api/**/zz_generated.deepcopy.go   deepcopy for every API package
#   config/crd/bases/*.yaml           one CRD per kind, completed by
#                                     hack/crdschema with the validation of
#                                     embedded Kubernetes types (label
#                                     selectors, conditions, tolerations,
#                                     taints) that markers cannot express
#   config/rbac/role.yaml             the controller manager's ClusterRole in
#                                     the control plane, from the
#                                     +kubebuilder:rbac markers in internal/
#
# controller-gen comes from the separate tools module hack/tools (pinned in
# hack/tools/go.mod) and is built into bin/. Running the script twice gives
# no diff: the CRD directory is regenerated from scratch each time.
set -o errexit -o nounset -o pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

BIN_DIR="${REPO_ROOT}/bin"
CONTROLLER_GEN="${BIN_DIR}/controller-gen"
mkdir -p "${BIN_DIR}"

# Build controller-gen from the pinned tools module (cheap when cached).
(cd hack/tools && go build -o "${CONTROLLER_GEN}" sigs.k8s.io/controller-tools/cmd/controller-gen)

"${CONTROLLER_GEN}" object:headerFile=hack/boilerplate.go.txt paths=./api/...

CRD_DIR=config/crd/bases
TMP_DIR="$(mktemp -d)"
trap 'rm -rf "${TMP_DIR}"' EXIT
"${CONTROLLER_GEN}" crd:crdVersions=v1 paths=./api/... output:crd:dir="${TMP_DIR}"
go run ./hack/crdschema "${TMP_DIR}"
rm -f "${CRD_DIR}"/*.yaml
mkdir -p "${CRD_DIR}"
cp "${TMP_DIR}"/*.yaml "${CRD_DIR}/"

# The controller manager's ClusterRole, from the markers beside the code that
# needs each permission.
"${CONTROLLER_GEN}" rbac:roleName=lifeboat-controller-manager paths=./internal/... output:rbac:artifacts:config=config/rbac
