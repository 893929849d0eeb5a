#!/usr/bin/env bash
# Fails when generated code is stale, the Helm chart does not lint, render or
# validate (hack/verify-chart.sh), Go code is unformatted, or go vet or
# staticcheck (pinned in hack/tools) complains.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== generate (must produce no diff)"
before=$(git status --porcelain -- api config 2>/dev/null || true)
hack/generate.sh
after=$(git status --porcelain -- api config 2>/dev/null || true)
if [[ "$before" != "$after" ]] || ! git diff --quiet -- api config; then
  echo "Generated files are stale. Run 'make generate' and commit the result:" >&2
  git status --porcelain -- api config >&2
  git --no-pager diff --stat -- api config >&2
  exit 1
fi

echo "== chart"
hack/verify-chart.sh

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [[ -n "$unformatted" ]]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...
go vet -tags e2e ./test/...

echo "== staticcheck"
mkdir -p bin
(cd hack/tools && go build -o ../../bin/staticcheck honnef.co/go/tools/cmd/staticcheck)
bin/staticcheck ./...
bin/staticcheck -tags e2e ./test/...
echo "verify: OK"
