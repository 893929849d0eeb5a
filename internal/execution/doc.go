// Package execution applies Works to member clusters: for each Work in a
// karmada-es-<cluster> namespace it server-side applies every manifest to the
// member (field manager "lifeboat", forced), creating a missing namespace
// first, corrects drift when a managed member object changes or disappears,
// and deletes (or releases) the member objects when the Work is deleted,
// also while its Cluster is being deleted (unjoined) with its member Ready;
// the objects of an unjoined member that is not Ready are left there (see
// package orphans for what removes them later).
//
// Member objects are marked karmada.io/managed=true and point back to their
// Work (annotations work.karmada.io/namespace and work.karmada.io/name, label
// work.karmada.io/permanent-id), and say which generation of the Work they
// were applied from (annotations work.lifeboat.dev/generation and
// work.lifeboat.dev/uid, the Work's UID). An existing object without the managed label
// is never overwritten unless the manifest (or the Work) carries
// work.karmada.io/conflict-resolution: overwrite.
//
// Why server-side apply: the member API server merges our fields with those
// of the member's own controllers (HPA replicas, defaulted fields), removes
// fields dropped from the manifest because our field manager owned them,
// needs no resourceVersion (no update conflicts to retry), and a no-op apply
// writes nothing, so it causes no event and no loop. The object is still
// observed first (from the member informer when managed), for the conflict
// rule, for Interpreter.Retain and to skip applies that would change nothing.
//
// Fields written:
//   - Work metadata.finalizers: karmada.io/execution-controller (added, and
//     removed once the member objects are gone);
//   - Work status.conditions: Applied (AppliedSuccessful, AppliedFailed,
//     ResourceConflict, ClusterUnreachable, ClusterNotFound), Dispatching
//     (Dispatching, SuspendDispatching) and, while a deleted Work waits for
//     its member, Cleanup (CleanupPending). When this pass created objects
//     in the member and all went well, the conditions are handed to the
//     work status controller's first report of those objects (one status
//     write of the Work instead of two; see Reconciler.Handoff), and written
//     here if that report does not come within the wait;
//   - member objects: the manifests, plus the labels and annotations above;
//     namespaces created in members (labelled karmada.io/managed=true and
//     annotated lifeboat.dev/created-namespace=true, the mark that lets
//     package orphans remove them once nothing is left in them). An object
//     whose namespace is terminating is applied again after
//     NamespaceTerminatingRetry, once the namespace is gone.
//   - a deleted Work's member objects are deleted (released with
//     preserveResourcesOnDeletion), except a Namespace or
//     CustomResourceDefinition whose deletion would take another Work's
//     objects with it (one in the namespace, or of the kind), another Work of
//     the same cluster that is not being deleted itself (Cascade): the
//     Namespace is handed to the namespace rule (HandOffPatch: the Work's
//     marks removed, lifeboat.dev/created-namespace=true), the
//     CustomResourceDefinition released (ReleasePatch). Nothing is deleted
//     when the Work's binding still wants a Work in the cluster
//     (Reconciler.StillWanted: deleted by hand, or just before the binding
//     placed the cluster again): the Work made again adopts the objects.
//     The agent of a Pull cluster may not read bindings: it deletes nothing
//     until the control plane's reconciler has let it
//     (MemberObjectsAnnotation), or released a Work still wanted itself
//     (Reconciler.judge).
//
// Events on Works: SyncWorkloadSucceed, SyncWorkloadFailed (on transitions of
// Applied) and CleanupFailed.
package execution
