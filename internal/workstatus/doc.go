// Package workstatus records what became of each Work in its member
// cluster: on events of the member objects (through the member cluster
// cache's informers, so no member request per reconcile) it reflects each
// object's status and interprets its health with the Interpreter.
//
// Fields written: Work status.manifestStatuses, one entry per manifest
// whose object the member holds: {identifier {ordinal, group, version, kind,
// namespace, name}, status (Interpreter.ReflectStatus), health
// (Interpreter.InterpretHealth; Unknown when the rule fails),
// observedGeneration (the Work generation the object was applied from, its
// work.lifeboat.dev/generation annotation)}. It is written
// only when it changed. An object applied from an earlier Work of the same
// name (its work.lifeboat.dev/uid annotation names another Work) is not
// reported for this one. An object missing from its member is not reported
// (its last entry stays) and its Work is handed back to the execution
// controller, which recreates it. A write also carries the execution
// controller's status.conditions when that controller offered them for
// objects it has just created (Reconciler.Handoff): the first report of a
// new object says "applied" and its health in one write.
//
// Events on Works: ReflectStatusFailed, InterpretHealthFailed.
package workstatus
