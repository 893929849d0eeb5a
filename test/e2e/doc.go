// Package e2e holds Lifeboat's end-to-end tests. They run (with the build tag
// "e2e") against one shared local environment started by TestMain with
// `lifeboat up`, or against a running one named by $LIFEBOAT_E2E_STATE_DIR.
// Each scenario works in namespaces of its own and runs in parallel.
package e2e
