#!/usr/bin/env bash
# Passes `go test -v` output through and ends with one summary line of the
# top-level tests: "e2e: N passed, N failed, N skipped". Exits non-zero when
# any test failed or the run did not finish with "ok".
set -uo pipefail
passed=0 failed=0 skipped=0 ok=0
while IFS= read -r line; do
  printf '%s\n' "$line"
  case "$line" in
    "--- PASS: "*) passed=$((passed + 1)) ;;
    "--- FAIL: "*) failed=$((failed + 1)) ;;
    "--- SKIP: "*) skipped=$((skipped + 1)) ;;
    ok\ *) ok=1 ;;
    FAIL*) ok=0 ;;
  esac
done
echo "e2e: ${passed} passed, ${failed} failed, ${skipped} skipped"
[[ $failed -eq 0 && $ok -eq 1 ]]
