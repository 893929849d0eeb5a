// Package localenv runs Lifeboat's local environment: one etcd, a control-plane
// kube-apiserver with Lifeboat's CRDs, N member clusters (each a real
// kube-apiserver, kube-controller-manager and kube-scheduler, with kwok
// simulating one node and its pods) and the Lifeboat controller manager; with
// Options.WithKyverno, also Kyverno's admission controller against every
// member, serving the Flink restore ClusterPolicy shipped in examples/flink
// (kyverno.go).
//
// It is what `lifeboat up`, `lifeboat down` and `lifeboat status` drive, and
// what the end-to-end tests run on. Every process it starts is recorded in
// DIR/state.json (PID and start time) as soon as it starts, and is stopped by
// that record, never by name; a start that fails part-way stops what it
// started and removes the state directory.
//
// Once up, the environment runs a supervisor (`lifeboat env supervise`,
// supervisor.go; recorded as the component lifeboat-supervisor) that starts
// every component that exits on its own again, with a back-off (backoff.go),
// as a kubelet restarts a container: a controller manager that lost its
// leader lease, an API server that crashed. Each start and exit is recorded
// in the state like any other. What a person stops (`lifeboat env stop`,
// `env restart`, `lifeboat down`) is marked stopped in the state before it
// is signalled, and the supervisor only decides and starts under the same
// state lock, so it never undoes a deliberate stop.
package localenv
